import { expect } from 'vitest';
import { RESERVATION_MOVED, type ReservationGuard } from '../../server/journal/store.ts';
import { blockWhileDispatched, effectIdOf, fakeClock, fields } from '../support/db-journals.ts';
import type { JournalCase } from './journal.contract.ts';

// Per-payment reservations: an open DISPATCHED reserves what its `reserves` field names, and a
// guarded append refuses when another effect reserved it since the guard's read.

const [a, b, c] = [effectIdOf(1), effectIdOf(2), effectIdOf(3)];
const PI = 'pi_shared';
/** A dispatch of `amount` that reserves PI. */
export const dispatchOnPi = (amount: number) => fields('DISPATCHED', { effect: { payment_intent: PI, amount }, reserves: PI });
const elsewhere = () => fields('DISPATCHED', { effect: { payment_intent: 'pi_other', amount: 1 }, reserves: 'pi_other' });

const badGuards: Array<[string, ReservationGuard]> = [
  ['an empty key', { key: '', afterSeq: 0 }],
  ['a negative seq', { key: PI, afterSeq: -1 }],
  ['a fractional seq', { key: PI, afterSeq: 1.5 }],
];

const badGuardCases: Record<string, JournalCase> = Object.fromEntries(
  badGuards.map(([why, guard]) => [
    `appendIf with a guard: one with ${why} is refused before anything is written`,
    async (maker) => {
      const journal = maker.open(fakeClock());
      await expect(journal.appendIf('DISPATCHED', a, () => null, dispatchOnPi(500), undefined, guard)).rejects.toThrow(TypeError);
      expect(await journal.entries(a)).toEqual([]);
    },
  ]),
);

export const reservationCases: Record<string, JournalCase> = {
  'reservations: the open dispatches on a key, one per effect, and the seq a guard must look past': async (maker) => {
    const journal = maker.open(fakeClock());
    expect(await journal.reservations(PI)).toEqual({ open: [], seq: 0 });
    const first = await journal.append('DISPATCHED', a, dispatchOnPi(500));
    await journal.append('DISPATCHED', b, elsewhere());
    const third = await journal.append('DISPATCHED', c, dispatchOnPi(700));
    await journal.append('DISPATCHED', c, dispatchOnPi(700));
    let read = await journal.reservations(PI);
    expect(read.open).toEqual([first, third]);
    const seqs = (await journal.scan(0, 10)).map((s) => s.seq);
    expect(read.seq).toBe(seqs[3]);
    // A COMMITTED closes the dispatch: no longer reserved, but the seq still counts it.
    await journal.append('COMMITTED', a, fields('COMMITTED', { result: 'ok' }));
    read = await journal.reservations(PI);
    expect(read.open).toEqual([third]);
    expect(read.seq).toBe(seqs[3]);
    // So does a resolving refusal: the reservation is given back.
    await journal.append('REFUSED', c, fields('REFUSED', { code: 'target_error', resolves: true }));
    expect((await journal.reservations(PI)).open).toEqual([]);
    await expect(journal.reservations('')).rejects.toThrow(TypeError);
  },

  'appendIf with a guard: refused as RESERVATION_MOVED when another effect reserved the key since, with nothing written': async (maker) => {
    const journal = maker.open(fakeClock());
    const before = await journal.reservations(PI);
    await journal.append('DISPATCHED', a, dispatchOnPi(500));
    const moved = await journal.appendIf('DISPATCHED', b, blockWhileDispatched, dispatchOnPi(500), { owner: 'w1', ttlMs: 1_000 }, { key: PI, afterSeq: before.seq });
    expect(moved).toEqual({ entry: null, blocker: RESERVATION_MOVED });
    expect(await journal.entries(b)).toEqual([]);
    expect(await journal.claim(b, 'w2', 1_000)).toBe(true);
    // Read again: the guard now counts a's dispatch, and b may go.
    const again = await journal.reservations(PI);
    const written = await journal.appendIf('DISPATCHED', b, blockWhileDispatched, dispatchOnPi(500), undefined, { key: PI, afterSeq: again.seq });
    expect(written.blocker).toBeNull();
    expect(written.entry).toMatchObject({ kind: 'DISPATCHED', reserves: PI });
  },

  'appendIf with a guard: the effect’s own earlier dispatch and other keys never block it': async (maker) => {
    const journal = maker.open(fakeClock());
    const before = await journal.reservations(PI);
    await journal.append('DISPATCHED', a, dispatchOnPi(500));
    await journal.append('REFUSED', a, fields('REFUSED', { code: 'target_error', resolves: true }));
    await journal.append('DISPATCHED', b, elsewhere());
    const written = await journal.appendIf('DISPATCHED', a, () => null, dispatchOnPi(500), undefined, { key: PI, afterSeq: before.seq });
    expect(written.blocker).toBeNull();
  },

  ...badGuardCases,
};
