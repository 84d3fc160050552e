import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../db/journal-memory.ts';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';
import type { DerivedBatch } from '../../db/port/derived.ts';
import type { Entry } from '../../shared/entries.ts';
import { tablesVersion } from '../../server/views/version.ts';
import { Views } from '../../server/views/views.ts';
import { refundChain } from '../support/ledger-journal.ts';

// The views' follower writes the derived tables: one batch per page of entries it applied (at
// most 1,000) moving the tables' cursor with it, so the tables are at least where the views are
// when `current()` returns; a batch another process beat is dropped, or applied from where the
// cursor then stands.

const quiet = { fatal: () => {}, error: () => {} };

/** Tables that keep every batch they were asked to take, and whether they took it. */
class RecordingTables extends MemoryDerivedTables {
  readonly batches: Array<{ batch: DerivedBatch; applied: boolean }> = [];
  override async advance(batch: DerivedBatch): Promise<boolean> {
    const applied = await super.advance(batch);
    this.batches.push({ batch: structuredClone(batch), applied });
    return applied;
  }
}

/** A journal holding `refunds` committed refunds (4 entries each), the first `confirmed` of them confirmed (a 5th). */
async function journalOf(refunds: number, confirmed = 0, from = 1): Promise<{ journal: MemoryJournal; chains: Entry[][] }> {
  const journal = new MemoryJournal({ wallClockMs: () => 0 });
  const chains = await appendRefunds(journal, refunds, confirmed, from);
  return { journal, chains };
}

async function appendRefunds(journal: MemoryJournal, refunds: number, confirmed = 0, from = 1): Promise<Entry[][]> {
  const chains = Array.from({ length: refunds }, (_, i) => refundChain(from + i, from + i - 1 < confirmed ? ['succeeded'] : []));
  await journal.appendSealed(chains.flat());
  return chains;
}

const viewsOn = (journal: MemoryJournal, derived: MemoryDerivedTables) => new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log: quiet, derived });

