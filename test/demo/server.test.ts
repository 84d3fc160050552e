import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG_PATH } from '../../server/config/load.ts';
import { demoTrafficRuns } from '../../server/demo/status.ts';
import { EnvError, parseEnv } from '../../server/config/env.ts';
import { startInterlock } from '../../server/app/runtime.ts';
import { clientFor, freePort, runServerToExit, type ServerProcess, startServerProcess, withOwnSecrets, writeTestConfig } from '../support/server-process.ts';

// How `npm start` switches demo traffic on and off, in process and as a real server process.

const dirs: string[] = [];
const servers: ServerProcess[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.child.kill('SIGTERM');
    await server.exited;
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-demo-start-'));
  dirs.push(dir);
  return dir;
}

/** interlock.yaml with Stripe test mode instead of the sandbox, and secrets of its own (the published ones are refused there). */
function stripeTestModeConfig(dir: string): string {
  const path = join(dir, 'interlock.stripe-test.yaml');
  writeFileSync(path, withOwnSecrets(readFileSync(DEFAULT_CONFIG_PATH, 'utf8')).replace(/^stripe: \{ mode: sandbox \}$/m, 'stripe: { mode: test }'));
  return path;
}

/** Start in process on free ports; whether demo traffic runs, then stop. */
async function demoRunsWith(env: Record<string, string>): Promise<boolean> {
  const dir = dataDir();
  const running = await startInterlock(parseEnv({ PORT: '0', SANDBOX_PORT: '0', DATA_DIR: dir, LOG_LEVEL: 'silent', ...env }));
  try {
    return demoTrafficRuns(running.services);
  } finally {
    await running.close();
    expect(demoTrafficRuns(running.services)).toBe(false);
  }
}

describe('demo traffic at start', () => {
  it('runs under npm start on the embedded sandbox, and is off with INTERLOCK_DEMO=0, SANDBOX_DEMO=0 or test_mode: true', async () => {
    expect(await demoRunsWith({})).toBe(true);
    expect(await demoRunsWith({ INTERLOCK_DEMO: '1' })).toBe(true);
    expect(await demoRunsWith({ INTERLOCK_DEMO: '0' })).toBe(false);
    expect(await demoRunsWith({ SANDBOX_DEMO: '0' })).toBe(false);
    expect(await demoRunsWith({ INTERLOCK_CONFIG: writeTestConfig(dataDir()) })).toBe(false);
  });

  it('INTERLOCK_DEMO=1 with Stripe test mode is refused in process, before anything is opened', async () => {
    const dir = dataDir();
    const env = parseEnv({ DATA_DIR: join(dir, 'data'), INTERLOCK_DEMO: '1', INTERLOCK_CONFIG: stripeTestModeConfig(dir), STRIPE_SECRET_KEY: 'sk_test_demo', STRIPE_WEBHOOK_SECRETS: 'whsec_demo' });
    await expect(startInterlock(env)).rejects.toThrow(EnvError);
    await expect(startInterlock(env)).rejects.toThrow(/^INTERLOCK_DEMO=1 asks for demo traffic/);
  });

  it('main.ts refuses INTERLOCK_DEMO=1 with Stripe test mode by name and exits 2, as for any bad variable', async () => {
    const dir = dataDir();
    const { exit, stderr } = await runServerToExit({
      DATA_DIR: join(dir, 'data'),
      PORT: String(await freePort()),
      SANDBOX_DEMO: '1',
      INTERLOCK_DEMO: '1',
      INTERLOCK_CONFIG: stripeTestModeConfig(dir),
      STRIPE_SECRET_KEY: 'sk_test_demo',
      STRIPE_WEBHOOK_SECRETS: 'whsec_demo',
    });
    expect(exit).toBe('2');
    expect(stderr.trim()).toBe(
      'Interlock did not start: INTERLOCK_DEMO=1 asks for demo traffic, which needs the embedded Stripe sandbox, but the config says stripe.mode: test; set INTERLOCK_DEMO=0 (or leave it unset)',
    );
  }, 30_000);

  it('a real server on a new data folder puts the demo agent’s first request in ana’s inbox within seconds, and says so in the session', async () => {
    const server = await startServerProcess({ PORT: String(await freePort()), SANDBOX_PORT: String(await freePort()), DATA_DIR: dataDir(), SANDBOX_DEMO: '1' });
    servers.push(server);
    const readyAtMs = Date.now();
    const client = clientFor(server.url);
    expect((await client.as('ana', 'GET', '/api/session')).body).toMatchObject({ sandbox: true, demo: true });
    let items: Array<{ request: { id: string; agent: string; amount: number } }> = [];
    while (items.length === 0 && Date.now() - readyAtMs < 10_000) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      items = ((await client.as('ana', 'GET', '/api/inbox')).body.items ?? []) as typeof items;
    }
    expect(items).toMatchObject([{ request: { id: 'demo-1', agent: 'demo' } }]);
    expect(items[0]!.request.amount).toBeGreaterThan(5_000);
    // The first request is due 1 to 3 s after start; it went into the inbox well within the wait.
    expect(Date.now() - readyAtMs).toBeLessThan(10_000);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe('0');
    servers.splice(0);
  }, 40_000);
});
