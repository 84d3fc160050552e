import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { openStorage } from '../../db/sqlite-storage.ts';
import { AppClock } from '../../server/app/clock.ts';
import { buildInterlock, type Interlock } from '../../server/app/interlock.ts';
import { startSandbox } from '../../server/sandbox/index.ts';
import { limits } from '../../shared/limits.ts';
import { testConfig } from '../support/app-world.ts';

// One way to build the app: `buildInterlock(parts)` makes the app, the services and their
// start and stop, for `npm start` (server/app/runtime.ts) and for the tests' world alike.

const root = fileURLToPath(new URL('../../', import.meta.url));
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function build(overrides: { claimTtlMs?: number } = {}): Promise<Interlock> {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-build-'));
  const clock = new AppClock();
  const sandbox = await startSandbox({ clockMs: () => clock.wallMs() });
  const storage = await openStorage({ file: join(dir, 'interlock.sqlite') });
  const interlock = await buildInterlock({
    config: testConfig(),
    clock,
    storage,
    dataDir: dir,
    stripe: sandbox.stripe(),
    sandbox: true,
    webhookSecrets: ['whsec_build'],
    webDist: join(dir, 'no-web'),
    ...overrides,
  });
  cleanups.push(async () => {
    await interlock.close();
    await sandbox.close();
    await storage.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return interlock;
}

function sources(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name);
    return statSync(join(root, path)).isDirectory() ? sources(path) : /\.tsx?$/.test(name) ? [path] : [];
  });
}

describe('buildInterlock', () => {
  it('builds an app that is not ready until start-up recovery has run, then is', async () => {
    const { app, start } = await build();
    const before = await app.inject({ method: 'GET', url: '/readyz' });
    expect([before.statusCode, before.json().error.code]).toEqual([503, 'not_ready']);
    await start();
    expect((await app.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({ ready: true, sandbox: true });
  });

  it('takes the claim TTL as an option of the gate, not as a write to a readonly field', async () => {
    expect((await build()).services.gate.claimTtlMs).toBe(limits.claimTtlMs);
    expect((await build({ claimTtlMs: 300 })).services.gate.claimTtlMs).toBe(300);
    const casts = [...sources('server'), ...sources('test')].filter((file) => /as \{ claimTtlMs/.test(readFileSync(join(root, file), 'utf8')));
    expect(casts).toEqual([]);
  });

  it('is the only place that builds the app: the runtime and the tests world go through it, never by hand', () => {
    const read = (file: string) => readFileSync(join(root, file), 'utf8');
    const appBuilders = [...sources('server'), ...sources('test')].filter((file) => /\bbuildApp\(/.test(read(file)));
    expect(appBuilders.sort()).toEqual(['server/app/interlock.ts', 'server/http/app.ts']);
    const byHand = ['server/app/runtime.ts', ...sources('test/support'), ...sources('test/http')].filter((file) => /\b(createServices|startServices)\(/.test(read(file)));
    expect(byHand).toEqual([]);
    expect(read('server/app/runtime.ts')).toMatch(/buildInterlock\(/);
    expect(read('test/support/app-world.ts')).toMatch(/buildInterlock\(/);
  });
});
