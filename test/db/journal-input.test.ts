import { afterEach, describe, expect, it } from 'vitest';
import type { EntryKind } from '../../shared/entries.ts';
import { entryHashHolds } from '../../server/journal/hash.ts';
import { MemoryJournal } from '../../db/journal-store.ts';
import { cleanUpDatabases, effectIdOf, fakeClock, fields, journalBackends, kindsOf } from '../support/db-journals.ts';

afterEach(cleanUpDatabases);

const eid = effectIdOf(1);

// Fields a caller must not be able to write: the envelope is the journal's alone.
const envelopeKeys = ['effect_id', 'kind', 'ts_ms', 'prev', 'hash'];

describe.each(journalBackends)('$name', (backend) => {
  it.each(envelopeKeys)('append: refuses a field named %s, which would overwrite the envelope', async (key) => {
    const journal = backend.open(fakeClock());
    await expect(journal.append('PROPOSED', eid, fields('PROPOSED', { [key]: 'x' }))).rejects.toThrow(TypeError);
    await expect(journal.appendIf('PROPOSED', eid, () => null, fields('PROPOSED', { [key]: null }))).rejects.toThrow(TypeError);
    expect(await journal.entries(eid)).toEqual([]);
  });

  it.each(['ABCDEF012345', 'abcdef01234', 'abcdef0123456', 'abcdefghijkl', ''])(
    'append: refuses the effect id %j, which is not 12 lowercase hex',
    async (badEid) => {
      const journal = backend.open(fakeClock());
      await expect(journal.append('PROPOSED', badEid, fields('PROPOSED'))).rejects.toThrow(TypeError);
      await expect(journal.claim(badEid, 'w1', 100)).rejects.toThrow(TypeError);
      expect(await journal.scan(0, 10)).toEqual([]);
    },
  );

  it.each<[string, unknown]>([
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['a bigint', 10n],
  ])('append: refuses %s, which has no JSON form', async (_name, value) => {
    const journal = backend.open(fakeClock());
    const fields = { nested: { value } } as never;
    await expect(journal.append('PROPOSED', eid, fields)).rejects.toThrow(TypeError);
    expect(await journal.entries(eid)).toEqual([]);
  });

  it('append: refuses an unknown kind and fields that are not an object', async () => {
    const journal = backend.open(fakeClock());
    await expect(journal.append('SENT' as EntryKind, eid, {})).rejects.toThrow(TypeError);
    await expect(journal.append('PROPOSED', eid, [1, 2] as never)).rejects.toThrow(TypeError);
    expect(await journal.entries(eid)).toEqual([]);
  });

  it('append: what is hashed and returned is exactly what is read back', async () => {
    const journal = backend.open(fakeClock());
    const body = { ...fields('PROPOSED'), at: new Date(0), skipped: undefined, list: [1, 'two', { three: null }] };
    const entry = await journal.append('PROPOSED', eid, body as never);
    expect(entry).toMatchObject({ at: '1970-01-01T00:00:00.000Z', list: [1, 'two', { three: null }] });
    expect(Object.hasOwn(entry, 'skipped')).toBe(false);
    const [readBack] = await journal.entries(eid);
    expect(readBack).toEqual(entry);
    expect(entryHashHolds(readBack!)).toBe(true);
  });

  it('append: a caller mutating a returned entry does not change the journal', async () => {
    const journal = backend.open(fakeClock());
    const entry = await journal.append('PROPOSED', eid, fields('PROPOSED', { effect: { amount: 5 } }));
    (entry.effect as { amount: number }).amount = 500;
    expect((await journal.entries(eid))[0]).toMatchObject({ effect: { amount: 5 } });
  });

  it('append: a second COMMITTED for one effect is refused like the schema refuses it', async () => {
    const journal = backend.open(fakeClock());
    await journal.append('COMMITTED', eid, fields('COMMITTED'));
    await expect(journal.append('COMMITTED', eid, fields('COMMITTED'))).rejects.toThrow(/UNIQUE constraint failed/);
    expect(await kindsOf(journal, eid)).toEqual(['COMMITTED']);
  });

  it('claim: refuses an empty owner and a lifetime that is not a positive integer', async () => {
    const journal = backend.open(fakeClock());
    await expect(journal.claim(eid, '', 100)).rejects.toThrow(TypeError);
    await expect(journal.claim(eid, 'w1', 0)).rejects.toThrow(TypeError);
    await expect(journal.claim(eid, 'w1', 1.5)).rejects.toThrow(TypeError);
    const claim = { owner: 'w1', ttlMs: -1 };
    await expect(journal.appendIf('DISPATCHED', eid, () => null, fields('DISPATCHED'), claim)).rejects.toThrow(TypeError);
    expect(await journal.entries(eid)).toEqual([]);
  });
});

describe('wall clock', () => {
  it('append: a clock that does not give integer ms is refused before anything is written', async () => {
    const journal = new MemoryJournal({ wallClockMs: () => 1.5 });
    await expect(journal.append('PROPOSED', eid, fields('PROPOSED'))).rejects.toThrow(TypeError);
    expect(await journal.entries(eid)).toEqual([]);
  });
});
