import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';
import type { DerivedTables } from '../../db/port/derived.ts';
import type { Storage } from '../../db/port/storage.ts';
import { openStorage } from '../../db/sqlite-storage.ts';
import type { Entry } from '../../shared/entries.ts';
import { isJsonObject } from '../../shared/json.ts';
import type { JournalStore } from '../../server/journal/store.ts';
import { itemFigures } from '../../server/metrics/figures.ts';
import { Views } from '../../server/views/views.ts';
import { buildChain, type Step } from '../support/entries.ts';
import { buildInboxWorld, type InboxWorld, staleRequest } from '../support/inbox-world.ts';

// What the inbox keeps in memory after a start: open work alone. A chain refused for good before a
// send (Stripe knows no such payment) and one closed by a repair whose child request began are
// finished; an AMBIGUOUS one waits for a person to settle it, and stays. A start over a SQLite file
// of many of each holds the ambiguous ones only, and answers every list, item and figure as the
// server that wrote the file did, and as tables rebuilt from the journal do.

const dir = mkdtempSync(join(tmpdir(), 'interlock-inbox-open-work-'));
const opened: Storage[] = [];
afterAll(async () => {
  for (const storage of opened) await storage.close();
  rmSync(dir, { recursive: true, force: true });
});

const quiet = { fatal: () => {}, error: () => {} };
const GROUPS = new Set(['ap-leads', 'controller', 'finance-manager', 'payments-ops', 'risk']);
const REPAIRS = 12;
const REFUSED = 40;
const AMBIGUOUS = 5;

/** A request of 80 over an order of 100, approved after 30 went back by hand: stale, shown again with a repair, and repaired by `ana`. */
async function repaired(world: InboxWorld): Promise<string> {
  const previous = world.target.onTouch;
  const r = staleRequest(world, 80, 30);
  expect(await world.inbox.submit(r)).toBe('QUEUED');
  const id = world.effectIdOf(r);
  expect(await world.inbox.approve(id, 'ana')).toBe('REFUSED:stale_premise');
  expect(await world.inbox.repair(id, 'ana', 0)).toBe('COMMITTED');
  world.target.onTouch = previous;
  return id;
}

const request = (n: number, kind: string) => ({ id: `${kind}-${n}`, agent: 'bot', payment_intent: `pi_${kind}_${n}`, amount: 2_000, flags: [], reason: 'cracked jar' });

/** A request that waited its turn for Stripe and was refused for good: Stripe knows no such payment. */
function refusedForGood(n: number): Entry[] {
  const steps: Step[] = [
    ['PROPOSED', { agent: 'inbox', lease: null, premises: null, effect: { payment_intent: `pi_refused_${n}`, amount: 2_000 }, request: request(n, 'refused'), at_ms: 5_000 + n }],
    ['REFUSED', { code: 'payment_missing', reason: 'Stripe knows no such payment' }],
  ];
  return buildChain(`ac${n.toString(16).padStart(10, '0')}`, steps, { startMs: 1_700_000_000_000 + n * 1_000 });
}

/** A request the policy cleared whose send came back in doubt. */
function ambiguous(n: number): Entry[] {
  const lease = { by: 'policy', rules: ['amount at most $50.00'] };
  const premises = { currency: 'usd', amount_paid: 10_000 };
  const effect = { payment_intent: `pi_ambiguous_${n}`, amount: 2_000 };
  const steps: Step[] = [
    ['PROPOSED', { agent: 'inbox', lease, premises, effect, request: request(n, 'ambiguous'), at_ms: 9_000 + n }],
    ['DISPATCHED', { effect, lease, premises, checks: { lease: null, lease_live: true, violations: [] }, reserves: effect.payment_intent }],
    ['AMBIGUOUS', { code: 'ambiguous', reason: 'the connection dropped before Stripe answered' }],
  ];
  return buildChain(`ad${n.toString(16).padStart(10, '0')}`, steps, { startMs: 1_700_000_100_000 + n * 1_000 });
}

async function viewsOn(journal: JournalStore, derived: DerivedTables): Promise<Views> {
  const views = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log: quiet, derived });
  expect(await views.replayAtStart()).toBeNull();
  return views;
}

