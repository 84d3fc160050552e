import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

let world: AppWorld;
let dist: string;
beforeAll(async () => {
  dist = mkdtempSync(join(tmpdir(), 'interlock-web-'));
  mkdirSync(join(dist, 'assets'), { recursive: true });
  writeFileSync(join(dist, 'index.html'), '<!doctype html><title>Interlock</title><div id="root"></div>');
  writeFileSync(join(dist, 'assets', 'app.js'), 'console.log(1)');
  world = await buildAppWorld({ webDist: dist });
});
afterAll(async () => {
  await world.close();
  rmSync(dist, { recursive: true, force: true });
});

describe('serving the web inbox', () => {
  it('serves the built pages, falls back to index.html for app routes, and answers 404 JSON for unknown API routes', async () => {
    const page = await world.app.inject({ method: 'GET', url: '/items/abc' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(page.headers['content-security-policy']).toMatch(/default-src 'self'/);
    expect((await world.app.inject({ method: 'GET', url: '/assets/app.js' })).statusCode).toBe(200);
    const api = await world.app.inject({ method: 'GET', url: '/api/nope' });
    expect([api.statusCode, api.json().error.code]).toEqual([404, 'not_found']);
    expect((await world.app.inject({ method: 'POST', url: '/anything' })).json().error.code).toBe('not_found');
    // A 304 for a page has no content type; it must still carry the page's policy, or the cached page breaks.
    const etag = String(page.headers.etag ?? (await world.app.inject({ method: 'GET', url: '/' })).headers.etag);
    const notModified = await world.app.inject({ method: 'GET', url: '/', headers: { 'if-none-match': etag } });
    expect(notModified.statusCode).toBe(304);
    expect(notModified.headers['content-security-policy']).toMatch(/script-src 'self'/);
    expect((await world.app.inject({ method: 'GET', url: '/api/nope' })).headers['content-security-policy']).toBe("default-src 'none'; frame-ancestors 'none'");
  });

  it('reads a percent-escaped API path as the path it spells: a JSON 404, never the page, and never kept by a cache', async () => {
    for (const url of ['/%61pi/nope', '/%76%31/nope', '/.well-known/%6eope']) {
      const unknown = await world.app.inject({ method: 'GET', url });
      expect([unknown.statusCode, unknown.headers['content-type']], url).toEqual([404, 'application/json; charset=utf-8']);
    }
    // The router answers /%61pi/session as /api/session: an API answer, with the API's headers.
    const session = await world.app.inject({ method: 'GET', url: '/%61pi/session' });
    expect(session.json().error.code).toBe('unauthorized');
    expect(session.headers['cache-control']).toBe('no-store');
    expect(session.headers['content-security-policy']).toBe("default-src 'none'; frame-ancestors 'none'");
  });
});
