import { afterEach, describe, expect, it, vi } from 'vitest';
import { groupCommitLimits, settleInChunks } from '../../db/group-commit.ts';
import { sealNext } from '../../db/journal-rules.ts';
import { SqliteJournal } from '../../db/journal-store.ts';
import type { Entry } from '../../shared/entries.ts';
import { blockWhileDispatched, cleanUpDatabases, effectIdOf, fakeClock, fields, kindsOf, openTempDatabase } from '../support/db-journals.ts';

afterEach(cleanUpDatabases);

const eid = effectIdOf(1);
/** The real setImmediate, kept before any test fakes it. */
const realSetImmediate = setImmediate;
/** Wait for a real turn of the loop: a batch started by a faked timer has run its steps and committed by then. */
const realTurn = () => new Promise<void>((resolve) => realSetImmediate(() => resolve()));

function openJournal(options: { lingerMs?: number; busyLingerMs?: number; opsMax?: number; settleChunk?: () => number } = {}) {
  const opened = openTempDatabase();
  const journal = new SqliteJournal({ db: opened.db, ...fakeClock(), groupCommit: options });
  return { ...opened, journal };
}

describe('SqliteJournal group commit: bounds', () => {
  it('batch: 1,000 concurrent appends run in batches of at most 256, every one written', async () => {
    const { journal } = openJournal();
    const entries = await Promise.all(Array.from({ length: 1_000 }, (_, i) => journal.append('PROPOSED', effectIdOf(i + 1), fields('PROPOSED', { n: i }))));
    expect(journal.commitStats).toMatchObject({ batches: 4, ops: 1_000, largestBatch: groupCommitLimits.opsMax, retriedBatches: 0 });
    expect(new Set(entries.map((e) => e.hash)).size).toBe(1_000);
    expect(await journal.scan(0, 2_000)).toHaveLength(1_000);
  });

  it('batch: every caller of the current turn of the event loop joins one batch', async () => {
    const { journal } = openJournal();
    await Promise.all([
      journal.append('PROPOSED', eid, fields('PROPOSED')),
      journal.claim(effectIdOf(2), 'w1', 1_000),
      journal.appendIf('AUTHORIZED', eid, () => null, fields('AUTHORIZED')),
      journal.release(effectIdOf(2), 'w1'),
    ]);
    expect(journal.commitStats).toMatchObject({ batches: 1, ops: 4 });
  });

  it('latency: a lone write waits out the current turn (so its callers can join), then commits at once', async () => {
    // Fake timers: how long the loop takes to come round is the machine's business, not this test's.
    vi.useFakeTimers({ toFake: ['setTimeout', 'setImmediate'] });
    try {
      const { journal } = openJournal();
      const first = journal.append('PROPOSED', eid, fields('PROPOSED'));
      await Promise.resolve();
      expect(journal.commitStats.batches).toBe(0);
      vi.advanceTimersByTime(0);
      await realTurn();
      expect(journal.commitStats).toMatchObject({ batches: 1, ops: 1 });
      expect(await first).toMatchObject({ kind: 'PROPOSED' });
    } finally {
      vi.useRealTimers();
    }
  });

  it('latency: with a 2 ms linger, a write made 1 ms after the first joins its batch, which starts at 2 ms', async () => {
    // Fake timers: how long the loop takes to come round is the machine's business, not this test's.
    vi.useFakeTimers({ toFake: ['setTimeout', 'setImmediate'] });
    try {
      const { journal } = openJournal({ lingerMs: 2 });
      const first = journal.append('PROPOSED', eid, fields('PROPOSED'));
      vi.advanceTimersByTime(1);
      const second = journal.append('PROPOSED', effectIdOf(2), fields('PROPOSED'));
      expect(journal.commitStats.batches).toBe(0);
      vi.advanceTimersByTime(1);
      await realTurn();
      expect(journal.commitStats).toMatchObject({ batches: 1, ops: 2 });
      await Promise.all([first, second]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('latency: under a stream of writes, one queued as the last batch commits waits 2 ms for company; one after a quiet 3 ms does not', async () => {
    // The clock is faked too: "as the last batch commits" and "a quiet 3 ms" are the test's, not the machine's.
    vi.useFakeTimers({ toFake: ['setTimeout', 'setImmediate', 'performance'] });
    try {
      const { journal } = openJournal();
      const first = journal.append('PROPOSED', eid, fields('PROPOSED'));
      await Promise.resolve();
      vi.advanceTimersByTime(0);
      await realTurn();
      expect(journal.commitStats).toMatchObject({ batches: 1, ops: 1 });
      // Right after that commit: a stream, so the batch lingers and the write made 1 ms later joins it.
      const second = journal.append('PROPOSED', effectIdOf(2), fields('PROPOSED'));
      await Promise.resolve();
      vi.advanceTimersByTime(1);
      await realTurn();
      const third = journal.append('PROPOSED', effectIdOf(3), fields('PROPOSED'));
      await Promise.resolve();
      expect(journal.commitStats.batches).toBe(1);
      vi.advanceTimersByTime(1);
      await realTurn();
      expect(journal.commitStats).toMatchObject({ batches: 2, ops: 3, largestBatch: 2 });
      await Promise.all([first, second, third]);
      // Quiet for 3 ms: a lone write commits on the next turn of the loop.
      vi.advanceTimersByTime(3);
      const fourth = journal.append('PROPOSED', effectIdOf(4), fields('PROPOSED'));
      await Promise.resolve();
      vi.advanceTimersByTime(0);
      await realTurn();
      expect(journal.commitStats).toMatchObject({ batches: 3, ops: 4 });
      await fourth;
    } finally {
      vi.useRealTimers();
    }
  });

  it('latency: with busyLingerMs 0, a write right after a commit does not wait', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'setImmediate', 'performance'] });
    try {
      const { journal } = openJournal({ busyLingerMs: 0 });
      const first = journal.append('PROPOSED', eid, fields('PROPOSED'));
      await Promise.resolve();
      vi.advanceTimersByTime(0);
      await realTurn();
      const second = journal.append('PROPOSED', effectIdOf(2), fields('PROPOSED'));
      await Promise.resolve();
      vi.advanceTimersByTime(0);
      await realTurn();
      expect(journal.commitStats).toMatchObject({ batches: 2, ops: 2 });
      await Promise.all([first, second]);
    } finally {
      vi.useRealTimers();
    }
  });

  it.each([
    [{ opsMax: 0 }],
    [{ opsMax: groupCommitLimits.opsMax + 1 }],
    [{ lingerMs: -1 }],
    [{ lingerMs: groupCommitLimits.lingerMsMax + 1 }],
    [{ busyLingerMs: -1 }],
    [{ busyLingerMs: groupCommitLimits.lingerMsMax + 1 }],
  ])('options: %j is refused', (options) => {
    expect(() => openJournal(options)).toThrow(RangeError);
  });
});

