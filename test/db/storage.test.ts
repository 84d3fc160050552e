import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { Storage } from '../../db/port/storage.ts';
import { openJournalFile } from '../../db/sqlite-journal-file.ts';
import { openReadOnlyStorage, openStorage } from '../../db/sqlite-storage.ts';
import { cleanUpDatabases, effectIdOf, fakeClock, fields, tempDbFile } from '../support/db-journals.ts';

// The storage as the server opens it (openStorage), as the offline check opens it
// (openReadOnlyStorage), and a journal file as the tools read it (openJournalFile): real files,
// a writer on one connection and a reader on another.

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const one of opened.splice(0)) await one.close();
  cleanUpDatabases();
});

async function storageAt(file: string): Promise<Storage> {
  const storage = await openStorage({ file });
  opened.push(storage);
  return storage;
}

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

describe('openStorage', () => {
  it('keeps what the journal wrote for the next open, names its file, and shares the budget only on a file', async () => {
    const file = tempDbFile();
    const first = await openStorage({ file });
    await first.journal(fakeClock()).append('PROPOSED', effectIdOf(1), fields('PROPOSED'));
    expect([first.location, first.budgetSlots === null]).toEqual([file, false]);
    await first.close();
    const again = await storageAt(file);
    expect((await again.journal(fakeClock()).entries(effectIdOf(1))).map((e) => e.kind)).toEqual(['PROPOSED']);
    expect((await storageAt(':memory:')).budgetSlots).toBeNull();
  });

  it('read-only, writes nothing: an append is refused and the file keeps its bytes', async () => {
    const file = tempDbFile();
    const writer = await openStorage({ file });
    await writer.journal(fakeClock()).append('PROPOSED', effectIdOf(1), fields('PROPOSED'));
    await writer.close();
    const before = sha256(file);
    const reader = await openReadOnlyStorage(file);
    opened.push(reader);
    await expect(reader.journal(fakeClock()).append('PROPOSED', effectIdOf(2), fields('PROPOSED'))).rejects.toThrow(/readonly/);
    expect(await reader.integrity.guardProblems()).toEqual([]);
    expect(sha256(file)).toBe(before);
  });
});

describe('a journal file read on its own connection', () => {
  it('reads a period\'s chains from one snapshot, while another connection appends between them', async () => {
    const file = tempDbFile();
    const journal = (await storageAt(file)).journal(fakeClock());
    for (const n of [1, 2, 3]) await journal.append('PROPOSED', effectIdOf(n), fields('PROPOSED'));
    const reader = await openJournalFile(file);
    opened.push(reader);
    const seen: Array<[string, number]> = [];
    for await (const chain of reader.chainsInPeriod({ fromMs: 0, toMs: Number.MAX_SAFE_INTEGER }, 10)) {
      seen.push([chain.effectId, chain.bodies.length]);
      if (seen.length === 1) {
        // Written after the read began: a chain it has not reached yet grows, and a new one starts.
        await journal.append('AUTHORIZED', effectIdOf(2), fields('AUTHORIZED'));
        await journal.append('PROPOSED', effectIdOf(4), fields('PROPOSED'));
      }
    }
    expect(seen).toEqual([
      [effectIdOf(1), 1],
      [effectIdOf(2), 1],
      [effectIdOf(3), 1],
    ]);
  });

  it('gives every row of every request\'s chain, newest chain first, in batches of at most 512', async () => {
    const file = tempDbFile();
    const journal = (await storageAt(file)).journal(fakeClock());
    const chains = 300;
    await Promise.all(Array.from({ length: chains }, (_, i) => journal.append('PROPOSED', effectIdOf(i + 1), fields('PROPOSED'))));
    await Promise.all(Array.from({ length: chains }, (_, i) => journal.append('AUTHORIZED', effectIdOf(i + 1), fields('AUTHORIZED'))));
    const reader = await openJournalFile(file);
    opened.push(reader);
    const sizes: number[] = [];
    const order: string[] = [];
    for await (const batch of reader.chainsNewestFirst()) {
      sizes.push(batch.length);
      for (const { row } of batch) if (order.at(-1) !== row.effectId) order.push(row.effectId);
    }
    expect(sizes).toEqual([512, 2 * chains - 512]);
    expect(order).toHaveLength(chains);
    expect(order[0]).toBe(effectIdOf(chains));
  });

  it('tells where the journal stands, as a backup\'s manifest records it', async () => {
    const file = tempDbFile();
    const storage = await storageAt(file);
    const clock = fakeClock();
    const journal = storage.journal(clock);
    const empty = await openJournalFile(file);
    opened.push(empty);
    expect(await empty.figures()).toEqual({ journalId: null, epochs: 0, entries: 0, lastSeq: 0, globalHead: null, oldestOpenDispatchMs: null, newestCheckpointId: 0 });
    await journal.append('PROPOSED', effectIdOf(1), fields('PROPOSED'));
    await journal.append('DISPATCHED', effectIdOf(1), fields('DISPATCHED'));
    const dispatchedMs = clock.nowMs;
    const id = await storage.checkpoints.ensureJournalId();
    const reader = await openJournalFile(file);
    opened.push(reader);
    const head = await journal.head();
    expect(await reader.figures()).toEqual({ journalId: id, epochs: 0, entries: 2, lastSeq: 2, globalHead: head?.globalHash, oldestOpenDispatchMs: dispatchedMs, newestCheckpointId: 0 });
  });
});
