import { expect } from 'vitest';
import type { Checkpoints, StoredCheckpoint } from '../../db/port/checkpoints.ts';
import type { JournalStore } from '../../server/journal/store.ts';
import { effectIdOf, fields } from '../support/db-journals.ts';
import type { ContractCase } from './contract.ts';

// What every checkpoint store does (db/port/checkpoints.ts): checkpoints that never go backwards
// in an epoch, whichever connection adds them and however they interleave; the journal's id,
// given once; and the seal reads a checkpoint is held against.

export interface CheckpointsEnv {
  store: Checkpoints;
  /** Another connection onto the same store (another process's view of it). */
  other(): Checkpoints;
  /** The journal the store sits beside. */
  journal: JournalStore;
}

const row = (size: number, epoch = 0): Omit<StoredCheckpoint, 'id'> => ({ epoch, size, head: `${size}`.padStart(64, '0'), note: `note of ${size}`, signedAtMs: 1_700_000_000_000 + size });

const sizes = async (store: Checkpoints) => (await store.all()).map((c) => [c.epoch, c.size]);

/** True when, in each epoch, every checkpoint is larger than the one before it. */
function neverBackwards(kept: readonly StoredCheckpoint[]): boolean {
  return kept.every((c, i) => {
    const before = kept[i - 1];
    return before === undefined || before.epoch !== c.epoch || before.size < c.size;
  });
}

async function appendEntries(journal: JournalStore, count: number): Promise<void> {
  for (let n = 1; n <= count; n++) await journal.append('PROPOSED', effectIdOf(n), fields('PROPOSED'));
}

export const checkpointsCases: Record<string, ContractCase<CheckpointsEnv>> = {
  'a store with no checkpoint has no newest and none at all': async ({ store }) => {
    expect(await store.latest()).toBeNull();
    expect(await store.all()).toEqual([]);
  },

  'a checkpoint is kept only when larger than the newest of its epoch; a new epoch starts again': async ({ store }) => {
    expect(await store.add(row(5))).toBe(true);
    expect(await store.add(row(5))).toBe(false);
    expect(await store.add(row(3))).toBe(false);
    expect(await store.add(row(8))).toBe(true);
    expect(await store.add(row(2, 1))).toBe(true);
    expect(await sizes(store)).toEqual([
      [0, 5],
      [0, 8],
      [1, 2],
    ]);
    const newest = await store.latest();
    expect(newest).toMatchObject(row(2, 1));
    expect((await store.all()).map((c) => c.id)).toEqual([...(await store.all())].map((c) => c.id).sort((a, b) => a - b));
  },

  'a checkpoint added on another connection is the newest for every connection': async ({ store, other }) => {
    const elsewhere = other();
    expect(await elsewhere.add(row(7))).toBe(true);
    expect((await store.latest())?.size).toBe(7);
    expect(await store.add(row(6))).toBe(false);
    expect(await store.add(row(9))).toBe(true);
    expect((await elsewhere.latest())?.size).toBe(9);
  },

  'checkpoints added from two connections at once never go backwards': async ({ store, other }) => {
    const elsewhere = other();
    // Each connection signs as its view catches up: one a step ahead of the other, interleaved.
    const adds: Promise<boolean>[] = [];
    for (let size = 10; size > 0; size--) {
      adds.push(store.add(row(size * 10)));
      adds.push(elsewhere.add(row(size * 10 - 5)));
    }
    const kept = await Promise.all(adds);
    const all = await store.all();
    expect(neverBackwards(all)).toBe(true);
    expect(kept.filter(Boolean)).toHaveLength(all.length);
    expect((await elsewhere.latest())?.size).toBe(100);
  },

  'the journal has no id until one is given; it is given once, whichever connection asks': async ({ store, other }) => {
    expect(await store.journalId()).toBeNull();
    const elsewhere = other();
    const [a, b] = await Promise.all([store.ensureJournalId(), elsewhere.ensureJournalId()]);
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(b).toBe(a);
    expect(await store.ensureJournalId()).toBe(a);
    expect(await elsewhere.journalId()).toBe(a);
  },

  "the seal reads give the global hash and seq of the journal's n-th entry, null beyond it": async ({ store, journal }) => {
    await appendEntries(journal, 4);
    const scanned = await journal.scan(0, 100);
    expect(await store.seqAtSize(0)).toBe(0);
    expect(await store.globalHashAtSize(0)).toBeNull();
    for (const [i, sequenced] of scanned.entries()) {
      expect(await store.seqAtSize(i + 1)).toBe(sequenced.seq);
      expect(await store.globalHashAtSize(i + 1)).toBe(sequenced.global);
      expect(await store.globalHashAtSize(i + 1, true)).toBe(sequenced.global);
    }
    expect(await store.seqAtSize(5)).toBeNull();
    expect(await store.globalHashAtSize(5)).toBeNull();
    expect(await store.globalHashAtSize(5, true)).toBeNull();
  },
};