describe('SqliteJournal group commit: what a check sees', () => {
  it('appendIf: 50 concurrent DISPATCHED on one effect in one batch write exactly one; the rest see in_flight', async () => {
    const { journal } = openJournal();
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => journal.appendIf('DISPATCHED', eid, blockWhileDispatched, fields('DISPATCHED', { n: i }), { owner: `w${i}`, ttlMs: 1_000 })),
    );
    expect(journal.commitStats).toMatchObject({ batches: 1, ops: 50 });
    expect(results.filter((r) => r.entry !== null).map((r) => (r.entry as { n?: number } | null)?.n)).toEqual([0]);
    expect(results.filter((r) => r.blocker === 'in_flight')).toHaveLength(49);
    expect(await kindsOf(journal, eid)).toEqual(['DISPATCHED']);
    // The claim set with the one DISPATCHED is the first caller's.
    expect(await journal.claim(eid, 'w1', 1_000)).toBe(false);
    expect(await journal.claim(eid, 'w0', 1_000)).toBe(true);
  });

  it('appendIf: a check sees the appends queued before it in the same batch, in order', async () => {
    const { journal } = openJournal();
    let seen: string[] = [];
    const writes = [
      journal.append('PROPOSED', eid, fields('PROPOSED')),
      journal.append('AUTHORIZED', eid, fields('AUTHORIZED')),
      journal.appendIf('DISPATCHED', eid, (chain) => {
        seen = chain.map((e) => e.kind);
        return null;
      }, fields('DISPATCHED')),
    ];
    const [proposed, authorized, dispatched] = await Promise.all(writes);
    expect(seen).toEqual(['PROPOSED', 'AUTHORIZED']);
    expect(journal.commitStats.batches).toBe(1);
    expect((authorized as Entry).prev).toBe((proposed as Entry).hash);
    expect((dispatched as { entry: Entry }).entry.prev).toBe((authorized as Entry).hash);
  });

  it('claim: within one batch the first claimant wins and a later release by it frees the effect', async () => {
    const { journal } = openJournal();
    const results = await Promise.all([journal.claim(eid, 'w1', 1_000), journal.claim(eid, 'w2', 1_000), journal.release(eid, 'w1'), journal.claim(eid, 'w3', 1_000)]);
    expect(results).toEqual([true, false, undefined, true]);
    expect(journal.commitStats.batches).toBe(1);
  });
});

