import { expect } from 'vitest';
import { RESERVATION_MOVED } from '../../server/journal/store.ts';
import { blockWhileDispatched, effectIdOf, fakeClock, fields } from '../support/db-journals.ts';
import type { JournalCase } from './journal.contract.ts';
import { dispatchOnPi } from './journal-reservations.contract.ts';

// Writes made at once through one handle, which a store may commit as one batch: each must see
// what the writes before it in the batch wrote (their entries, their reservations, their claims),
// as it would in a transaction of its own.

const [a, b] = [effectIdOf(1), effectIdOf(2)];
const PI = 'pi_shared';

export const batchCases: Record<string, JournalCase> = {
  'appendIf with a guard: two effects on one payment, checked against the same read, written at once through one handle: one is written, the other is RESERVATION_MOVED': async (maker) => {
    const journal = maker.open(fakeClock());
    const read = await journal.reservations(PI);
    const results = await Promise.all(
      [a, b].map((effectId, i) => journal.appendIf('DISPATCHED', effectId, blockWhileDispatched, dispatchOnPi(500), { owner: `w${i}`, ttlMs: 1_000 }, { key: PI, afterSeq: read.seq })),
    );
    expect(results.filter((r) => r.entry !== null)).toHaveLength(1);
    expect(results.filter((r) => r.blocker === RESERVATION_MOVED)).toHaveLength(1);
    expect((await journal.reservations(PI)).open).toHaveLength(1);
  },

  'claims set and released by writes made at once through one handle end as made one after another': async (maker) => {
    const journal = maker.open(fakeClock());
    await Promise.all([
      // a: set by its dispatch, then released by its owner: free.
      journal.appendIf('DISPATCHED', a, blockWhileDispatched, fields('DISPATCHED'), { owner: 'w1', ttlMs: 60_000 }),
      journal.append('COMMITTED', a, fields('COMMITTED'), { release: 'w1' }),
      // b: set by its dispatch, then a release by someone else: still w2's.
      journal.appendIf('DISPATCHED', b, blockWhileDispatched, fields('DISPATCHED'), { owner: 'w2', ttlMs: 60_000 }),
      journal.append('COMMITTED', b, fields('COMMITTED'), { release: 'w3' }),
    ]);
    expect(await journal.claim(a, 'w9', 60_000)).toBe(true);
    expect(await journal.claim(b, 'w9', 60_000)).toBe(false);
    expect(await journal.claim(b, 'w2', 60_000)).toBe(true);
  },
};
