import { defineConfig } from '@playwright/test';
import { WORKER_INDEX, WORKERS, workerPorts } from './e2e/ports.ts';

/**
 * The browser journeys (e2e/), driven by Debian's Chromium. Each worker has its own Interlock
 * server with the embedded Stripe sandbox, a fresh data folder per run and a test-mode config (the
 * application clock can be moved), on the ports e2e/ports.ts gives it. `vite build` must run first
 * (`npm run e2e` does).
 *
 * One worker by default: on 2 cores two workers took 10.2 min for the 54 journeys against 9.6 to
 * 10.4 min for one, each journey about twice as slow beside the other. E2E_WORKERS=2 (or more, on
 * a machine with the cores) runs that many, each against its own server.
 *
 * Once the servers are up, e2e/global-setup.ts logs every person in once per server and saves
 * their cookies (Playwright's storage state); the journeys' logIn and personPage reuse them.
 */
const baseURL = `http://127.0.0.1:${workerPorts(WORKER_INDEX).port}`;

// `npm test` runs `playwright test --reporter=list,json` and reads the JSON from this file.
process.env.PLAYWRIGHT_JSON_OUTPUT_FILE ??= 'test-results/e2e.json';
// The signing secret of the webhook e2e/interlock.e2e.yaml gives ana (E2E only, at least 16
// characters). In process.env as well as the webServer's env: restart.spec.ts starts its own
// server with the same config from this process's environment.
process.env.E2E_HOOK_SECRET ??= 'e2e-hook-secret-not-for-production';
const HOOK_SECRET = process.env.E2E_HOOK_SECRET;

export default defineConfig({
  testDir: './e2e',
  globalSetup: './e2e/global-setup.ts',
  // A folder of its own: Playwright empties its output folder, and test-results/ also holds
  // vitest's JSON, the screenshots and the data folder.
  outputDir: './test-results/e2e-artifacts',
  workers: WORKERS,
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
  webServer: Array.from({ length: WORKERS }, (_, index) => {
    const { port, sandboxPort } = workerPorts(index);
    // Under test-results/ (git-ignored); the command deletes it first, so every run starts empty.
    const dataDir = `test-results/e2e-data-${port}`;
    return {
      command: `rm -rf ${dataDir} && node --import tsx server/main.ts`,
      url: `http://127.0.0.1:${port}/readyz`,
      env: {
        PORT: String(port),
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
        INTERLOCK_CONFIG: 'e2e/interlock.e2e.yaml',
        SANDBOX_PORT: String(sandboxPort),
        SANDBOX_DEMO: '0',
        LOG_LEVEL: 'warn',
        E2E_HOOK_SECRET: HOOK_SECRET,
      },
      reuseExistingServer: !process.env.CI,
      timeout: 60_000,
      stdout: 'ignore' as const,
      stderr: 'pipe' as const,
    };
  }),
});