describe('SqliteJournal group commit: order and durability', () => {
  it('order: 200 concurrent appends to one chain are written and resolved in call order', async () => {
    const { journal } = openJournal();
    const resolved: number[] = [];
    await Promise.all(Array.from({ length: 200 }, (_, n) => journal.append('PROPOSED', eid, fields('PROPOSED', { n })).then(() => resolved.push(n))));
    const expected = Array.from({ length: 200 }, (_, n) => n);
    expect(resolved).toEqual(expected);
    expect((await journal.entries(eid)).map((e) => (e as unknown as { n: number }).n)).toEqual(expected);
  });

  it('isolation: a read started while a batch is open waits for its commit, then sees the whole batch', async () => {
    // The check runs inside the batch's transaction; a read run there at once would see none of
    // the batch (nothing written yet), or rows that could still be rolled back.
    const { journal } = openJournal();
    let read: Promise<Entry[]> | undefined;
    const writes = [
      journal.appendIf('PROPOSED', eid, () => {
        read = journal.entries(eid);
        return null;
      }, fields('PROPOSED')),
      journal.append('AUTHORIZED', eid, fields('AUTHORIZED')),
    ];
    await Promise.all(writes);
    expect(journal.commitStats.batches).toBe(1);
    expect((await read!).map((e) => e.kind)).toEqual(['PROPOSED', 'AUTHORIZED']);
  });

  it('isolation: a check that throws rejects only its own write; the rest of the batch is written', async () => {
    const { journal } = openJournal();
    const failing = () => {
      throw new Error('check failed');
    };
    const [before, thrown, after] = await Promise.allSettled([
      journal.append('PROPOSED', eid, fields('PROPOSED', { n: 1 })),
      journal.appendIf('AUTHORIZED', eid, failing, fields('AUTHORIZED'), { owner: 'w1', ttlMs: 1_000 }),
      journal.append('AUTHORIZED', eid, fields('AUTHORIZED', { n: 3 })),
    ]);
    expect(journal.commitStats).toMatchObject({ batches: 1, retriedBatches: 0 });
    expect(before.status).toBe('fulfilled');
    expect(thrown).toMatchObject({ status: 'rejected', reason: new Error('check failed') });
    expect(after.status).toBe('fulfilled');
    expect((await journal.entries(eid)).map((e) => (e as unknown as { n: number }).n)).toEqual([1, 3]);
    expect(await journal.claim(eid, 'w2', 1_000)).toBe(true);
  });

  it('isolation: a write the schema refuses (a second COMMITTED) rejects alone, with no partial claim', async () => {
    const { journal } = openJournal();
    const results = await Promise.allSettled([
      journal.append('COMMITTED', eid, fields('COMMITTED')),
      journal.appendIf('COMMITTED', eid, () => null, fields('COMMITTED'), { owner: 'w1', ttlMs: 1_000 }),
      journal.append('PROPOSED', effectIdOf(2), fields('PROPOSED')),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(await kindsOf(journal, eid)).toEqual(['COMMITTED']);
    expect(await journal.claim(eid, 'w2', 1_000)).toBe(true);
  });

  it('failure: when the batch cannot take the write lock, every write is rejected and nothing is written', async () => {
    const { journal, sqlite, file } = openJournal();
    sqlite.pragma('busy_timeout = 0');
    const holder = openTempDatabase(file).sqlite;
    holder.exec('BEGIN IMMEDIATE');
    const results = await Promise.allSettled(Array.from({ length: 5 }, (_, i) => journal.append('PROPOSED', effectIdOf(i + 1), fields('PROPOSED'))));
    holder.exec('ROLLBACK');
    expect(results.every((r) => r.status === 'rejected' && /locked|busy/i.test(String(r.reason)))).toBe(true);
    expect(journal.commitStats).toMatchObject({ refusedBatches: 1, retriedBatches: 0 });
    expect(await journal.scan(0, 10)).toEqual([]);
    expect(await journal.append('PROPOSED', eid, fields('PROPOSED'))).toMatchObject({ kind: 'PROPOSED' });
  });
});

describe('SqliteJournal.appendSealed: entries sealed elsewhere, in one write', () => {
  const chainOf = (effectId: string, length: number, after?: Entry): Entry[] => {
    const chain: Entry[] = [];
    for (let n = 0; n < length; n++) chain.push(sealNext('PROPOSED', effectId, { ...fields('PROPOSED'), n }, chain.at(-1) ?? after, 1_700_000_000_000 + n));
    return chain;
  };

  it('stores interleaved chains in order, linked to what the journal already held', async () => {
    const { journal } = openJournal();
    const first = await journal.append('PROPOSED', eid, fields('PROPOSED', { n: -1 }));
    const mine = chainOf(eid, 3, first);
    const other = chainOf(effectIdOf(2), 2);
    await journal.appendSealed([mine[0]!, other[0]!, mine[1]!, other[1]!, mine[2]!]);
    expect(await journal.entries(eid)).toEqual([first, ...mine]);
    expect(await journal.entries(effectIdOf(2))).toEqual(other);
    expect(journal.commitStats.batches).toBe(2);
  });

  it.each([
    ['an entry whose hash does not hold', (chain: Entry[]) => [chain[0]!, { ...chain[1]!, n: 99 }]],
    ['an entry that skips one of its chain', (chain: Entry[]) => [chain[0]!, chain[2]!]],
    ['a chain that does not start at the effect\'s newest entry', (chain: Entry[]) => [chain[1]!]],
  ])('refuses %s, and stores none of the call', async (_why, pick) => {
    const { journal } = openJournal();
    await expect(journal.appendSealed(pick(chainOf(eid, 3)))).rejects.toThrow(TypeError);
    expect(await journal.scan(0, 10)).toEqual([]);
  });
});

describe('group commit: settling a batch', () => {
  it('settles its callers a few at a time, in order, the loop turning between each few', async () => {
    const settled: number[] = [];
    settleInChunks(Array.from({ length: 20 }, (_, i) => () => settled.push(i)), 8);
    expect(settled).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toHaveLength(16);
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  it.each([
    ['8 at a time', 8, true],
    ['all at once (unset: nobody is being shed)', undefined, false],
  ])('a batch of 24 writers settled %s: every one resolves, in call order; a callback queued meanwhile runs before the last of them only in pieces', async (_how, chunk, between) => {
    const { db } = openTempDatabase();
    const journal = new SqliteJournal({ db, ...fakeClock(), ...(chunk === undefined ? {} : { groupCommit: { settleChunk: () => chunk } }) });
    const order: string[] = [];
    const writes = Array.from({ length: 24 }, (_, n) =>
      journal.append('PROPOSED', effectIdOf(n + 1), fields('PROPOSED')).then(() => {
        order.push(`write ${n}`);
        // A request that arrived while the batch committed: answered before the last writers go on.
        if (n === 0) setImmediate(() => order.push('meanwhile'));
      }),
    );
    await Promise.all(writes);
    expect(order.filter((o) => o !== 'meanwhile')).toEqual(writes.map((_, n) => `write ${n}`));
    const at = order.indexOf('meanwhile');
    expect(at > 0 && at < order.length - 1).toBe(between);
  });
});

describe('group commit: the event loop turns between batches', () => {
  it('300 writers that each write again at once still let the loop turn (I/O, timers) between full batches', async () => {
    // More writers than a batch holds, each writing again the moment its write resolves: a full
    // batch used to commit inside the continuations of the one before, batch after batch, so the
    // loop never turned until every write was done (a child printing each write to a pipe
    // printed nothing; a socket's data waited as long).
    const { journal } = openJournal();
    const writesMax = 3_000;
    let started = 0;
    let written = 0;
    let loopTurnedAt: number | null = null;
    setImmediate(() => {
      loopTurnedAt = written;
    });
    const lane = async () => {
      while (started < writesMax) {
        started += 1;
        await journal.append('PROPOSED', effectIdOf(1 + (started % 40)), fields('PROPOSED', { n: started }));
        written += 1;
      }
    };
    await Promise.all(Array.from({ length: 300 }, lane));
    expect(written).toBe(writesMax);
    // The first batch (256 writes) commits in the call that filled it; the loop turns after it.
    expect(loopTurnedAt).not.toBeNull();
    expect(loopTurnedAt!).toBeLessThanOrEqual(groupCommitLimits.opsMax);
  });
});

describe('group commit: settling batches in pieces keeps the commit order across batches', () => {
  it('two batches committed in one flush settle every caller of the first before any of the second', async () => {
    // Eight writers, four to a batch, settled two per turn: the second batch committed after the
    // first, so none of its callers may go on before the first batch's last caller has.
    const { journal } = openJournal({ opsMax: 4, settleChunk: () => 2 });
    const order: number[] = [];
    const writes = Array.from({ length: 8 }, (_, n) => journal.append('PROPOSED', effectIdOf(n + 1), fields('PROPOSED')).then(() => order.push(n)));
    await Promise.all(writes);
    expect(journal.commitStats.batches).toBe(2);
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });
});
