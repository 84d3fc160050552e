import { defineConfig } from '@playwright/test';

/**
 * The browser journeys (e2e/): one Interlock server with the embedded Stripe sandbox, a fresh
 * data folder per run and a test-mode config (the application clock can be moved), driven by
 * Debian's Chromium. `vite build` must run first (`npm run e2e` does).
 */
const PORT = Number(process.env.E2E_PORT ?? 4173);
const SANDBOX_PORT = Number(process.env.E2E_SANDBOX_PORT ?? 4174);
const baseURL = `http://127.0.0.1:${PORT}`;
/** Under test-results/ (git-ignored); the server command deletes it first, so every run starts empty. A run on another port has its own. */
const DATA_DIR = process.env.E2E_PORT === undefined ? 'test-results/e2e-data' : `test-results/e2e-data-${PORT}`;

// `npm test` runs `playwright test --reporter=list,json` and reads the JSON from this file.
process.env.PLAYWRIGHT_JSON_OUTPUT_FILE ??= 'test-results/e2e.json';
// The signing secret of the webhook e2e/interlock.e2e.yaml gives ana (E2E only, at least 16
// characters). In process.env as well as the webServer's env: restart.spec.ts starts its own
// server with the same config from this process's environment.
process.env.E2E_HOOK_SECRET ??= 'e2e-hook-secret-not-for-production';
const HOOK_SECRET = process.env.E2E_HOOK_SECRET;

export default defineConfig({
  testDir: './e2e',
  // A folder of its own: Playwright empties its output folder, and test-results/ also holds
  // vitest's JSON, the screenshots and the data folder.
  outputDir: './test-results/e2e-artifacts',
  workers: 1,
  fullyParallel: false,
  retries: 0,
  // Generous for a loaded 2-core CI machine; a passing run does not wait for them.
  timeout: 60_000,
  expect: { timeout: 10_000 },
  forbidOnly: !!process.env.CI,
  reporter: [['list']],
  use: {
    baseURL,
    browserName: 'chromium',
    headless: true,
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--disable-dev-shm-usage',
      ],
    },
    trace: 'retain-on-failure',
    screenshot: 'only-on-failure',
  },
  webServer: {
    command: `rm -rf ${DATA_DIR} && node --import tsx server/main.ts`,
    url: `${baseURL}/readyz`,
    env: {
      PORT: String(PORT),
      HOST: '127.0.0.1',
      DATA_DIR,
      INTERLOCK_CONFIG: 'e2e/interlock.e2e.yaml',
      SANDBOX_PORT: String(SANDBOX_PORT),
      SANDBOX_DEMO: '0',
      LOG_LEVEL: 'warn',
      E2E_HOOK_SECRET: HOOK_SECRET,
    },
    reuseExistingServer: !process.env.CI,
    timeout: 60_000,
    stdout: 'ignore',
    stderr: 'pipe',
  },
});
