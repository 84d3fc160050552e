import { afterEach, describe, expect, it } from 'vitest';
import { RESERVATION_MOVED } from '../../server/journal/store.ts';
import { blockWhileDispatched, cleanUpDatabases, effectIdOf, fakeClock, fields, journalBackends, openTempDatabase } from '../support/db-journals.ts';

afterEach(cleanUpDatabases);

// The journal's side of per-payment reservations: an open DISPATCHED reserves what its `reserves`
// field names, and a guarded append refuses when another effect reserved it since the guard's read.

const [a, b, c] = [effectIdOf(1), effectIdOf(2), effectIdOf(3)];
const PI = 'pi_shared';
const dispatch = (amount: number) => fields('DISPATCHED', { effect: { payment_intent: PI, amount }, reserves: PI });

describe.each(journalBackends)('$name', (backend) => {
  it('reservations: the open dispatches on a key, one per effect, and the seq a guard must look past', async () => {
    const journal = backend.open(fakeClock());
    expect(await journal.reservations(PI)).toEqual({ open: [], seq: 0 });
    const first = await journal.append('DISPATCHED', a, dispatch(500));
    await journal.append('DISPATCHED', b, fields('DISPATCHED', fields('DISPATCHED', { effect: { payment_intent: 'pi_other', amount: 1 }, reserves: 'pi_other' })));
    const third = await journal.append('DISPATCHED', c, dispatch(700));
    let read = await journal.reservations(PI);
    expect(read.open).toEqual([first, third]);
    expect(read.seq).toBe(3);
    // A COMMITTED closes the dispatch: no longer reserved, but the seq still counts it.
    await journal.append('COMMITTED', a, fields('COMMITTED', { result: 'ok' }));
    read = await journal.reservations(PI);
    expect(read.open).toEqual([third]);
    expect(read.seq).toBe(3);
    // So does a resolving refusal: the reservation is given back.
    await journal.append('REFUSED', c, fields('REFUSED', { code: 'target_error', resolves: true }));
    expect((await journal.reservations(PI)).open).toEqual([]);
  });

  it('appendIf with a guard: refused as RESERVATION_MOVED when another effect reserved the key since, with nothing written', async () => {
    const journal = backend.open(fakeClock());
    const before = await journal.reservations(PI);
    await journal.append('DISPATCHED', a, dispatch(500));
    const moved = await journal.appendIf('DISPATCHED', b, blockWhileDispatched, dispatch(500), undefined, { key: PI, afterSeq: before.seq });
    expect(moved).toEqual({ entry: null, blocker: RESERVATION_MOVED });
    expect(await journal.entries(b)).toEqual([]);
    // Read again: the guard now counts a's dispatch, and b may go.
    const again = await journal.reservations(PI);
    const written = await journal.appendIf('DISPATCHED', b, blockWhileDispatched, dispatch(500), undefined, { key: PI, afterSeq: again.seq });
    expect(written.blocker).toBeNull();
    expect(written.entry).toMatchObject({ kind: 'DISPATCHED', reserves: PI });
  });

  it('appendIf with a guard: the effect’s own earlier dispatch and other keys never block it', async () => {
    const journal = backend.open(fakeClock());
    const before = await journal.reservations(PI);
    await journal.append('DISPATCHED', a, dispatch(500));
    await journal.append('REFUSED', a, fields('REFUSED', { code: 'target_error', resolves: true }));
    await journal.append('DISPATCHED', b, fields('DISPATCHED', fields('DISPATCHED', { effect: { payment_intent: 'pi_other', amount: 1 }, reserves: 'pi_other' })));
    const written = await journal.appendIf('DISPATCHED', a, () => null, dispatch(500), undefined, { key: PI, afterSeq: before.seq });
    expect(written.blocker).toBeNull();
  });

  it.each([
    ['an empty key', { key: '', afterSeq: 0 }],
    ['a negative seq', { key: PI, afterSeq: -1 }],
    ['a fractional seq', { key: PI, afterSeq: 1.5 }],
  ])('a guard with %s is refused before anything is written', async (_name, guard) => {
    const journal = backend.open(fakeClock());
    await expect(journal.appendIf('DISPATCHED', a, () => null, dispatch(500), undefined, guard)).rejects.toThrow(TypeError);
    expect(await journal.entries(a)).toEqual([]);
  });
});

describe('SqliteJournal reservations', () => {
  it('a row whose reserves column disagrees with its body fails closed on read', async () => {
    const opened = openTempDatabase();
    const { SqliteJournal } = await import('../../db/journal-store.ts');
    const journal = new SqliteJournal({ db: opened.db, ...fakeClock() });
    await journal.append('DISPATCHED', a, dispatch(500));
    // Written around the store (the triggers forbid an UPDATE): a forged copy with another key.
    opened.sqlite.exec('DROP TRIGGER entries_no_update');
    opened.sqlite.prepare("UPDATE entries SET reserves = 'pi_forged' WHERE effect_id = ?").run(a);
    await expect(journal.entries(a)).rejects.toThrow(/disagrees with its columns/);
  });
});
