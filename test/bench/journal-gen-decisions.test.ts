import { afterEach, describe, expect, it } from 'vitest';
import { sealNext } from '../../db/journal-rules.ts';
import { openStorage } from '../../db/sqlite-storage.ts';
import type { Storage } from '../../db/port/storage.ts';
import type { Entry } from '../../shared/entries.ts';
import type { JsonObject } from '../../shared/json.ts';
import { generateJournal, type Templates } from '../../bench/journal-gen.ts';
import { Views } from '../../server/views/views.ts';
import { cleanUpDatabases, fields, tempDbFile } from '../support/db-journals.ts';
import { escalated } from '../support/outbox-world.ts';

// The bench's generated journal turns down the oldest waiting items past its bound with a copy of
// a rejected template's decision. A decision a server writes (server/inbox/inbox.ts `record`) is
// made after the escalation it answers (its `at_ms` on the application clock), in that
// escalation's group, by one of its members. The templates come from one run: the item left
// waiting there was escalated to another group, later than the rejected one was decided.

const stores: Storage[] = [];
afterEach(async () => {
  for (const storage of stores.splice(0)) await storage.close();
  cleanUpDatabases();
});

const HOUR = 3_600_000;
const T0 = 1_700_000_000_000;

function chain(id: string, steps: Array<[Entry['kind'], JsonObject]>): Entry[] {
  const effectId = `t-${id}`;
  const out: Entry[] = [sealNext('PROPOSED', effectId, fields('PROPOSED', { agent: 'inbox', request: { id, agent: 'support-bot', amount: 9_000 } }) as unknown as JsonObject, undefined, T0)];
  for (const [kind, extra] of steps) {
    const linked = kind === 'DECIDED' ? { ...extra, escalation: out.at(-1)!.hash } : extra;
    out.push(sealNext(kind, effectId, fields(kind, linked) as unknown as JsonObject, out.at(-1), (linked.at_ms as number) ?? T0));
  }
  return out;
}

// Rejected early in the run by ana of ap-leads, within ten minutes of its escalation.
const rejected = chain('rejected', [
  ['ESCALATED', escalated(T0, { group: 'ap-leads', routed_to: ['ana', 'bea'] }) as unknown as JsonObject],
  ['DECIDED', { at_ms: T0 + 600_000, by: 'ana', decision: 'reject', group: 'ap-leads', members: ['ana', 'bea'], repair: null, reason: 'duplicate' }],
]);
// Escalated two hours later, to cy of ap-clerks, and left waiting.
const open = chain('open', [['ESCALATED', escalated(T0 + 2 * HOUR, { group: 'ap-clerks', routed_to: ['cy'] }) as unknown as JsonObject]]);
const templates: Templates = { routine: [chain('routine', [])], approved: [], rejected: [rejected], open: [open] };

describe("the generated journal's decisions", () => {
  it('answer each turned-down item after its escalation, in its group, by one it was routed to', async () => {
    const file = tempDbFile();
    await generateJournal(file, templates, 400, 0, 0);
    const storage = await openStorage({ file });
    stores.push(storage);
    const journal = storage.journal({ wallClockMs: () => Date.now() });
    const chains = new Map<string, Entry[]>();
    for (const { entry } of await journal.scan(0, 1_000_000)) chains.set(entry.effect_id, [...(chains.get(entry.effect_id) ?? []), entry]);
    const turnedDown = [...chains.values()].filter((c) => c[1]?.kind === 'ESCALATED' && c[1].group === 'ap-clerks' && c.at(-1)!.kind === 'DECIDED');
    expect(turnedDown.length).toBeGreaterThan(10);

    // What a server folds of them: the scoreboard's time to decision is never negative.
    const views = new Views({ journal, inboxName: 'inbox', nowMs: () => T0 + 3 * HOUR, log: { fatal: () => {}, error: () => {} }, derived: storage.derived });
    expect(await views.replayAtStart()).toBeNull();
    const board = await (await views.current()).scoreboard.board();
    expect(board.time_to_decision.median_ms).toBeGreaterThanOrEqual(0);

    const seen = turnedDown.map((c) => {
      const [escalation, decision] = [c[1]!, c.at(-1)!];
      if (escalation.kind !== 'ESCALATED' || decision.kind !== 'DECIDED') throw new Error('not an escalation and its decision');
      return { after: decision.at_ms >= escalation.at_ms, group: decision.group, byRoutedTo: escalation.routed_to.includes(decision.by) };
    });
    expect(seen).toEqual(turnedDown.map(() => ({ after: true, group: 'ap-clerks', byRoutedTo: true })));
  });
});
