import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY_1, DAY_2, type ExportWorld, buildExportWorld, runExport } from '../export/export-world.ts';
import { type OtlpReceiver, startOtlpReceiver } from '../export/receiver.ts';

// The attack (or a careless operator): the same OTLP endpoint given to `npm run export` spelt two
// ways, `http://127.0.0.1:4318` one day and `http://127.0.0.1:4318/#` or `…/?` the next. Neither a
// fragment nor an empty query reaches the receiver, yet the local record of what the endpoint
// holds was kept per spelling, so the second export found no record and sent every span again.

const day1 = ['--from', DAY_1, '--to', DAY_2];

let w: ExportWorld;
let receiver: OtlpReceiver;

beforeAll(async () => {
  w = await buildExportWorld();
  receiver = await startOtlpReceiver();
}, 120_000);

afterAll(async () => {
  await receiver.close();
  await w.world.close();
  rmSync(w.dir, { recursive: true, force: true });
});

describe('one OTLP endpoint spelt two ways', () => {
  it('takes each receipt once', async () => {
    const first = await runExport(w.dir, ['--format', 'otlp', ...day1, '--endpoint', receiver.url]);
    expect(first.code).toBe(0);
    const sent = receiver.spans().length;
    expect(sent).toBeGreaterThan(0);
    for (const spelling of [`${receiver.url}/#`, `${receiver.url}#audit`, `${receiver.url}/?`]) {
      const again = await runExport(w.dir, ['--format', 'otlp', ...day1, '--endpoint', spelling]);
      expect([spelling, again.code, again.stderr]).toEqual([spelling, 0, expect.stringContaining(' 0 records written')]);
    }
    expect(receiver.spans().length).toBe(sent);
  }, 120_000);
});
