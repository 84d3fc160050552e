import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppWorld, buildAppWorld, testConfig } from '../support/app-world.ts';

// Test-only routes live in their own plugin (server/http/test-routes.ts), registered only when
// the config says test_mode: true. With it off they do not exist at all, for anyone.

const root = fileURLToPath(new URL('../../', import.meta.url));

describe('test mode on', () => {
  let world: AppWorld;
  beforeAll(async () => {
    world = await buildAppWorld();
  });
  afterAll(async () => world.close());

  it('POST /api/test/clock moves the application clock for a logged-in person', async () => {
    const ana = await world.login('ana');
    const before = world.clock.nowMs();
    const moved = await world.as(ana, 'POST', '/api/test/clock', { advance_ms: 60_000 });
    expect(moved.statusCode).toBe(200);
    expect(moved.json().now_ms).toBeGreaterThanOrEqual(before + 60_000);
    expect(world.clock.offsetMs).toBe(60_000);
  });

  it('needs a session and the CSRF token, like every call that changes something', async () => {
    const anonymous = await world.app.inject({ method: 'POST', url: '/api/test/clock', payload: { advance_ms: 1 } });
    expect([anonymous.statusCode, anonymous.json().error.code]).toEqual([401, 'unauthorized']);
    const ana = await world.login('ana');
    const forged = await world.app.inject({ method: 'POST', url: '/api/test/clock', headers: { cookie: ana.cookie }, payload: { advance_ms: 1 } });
    expect([forged.statusCode, forged.json().error.code]).toEqual([403, 'csrf_failed']);
  });

  it.each([
    [{ advance_ms: 1_000, extra: 1 }, 'extra: unknown field'],
    [{ advance_ms: -1 }, 'advance_ms: a whole number of ms, 0 or more'],
    [{ advance_ms: 1.5 }, 'advance_ms: a whole number of ms, 0 or more'],
    [{}, 'advance_ms: required, a whole number of ms, 0 or more'],
    [[1], 'body: must be a JSON object'],
  ])('refuses %o with 400 validation_failed and leaves the clock alone', async (body, message) => {
    const ana = await world.login('ana');
    const offsetMs = world.clock.offsetMs;
    const refused = await world.as(ana, 'POST', '/api/test/clock', body);
    expect([refused.statusCode, refused.json().error]).toEqual([400, { code: 'validation_failed', message }]);
    expect(world.clock.offsetMs).toBe(offsetMs);
  });
});

describe('test mode off', () => {
  let world: AppWorld;
  beforeAll(async () => {
    world = await buildAppWorld({ config: testConfig({ testMode: false }) });
  });
  afterAll(async () => world.close());

  it('POST /api/test/clock does not exist: 404 not_found, logged in or not, and the clock stays', async () => {
    expect(world.app.hasRoute({ method: 'POST', url: '/api/test/clock' })).toBe(false);
    const ana = await world.login('ana');
    for (const answer of [
      await world.as(ana, 'POST', '/api/test/clock', { advance_ms: 60_000 }),
      await world.app.inject({ method: 'POST', url: '/api/test/clock', payload: { advance_ms: 60_000 } }),
    ]) {
      expect([answer.statusCode, answer.json().error.code]).toEqual([404, 'not_found']);
    }
    expect(world.clock.offsetMs).toBe(0);
  });
});

describe('where test routes live', () => {
  it('no production route file names a /api/test/ path: only the test-mode plugin does', () => {
    const dir = join(root, 'server/http');
    const naming = readdirSync(dir).filter((file) => readFileSync(join(dir, file), 'utf8').includes("'/api/test/"));
    expect(naming).toEqual(['test-routes.ts']);
  });
});