describe('the views write the derived tables', () => {
  it('a batch per page of at most 1,000 entries, each from where the last ended, to the follower’s head', async () => {
    const { journal } = await journalOf(500); // 2,000 entries
    const tables = new RecordingTables();
    const views = viewsOn(journal, tables);
    const { seq } = await views.current();
    expect(seq).toBe(2_000);
    expect(tables.batches.map(({ batch }) => [batch.fromSeq, batch.to.seq])).toEqual([
      [0, 1_000],
      [1_000, 2_000],
    ]);
    expect(tables.batches.every(({ applied }) => applied)).toBe(true);
    expect(tables.batches.at(-1)?.batch.to).toEqual({ seq: 2_000, globalHash: views.head?.globalHash, size: 2_000, version: tablesVersion('inbox') });
    // 250 requests start and end in each page: one row each in the ledger, the inbox, the
    // scoreboard, the outbox's items and its finals (an agent's request made final), the board's
    // totals once, and no row twice in a batch.
    const viewsOf = (changes: readonly { view: string }[]) => [...new Set(changes.map(({ view }) => view))].map((view) => [view, changes.filter((change) => change.view === view).length]);
    expect(tables.batches.map(({ batch }) => viewsOf(batch.changes))).toEqual([
      [['ledger', 250], ['inbox', 250], ['scoreboard', 250], ['scoreboard.totals', 1], ['outbox.items', 250], ['outbox.finals', 250]],
      [['ledger', 250], ['inbox', 250], ['scoreboard', 250], ['scoreboard.totals', 1], ['outbox.items', 250], ['outbox.finals', 250]],
    ]);
    expect(tables.batches.every(({ batch }) => new Set(batch.changes.map((change) => `${change.view} ${change.key}`)).size === batch.changes.length)).toBe(true);
    expect((await tables.digests()).map(({ view, rows }) => [view, rows])).toEqual([['inbox', 500], ['ledger', 500], ['outbox.finals', 500], ['outbox.items', 500], ['scoreboard', 500], ['scoreboard.totals', 1]]);
  });

  it('an entry after is one batch of the one row it changed; a catch-up with nothing new writes nothing', async () => {
    const { journal } = await journalOf(3);
    const tables = new RecordingTables();
    const views = viewsOn(journal, tables);
    await views.current();
    const before = tables.batches.length;
    await views.current();
    expect(tables.batches.length).toBe(before);
    await appendRefunds(journal, 1, 0, 4);
    await views.current();
    const last = tables.batches.at(-1)!.batch;
    expect([last.fromSeq, last.to.seq]).toEqual([12, 16]);
    const id = refundChain(4)[0]!.effect_id;
    expect(last.changes.map((change) => [change.view, change.key])).toEqual([['ledger', id], ['inbox', id], ['scoreboard', id], ['scoreboard.totals', 'board'], ['outbox.items', id], ['outbox.finals', id]]);
  });

  it('the tables’ cursor is never behind what current() answers', async () => {
    const { journal } = await journalOf(1);
    const tables = new MemoryDerivedTables();
    const views = viewsOn(journal, tables);
    for (let n = 2; n <= 6; n++) {
      const { seq } = await views.current();
      expect((await tables.cursor())?.seq).toBe(seq);
      await appendRefunds(journal, n * 30, n, n * 1_000);
    }
  });

  it('two views on one store: a batch the other process wrote first is dropped, and the tables are those one writer builds', async () => {
    const { journal } = await journalOf(100, 40);
    const shared = new RecordingTables();
    const a = viewsOn(journal, shared);
    const b = viewsOn(journal, shared);
    await a.current();
    await b.current();
    expect(shared.batches.map(({ batch, applied }) => [batch.fromSeq, batch.to.seq, applied])).toEqual([[0, 440, true]]);
    await appendRefunds(journal, 10, 0, 101);
    await b.current();
    await a.current();
    expect(shared.batches.slice(1).map(({ batch, applied }) => [batch.fromSeq, batch.to.seq, applied])).toEqual([
      [440, 480, true],
      [440, 480, false],
    ]);
    const alone = new MemoryDerivedTables();
    await viewsOn(journal, alone).current();
    expect(await shared.digests()).toEqual(await alone.digests());
    expect(await shared.cursor()).toEqual(await alone.cursor());
  });

  it('a process that finds the tables moved past its page reads the board’s totals from them again before writing on', async () => {
    const { journal } = await journalOf(100, 40);
    const shared = new RecordingTables();
    const a = viewsOn(journal, shared);
    const b = viewsOn(journal, shared);
    await a.current();
    await b.current();
    // b writes two pages while a waits: a's first page is dropped, its second is in the tables already.
    await appendRefunds(journal, 300, 100, 101);
    await b.current();
    await a.current();
    await appendRefunds(journal, 10, 5, 401);
    await a.current();
    expect(shared.batches.slice(1).map(({ batch, applied }) => [batch.fromSeq, batch.to.seq, applied])).toEqual([
      [440, 1_440, true],
      [1_440, 1_640, true],
      [440, 1_440, false],
      [1_640, 1_680, true],
    ]);
    const alone = new MemoryDerivedTables();
    const one = viewsOn(journal, alone);
    await one.current();
    expect(await shared.digests()).toEqual(await alone.digests());
    expect(await (await a.current()).scoreboard.board()).toEqual(await (await one.current()).scoreboard.board());
  });

  it('a batch that lost the race short of its end moves the board’s totals from where the other left them', async () => {
    const journal = new MemoryJournal({ wallClockMs: () => 0 });
    const late = refundChain(1, ['succeeded', 'failed']);
    await journal.appendSealed([...late.slice(0, 5), ...refundChain(2, ['succeeded'])]);
    const shared = new RecordingTables();
    const a = viewsOn(journal, shared);
    const b = viewsOn(journal, shared);
    for (const views of [a, b, a, b]) await views.current();
    // b writes Stripe's late word on refund 1 (no longer in memory); a's next page holds it and a new request.
    await journal.appendSealed(late.slice(5));
    await b.current();
    await journal.appendSealed(refundChain(3));
    await a.current();
    expect(shared.batches.slice(-3).map(({ batch, applied }) => [batch.fromSeq, batch.to.seq, applied])).toEqual([
      [10, 11, true],
      [10, 15, false],
      [11, 15, true],
    ]);
    const alone = new MemoryDerivedTables();
    const one = viewsOn(journal, alone);
    await one.current();
    expect(await shared.digests()).toEqual(await alone.digests());
    expect(await (await a.current()).scoreboard.board()).toEqual(await (await one.current()).scoreboard.board());
  });

  it('a batch that lost the race to a cursor short of its end is applied again from that cursor', async () => {
    const { journal } = await journalOf(0);
    const shared = new RecordingTables();
    const a = viewsOn(journal, shared);
    const b = viewsOn(journal, shared);
    // Both read the cursor (none) before anything is written.
    await a.current();
    await b.current();
    await appendRefunds(journal, 100, 30, 1);
    await a.current();
    await appendRefunds(journal, 100, 60, 101);
    await b.current();
    expect(shared.batches.map(({ batch, applied }) => [batch.fromSeq, batch.to.seq, applied])).toEqual([
      [0, 430, true],
      [0, 830, false],
      [430, 830, true],
    ]);
    const alone = new MemoryDerivedTables();
    await viewsOn(journal, alone).current();
    expect(await shared.digests()).toEqual(await alone.digests());
  });

  it('tables of another version are reset and rebuilt at start; tables of this one are taken as they stand', async () => {
    const { journal } = await journalOf(20, 5);
    const tables = new RecordingTables();
    await tables.reset('views-0');
    await tables.advance({ fromSeq: 0, to: { seq: 3, globalHash: null, size: 3, version: 'views-0' }, changes: [{ view: 'ledger', key: 'stale', row: { key: 'stale', order: 1, open: false, body: {} } }] });
    const info: string[] = [];
    const views = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log: { ...quiet, info: (_fields, message) => info.push(message) }, derived: tables });
    expect(await views.replayAtStart()).toBeNull();
    expect(info).toEqual([
      "the views' derived tables were written by another version of the views: rebuilding them from the journal's 85 entries; /readyz answers 503 not_ready with the progress until done",
      expect.stringMatching(/^rebuilt the views' derived tables from 85 journal entries in [0-9.]+ s \([0-9]+ entries\/s\)$/),
    ]);
    expect(await tables.get('ledger', 'stale')).toBeNull();
    expect((await tables.cursor())?.version).toBe(tablesVersion('inbox'));
    const alone = new MemoryDerivedTables();
    await viewsOn(journal, alone).current();
    expect(await tables.digests()).toEqual(await alone.digests());
    const written = tables.batches.length;
    const again = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log: { ...quiet, info: (_fields, message) => info.push(message) }, derived: tables });
    expect(await again.replayAtStart()).toBeNull();
    expect(info).toHaveLength(2);
    expect(tables.batches.length).toBe(written);
  });
});