/** Every page and figure the inbox answers: each chain's summary, the lists, the queue, the sends to look up, the figures. */
async function answers(views: Views, ids: readonly string[]) {
  const { inbox } = await views.current();
  return JSON.stringify({
    summaries: await Promise.all(ids.map(async (id) => await inbox.summary(id))),
    done: await inbox.history('done', GROUPS),
    closed: await inbox.history('closed', GROUPS),
    queue: inbox.queue(GROUPS),
    unconfirmed: inbox.unconfirmedSent().sort(),
    owned: await inbox.ownedIds(),
    figures: itemFigures(inbox.chains.values(), (summary) => inbox.owned(summary)),
  });
}

describe('the inbox holds open work alone', () => {
  it('a start holds no chain refused for good nor one whose repair began, and keeps the ambiguous; every answer is unchanged', { timeout: 60_000 }, async () => {
    const file = join(dir, 'open-work.sqlite');
    const storage = await openStorage({ file });
    opened.push(storage);
    const journal = storage.journal({ wallClockMs: () => 1_700_000_000_000 });
    const world = buildInboxWorld({ journal });
    const parents: string[] = [];
    for (let i = 0; i < REPAIRS; i++) parents.push(await repaired(world));
    const inDoubt = Array.from({ length: AMBIGUOUS }, (_, i) => ambiguous(i + 1));
    await journal.appendSealed([...Array.from({ length: REFUSED }, (_, i) => refusedForGood(i + 1)).flat(), ...inDoubt.flat()]);
    const firsts = (await journal.scan(0, 100_000)).flatMap(({ entry }) => (entry.prev === null && entry.kind === 'PROPOSED' ? [entry] : []));
    const ids = firsts.map((entry) => entry.effect_id);
    expect(ids).toHaveLength(2 * REPAIRS + REFUSED + AMBIGUOUS);
    // Open work: the repairs' children (sent, Stripe's word on them not come yet: the reconciler's) and the ambiguous.
    const children = firsts.filter((entry) => isJsonObject(entry.request) && entry.request.repair_of !== undefined).map((entry) => entry.effect_id);
    const open = [...children, ...inDoubt.map((chain) => chain[0]!.effect_id)].sort();
    expect(open).toHaveLength(REPAIRS + AMBIGUOUS);

    const first = await viewsOn(journal, storage.derived);
    const expected = await answers(first, ids);
    const { inbox } = await first.current();
    // The server that wrote them still holds the repaired chains until its sweep finds their children.
    expect(first.inboxHeld).toBe(REPAIRS + open.length);
    // The sweeps' work: the escalations the ambiguous owe a person; nothing for the refused nor the repaired.
    const owed = inDoubt.map((chain) => chain[0]!.effect_id).sort();
    const sweep = first.work((r) => world.inbox.effectIdOf(r));
    expect([...(await sweep.unfinished())].sort()).toEqual(owed);
    await first.current();
    expect(first.inboxHeld).toBe(open.length);
    expect(itemFigures(inbox.chains.values(), (summary) => inbox.owned(summary)).ambiguous).toBe(AMBIGUOUS);

    // A start over the file: the ambiguous chains alone, and the same answers.
    const again = await openStorage({ file });
    opened.push(again);
    const restarted = await viewsOn(again.journal({ wallClockMs: () => 1_700_000_000_000 }), again.derived);
    await restarted.current();
    expect(restarted.inboxHeld).toBe(open.length);
    expect([...(await restarted.current()).inbox.chains.keys()].sort()).toEqual(open);
    expect(await answers(restarted, ids)).toBe(expected);
    expect([...(await restarted.work((r) => world.inbox.effectIdOf(r)).unfinished())].sort()).toEqual(owed);

    // Tables rebuilt from the journal alone answer the same.
    const rebuilt = await viewsOn(again.journal({ wallClockMs: () => 1_700_000_000_000 }), new MemoryDerivedTables());
    expect(await answers(rebuilt, ids)).toBe(expected);
    expect(parents.every((id) => ids.includes(id))).toBe(true);
  });
});
