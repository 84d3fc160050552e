import { rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OtlpRequest } from '../../server/export/otlp.ts';
import { DAY_1, DAY_2, type ExportWorld, buildExportWorld, runExport } from '../export/export-world.ts';

// The attack (or a cron job that overran): two `npm run export` to one OTLP endpoint at once.
// Each read the local record of what the endpoint holds before either had sent anything, so both
// sent every span of the period: the receiver took each receipt twice. A destination takes one
// export at a time; the second is told another is running and exits 1, sending nothing.

const day1 = ['--from', DAY_1, '--to', DAY_2];

let w: ExportWorld;
let server: Server;
let url: string;
const received: string[] = [];

beforeAll(async () => {
  w = await buildExportWorld();
  // A receiver that takes two seconds to answer: two exports started together are both under way.
  server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => {
      body += chunk;
    });
    request.on('end', () => {
      setTimeout(() => {
        const spans = (JSON.parse(body) as OtlpRequest).resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans));
        received.push(...spans.map((span) => span.spanId));
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      }, 2_000);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 120_000);

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await w.world.close();
  rmSync(w.dir, { recursive: true, force: true });
});

describe('two exports to one destination at once', () => {
  it('an OTLP endpoint takes each receipt once: the second export exits 1 and sends nothing; after the first, another sends nothing new', async () => {
    const runs = await Promise.all([runExport(w.dir, ['--format', 'otlp', ...day1, '--endpoint', url]), runExport(w.dir, ['--format', 'otlp', ...day1, '--endpoint', url])]);
    expect(received.length).toBeGreaterThan(0);
    expect(new Set(received).size).toBe(received.length);
    expect(runs.map((run) => run.code).sort()).toEqual([0, 1]);
    const busy = runs.find((run) => run.code === 1)!;
    expect(busy.stderr).toContain('another export to this destination is running');
    const again = await runExport(w.dir, ['--format', 'otlp', ...day1, '--endpoint', url]);
    expect([again.code, again.stderr]).toEqual([0, expect.stringContaining('0 records written')]);
    expect(new Set(received).size).toBe(received.length);
  }, 120_000);
});
