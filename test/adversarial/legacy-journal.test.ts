import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Entry } from '../../shared/entries.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// Adversarial review: a journal written by the code of c6d3bcf (before today's changes), loaded by
// today's code. `fixtures/c6d3bcf-journal.jsonl` is the entries table of a journal that c6d3bcf's
// own server wrote (its buildApp, createServices and sandbox, driven over HTTP: a routine refund,
// queued, approved, rejected, stale-then-repaired, disputed, SLA-moved and in-flight requests),
// each body exactly as stored. `fixtures/c6d3bcf-requests.json` are the bodies the agent posted.
//
// c6d3bcf's agents' route bound a request as `reason: body.reason ?? ''`: a request sent WITHOUT a
// reason was recorded with `"reason": ""`. Today's code says a missing reason is not `""` and
// compares the re-sent payload with the recorded one, so the very same bytes the agent sent before
// the upgrade are now answered 409 conflicting_payload ("already made with another reason").
// An agent retrying its queued or in-flight request after an upgrade is told its request id was
// used for another refund, and the 409 tells it "a different refund needs a new request_id".

const here = import.meta.dirname;
const entries: Entry[] = readFileSync(join(here, 'fixtures/c6d3bcf-journal.jsonl'), 'utf8')
  .split('\n')
  .filter((line) => line.length > 0)
  .map((line) => JSON.parse(line) as Entry);
const requests: { body: { request_id: string; reason?: string }; status: string }[] = JSON.parse(
  readFileSync(join(here, 'fixtures/c6d3bcf-requests.json'), 'utf8'),
);

let world: AppWorld;
beforeAll(async () => {
  world = await buildAppWorld();
  // Stored as an import would store them: through a store of its own on the same file.
  await world.services.storage.journal({ wallClockMs: () => world.clock.wallMs() }).appendSealed(entries);
});
afterAll(async () => world.close());

describe('a journal written by c6d3bcf, loaded by today’s code', () => {
  it('loads: every entry reads back through the shape checks and the views are available', async () => {
    const read = (await world.services.journal.scan(0, 10_000)).map((s) => s.entry);
    expect(read).toHaveLength(entries.length);
    await world.services.views.current();
    expect(world.services.views.unavailable).toBeFalsy();
  });

  it('an identical re-send of a request made before the upgrade answers its current status, never 409', async () => {
    const before = await world.entryCount();
    const answers: Record<string, [number, string]> = {};
    const expected: Record<string, [number, string]> = {};
    for (const { body } of requests) {
      const now = await world.agent('GET', `/v1/refunds/${body.request_id}`);
      expected[body.request_id] = [now.statusCode, now.json().status];
      const again = await world.agent('POST', '/v1/refunds', body);
      const status = again.json().status;
      // A re-send of a committed refund answers DUPLICATE_IGNORED where GET answers COMMITTED.
      answers[body.request_id] = [again.statusCode, status === 'DUPLICATE_IGNORED' ? now.json().status : status];
    }
    expect(await world.entryCount()).toBe(before);
    // Today: old-policy, old-queued, old-approved, old-stale, old-disputed, old-sla and
    // old-in-flight (all sent with no reason) answer [409, "REFUSED:conflicting_payload"].
    expect(answers).toEqual(expected);
  });
});
