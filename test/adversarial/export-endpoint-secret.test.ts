import { rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY_1, DAY_2, type ExportWorld, buildExportWorld, runExport } from '../export/export-world.ts';

// The attack on what an export prints: an OTLP receiver that takes its key in the URL's query
// (`--endpoint 'https://collector.example/?api_key=…'`). Every failure message named the endpoint
// by origin and path only, but the summary of a successful export printed the whole URL, key and
// all, to standard error, which a cron job mails and a CI log keeps. And an endpoint refused for
// holding credentials (`https://user:password@…`) was refused by quoting it, password and all.

const SECRET = 'k3y-0f-the-c0llect0r';

let w: ExportWorld;
let server: Server;
let url: string;
const paths: string[] = [];

beforeAll(async () => {
  w = await buildExportWorld();
  server = createServer((request, response) => {
    paths.push(request.url ?? '');
    request.resume();
    request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 120_000);

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await w.world.close();
  rmSync(w.dir, { recursive: true, force: true });
});

describe('an OTLP endpoint with a key in its query', () => {
  it('is sent the key, and no output of the export prints it', async () => {
    const run = await runExport(w.dir, ['--format', 'otlp', '--from', DAY_1, '--to', DAY_2, '--endpoint', `${url}/?api_key=${SECRET}`]);
    expect(run.code).toBe(0);
    expect(paths.length).toBeGreaterThan(0);
    expect(paths.every((path) => path === `/v1/traces?api_key=${SECRET}`)).toBe(true);
    expect(run.stderr).toContain(`${url}/v1/traces`);
    expect(run.stderr).not.toContain(SECRET);
    expect(run.stdout).not.toContain(SECRET);
  }, 120_000);

  it('an endpoint with credentials is refused without quoting them', async () => {
    const run = await runExport(w.dir, ['--format', 'otlp', '--from', DAY_1, '--to', DAY_2, '--endpoint', `http://audit:${SECRET}@127.0.0.1:9/`]);
    expect(run.code).toBe(64);
    expect(run.stderr).toContain('no credentials in it');
    expect(run.stderr).not.toContain(SECRET);
  }, 120_000);
});
