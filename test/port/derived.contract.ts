import { expect } from 'vitest';
import { EMPTY_DIGEST, moveDigest, moveDigestBy } from '../../db/derived-digest.ts';
import type { DerivedBatch, DerivedChange, DerivedCursor, DerivedDigest, DerivedRow, DerivedTables } from '../../db/port/derived.ts';
import type { JsonObject } from '../../shared/json.ts';
import type { ContractCase } from './contract.ts';

// What every store of the derived tables does (db/port/derived.ts): a batch applies only where the
// cursor stands at its start, whole or not at all, its changes in order; lists in (order, key),
// either way, by pages and open or closed; digests that depend on the rows alone; marks every
// 10,000 seqs; a reset; and two handles (two processes) advancing at once never both apply.

export interface DerivedEnv {
  tables: DerivedTables;
  /** Another handle onto the same tables (another process's connection). */
  other(): DerivedTables;
}

const VERSION = 'v1';

export const at = (seq: number, version = VERSION): DerivedCursor => ({ seq, globalHash: seq === 0 ? null : `${seq}`.padStart(64, 'a'), size: seq, version });

export const row = (key: string, order: number, body: JsonObject = { key }, open = false): DerivedRow => ({ key, order, open, body });

export const put = (view: string, r: DerivedRow): DerivedChange => ({ view, key: r.key, row: r });

export const drop = (view: string, key: string): DerivedChange => ({ view, key, row: null });

export const batch = (fromSeq: number, toSeq: number, changes: DerivedChange[]): DerivedBatch => ({ fromSeq, to: at(toSeq), changes });

/** A view's rows, all of them, ascending. */
export const allRows = (tables: DerivedTables, view: string) => tables.list(view, { direction: 'asc', limit: 1_000_000 });

/** A view's digest recomputed from scratch from what `list` gives. */
export async function recomputed(tables: DerivedTables, view: string): Promise<DerivedDigest> {
  const rows = await allRows(tables, view);
  return { view, sum: rows.reduce((sum, r) => moveDigest(sum, r, null, view), EMPTY_DIGEST), rows: rows.length };
}

/** Everything the tables hold, to compare before and after a refused call. */
async function everything(tables: DerivedTables, views: readonly string[]) {
  return { cursor: await tables.cursor(), rows: await Promise.all(views.map((view) => allRows(tables, view))), digests: await tables.digests(), marks: await tables.marks() };
}

const keysOf = (rows: readonly DerivedRow[]) => rows.map((r) => r.key);

/** Both directions of a list, paged `size` rows at a time through `after`: the keys of every page, concatenated. */
async function paged(tables: DerivedTables, view: string, direction: 'asc' | 'desc', size: number, open?: boolean): Promise<string[]> {
  const keys: string[] = [];
  let after: { order: number; key: string } | undefined;
  for (;;) {
    const page = await tables.list(view, { direction, limit: size, ...(after === undefined ? {} : { after }), ...(open === undefined ? {} : { open }) });
    keys.push(...keysOf(page));
    const last = page.at(-1);
    if (last === undefined || page.length < size) return keys;
    after = { order: last.order, key: last.key };
  }
}

export const derivedCases: Record<string, ContractCase<DerivedEnv>> = {
  'tables never built have no cursor, no rows, no digests and no marks': async ({ tables }) => {
    expect(await tables.cursor()).toBeNull();
    expect(await tables.get('ledger', 'a')).toBeNull();
    expect(await allRows(tables, 'ledger')).toEqual([]);
    expect(await tables.digests()).toEqual([]);
    expect(await tables.marks()).toEqual([]);
  },

  'a batch from 0 applies: its rows are kept as written and the cursor stands at its end': async ({ tables, other }) => {
    const body = { amount: 1250, currency: 'usd', nested: { z: [1, 'two', null, true], a: 'é ✓ 𝄞' } };
    expect(await tables.advance(batch(0, 3, [put('ledger', row('e1', 1, body, true)), put('ledger', row('e2', 2)), put('scoreboard', row('day', 5))]))).toBe(true);
    expect(await tables.cursor()).toEqual(at(3));
    expect(await other().cursor()).toEqual(at(3));
    expect(await tables.get('ledger', 'e1')).toEqual(row('e1', 1, body, true));
    expect(await other().get('ledger', 'e2')).toEqual(row('e2', 2));
    expect(await tables.get('scoreboard', 'e1')).toBeNull();
    expect(keysOf(await allRows(tables, 'ledger'))).toEqual(['e1', 'e2']);
  },

  'a batch from a seq where the cursor does not stand is refused, and nothing of it is written': async ({ tables }) => {
    expect(await tables.advance(batch(4, 6, [put('ledger', row('early', 1))]))).toBe(false);
    expect(await tables.cursor()).toBeNull();
    expect(await allRows(tables, 'ledger')).toEqual([]);
    expect(await tables.advance(batch(0, 10, [put('ledger', row('e1', 1))]))).toBe(true);
    const before = await everything(tables, ['ledger']);
    for (const from of [0, 9, 11]) {
      expect(await tables.advance(batch(from, 20_000, [put('ledger', row('late', 2)), drop('ledger', 'e1')]))).toBe(false);
    }
    expect(await everything(tables, ['ledger'])).toEqual(before);
  },

  'changes apply in order: a key changed twice ends as its last change, a removed key is gone': async ({ tables }) => {
    await tables.advance(
      batch(0, 4, [put('ledger', row('a', 1, { n: 1 })), put('ledger', row('b', 2)), put('ledger', row('a', 7, { n: 2 }, true)), drop('ledger', 'b'), drop('ledger', 'never')]),
    );
    expect(await allRows(tables, 'ledger')).toEqual([row('a', 7, { n: 2 }, true)]);
    await tables.advance(batch(4, 6, [drop('ledger', 'a'), put('ledger', row('a', 3, { n: 3 }))]));
    expect(await allRows(tables, 'ledger')).toEqual([row('a', 3, { n: 3 })]);
    await tables.advance(batch(6, 7, [drop('ledger', 'a')]));
    expect(await tables.get('ledger', 'a')).toBeNull();
    expect(await tables.digests()).toEqual([]);
  },

  'lists go by order then key, either way, by pages through after, open or closed alone': async ({ tables }) => {
    // Ties on order 2 are broken by key, in UTF-8 byte order: "B" < "a" < "b" < "é" < "Ａ" < "𝄞"
    // (UTF-16 units would put "𝄞" before "Ａ").
    const rows = [row('b', 2), row('𝄞', 2, {}, true), row('a', 2, {}, true), row('Ａ', 2), row('B', 2), row('é', 2), row('z', 1, {}, true), row('c', 3), row('y', -4)];
    await tables.advance(batch(0, 1, rows.map((r) => put('ledger', r))));
    await tables.advance(batch(1, 2, [put('other', row('b', 0))]));
    const ascending = ['y', 'z', 'B', 'a', 'b', 'é', 'Ａ', '𝄞', 'c'];
    expect(keysOf(await allRows(tables, 'ledger'))).toEqual(ascending);
    expect(keysOf(await tables.list('ledger', { direction: 'desc', limit: 100 }))).toEqual([...ascending].reverse());
    for (const size of [1, 2, 3, 9]) {
      expect(await paged(tables, 'ledger', 'asc', size)).toEqual(ascending);
      expect(await paged(tables, 'ledger', 'desc', size)).toEqual([...ascending].reverse());
    }
    expect(await paged(tables, 'ledger', 'asc', 2, true)).toEqual(['z', 'a', '𝄞']);
    expect(await paged(tables, 'ledger', 'desc', 2, false)).toEqual(['c', 'Ａ', 'é', 'b', 'B', 'y']);
    expect(keysOf(await tables.list('ledger', { direction: 'asc', limit: 3, after: { order: 2, key: 'a' } }))).toEqual(['b', 'é', 'Ａ']);
    expect(keysOf(await tables.list('ledger', { direction: 'desc', limit: 3, after: { order: 2, key: 'a' } }))).toEqual(['B', 'z', 'y']);
    // A range: after one row and before another, either way, the bounds left out.
    expect(keysOf(await tables.list('ledger', { direction: 'asc', limit: 9, after: { order: 1, key: 'z' }, before: { order: 2, key: 'é' } }))).toEqual(['B', 'a', 'b']);
    expect(keysOf(await tables.list('ledger', { direction: 'desc', limit: 9, after: { order: 2, key: 'é' }, before: { order: 1, key: 'z' } }))).toEqual(['b', 'a', 'B']);
    expect(keysOf(await tables.list('ledger', { direction: 'asc', limit: 2, before: { order: 2, key: 'aa' } }))).toEqual(['y', 'z']);
    expect(keysOf(await tables.list('ledger', { direction: 'asc', limit: 9, before: { order: 2, key: 'a' }, open: true }))).toEqual(['z']);
    expect(keysOf(await tables.list('ledger', { direction: 'desc', limit: 9, before: { order: 2, key: '𝄞' } }))).toEqual(['c']);
    expect(await tables.list('ledger', { direction: 'asc', limit: 9, after: { order: 3, key: 'c' }, before: { order: -4, key: 'y' } })).toEqual([]);
    // After a row that is not there: from where it would sort.
    expect(keysOf(await tables.list('ledger', { direction: 'asc', limit: 2, after: { order: 2, key: 'aa' } }))).toEqual(['b', 'é']);
    expect(await tables.list('ledger', { direction: 'asc', limit: 0 })).toEqual([]);
    expect(await tables.list('nothing', { direction: 'desc', limit: 5 })).toEqual([]);
  },

  'the same rows written in other orders and batches, replaced and removed, have the same digest, the one recomputed from the rows': async ({ tables, other }) => {
    const final = [row('a', 1, { v: 1 }), row('b', 2, { v: 2 }, true), row('c', 3, { v: 3 })];
    // Asked after every batch, the digest is the rows' then: it moved with each change.
    await tables.advance(batch(0, 5, [put('ledger', row('c', 9, { v: 'old' })), put('ledger', row('gone', 4)), put('ledger', final[0]!)]));
    expect(await tables.digests()).toEqual([await recomputed(tables, 'ledger')]);
    await tables.advance(batch(5, 8, [put('ledger', row('b', 2, { v: 'first' })), drop('ledger', 'gone'), put('ledger', final[2]!)]));
    expect(await tables.digests()).toEqual([await recomputed(tables, 'ledger')]);
    await tables.advance(batch(8, 9, [put('ledger', final[1]!)]));
    const digests = await tables.digests();
    expect(digests).toEqual([await recomputed(tables, 'ledger')]);
    expect(digests[0]!.rows).toBe(3);
    // Another writer, from a reset: the rows in another order in one batch.
    const elsewhere = other();
    await elsewhere.reset(VERSION);
    await elsewhere.advance(batch(0, 9, [...final].reverse().map((r) => put('ledger', r))));
    expect(await tables.digests()).toEqual(digests);
    expect(await tables.digests()).toEqual([await recomputed(tables, 'ledger')]);
  },

  'a view with every row removed has no digest; the others keep theirs': async ({ tables }) => {
    await tables.advance(batch(0, 2, [put('ledger', row('a', 1)), put('ledger', row('b', 1)), put('outbox', row('m', 1))]));
    await tables.advance(batch(2, 3, [drop('ledger', 'a'), drop('ledger', 'b')]));
    expect(await tables.digests()).toEqual([await recomputed(tables, 'outbox')]);
    await tables.advance(batch(3, 4, [put('ledger', row('a', 1))]));
    expect(await tables.digests()).toEqual([await recomputed(tables, 'ledger'), await recomputed(tables, 'outbox')]);
  },

  'the digests are recorded with the cursor when a batch reaches or passes a multiple of 10,000 seqs': async ({ tables }) => {
    await tables.advance(batch(0, 9_999, [put('ledger', row('a', 1))]));
    expect(await tables.marks()).toEqual([]);
    await tables.advance(batch(9_999, 10_000, [put('ledger', row('b', 2))]));
    const first = await tables.digests();
    await tables.advance(batch(10_000, 19_999, [put('outbox', row('m', 1))]));
    await tables.advance(batch(19_999, 35_000, [drop('ledger', 'a'), drop('ledger', 'b')]));
    const second = await tables.digests();
    expect(second).toEqual([await recomputed(tables, 'outbox')]);
    await tables.advance(batch(35_000, 40_000, [drop('outbox', 'm')]));
    expect(await tables.marks()).toEqual([
      { seq: 10_000, globalHash: at(10_000).globalHash, digests: first },
      { seq: 35_000, globalHash: at(35_000).globalHash, digests: second },
      { seq: 40_000, globalHash: at(40_000).globalHash, digests: [] },
    ]);
  },

  'the newest mark alone is read as the last of the marks, none before the first': async ({ tables, other }) => {
    expect(await tables.newestMark()).toBeNull();
    await tables.advance(batch(0, 10_000, [put('ledger', row('a', 1)), put('outbox', row('m', 1))]));
    await tables.advance(batch(10_000, 25_000, [put('ledger', row('b', 2))]));
    await tables.advance(batch(25_000, 29_999, [drop('outbox', 'm')]));
    const marks = await tables.marks();
    expect(marks.map(({ seq }) => seq)).toEqual([10_000, 25_000]);
    expect(await other().newestMark()).toEqual(marks.at(-1));
    await tables.advance(batch(29_999, 30_000, [drop('ledger', 'a'), drop('ledger', 'b')]));
    expect(await tables.newestMark()).toEqual({ seq: 30_000, globalHash: at(30_000).globalHash, digests: [] });
    await tables.reset('v2');
    expect(await tables.newestMark()).toBeNull();
  },

  'a reset removes every row, digest and mark and stands the cursor at 0 under its version; the next batch starts from 0': async ({ tables, other }) => {
    await tables.advance(batch(0, 10_000, [put('ledger', row('a', 1)), put('outbox', row('m', 1))]));
    await other().reset('v2');
    expect(await tables.cursor()).toEqual(at(0, 'v2'));
    expect(await allRows(tables, 'ledger')).toEqual([]);
    expect([await tables.digests(), await tables.marks()]).toEqual([[], []]);
    expect(await tables.advance(batch(10_000, 10_001, [put('ledger', row('x', 1))]))).toBe(false);
    expect(await tables.advance({ fromSeq: 0, to: at(2, 'v2'), changes: [put('ledger', row('b', 2))] })).toBe(true);
    expect(await tables.cursor()).toEqual(at(2, 'v2'));
    expect(keysOf(await allRows(tables, 'ledger'))).toEqual(['b']);
  },

  'a batch no store can keep is refused with derived_input_invalid, and nothing of it is written': async ({ tables }) => {
    await tables.advance(batch(0, 1, [put('ledger', row('a', 1))]));
    const before = await everything(tables, ['ledger']);
    const bad: DerivedBatch[] = [
      batch(1, 0, []),
      { ...batch(1, 2, []), to: { ...at(2), version: '' } },
      batch(1, 2, [put('ledger', row('b', 1)), { view: 'ledger', key: 'c', row: row('d', 1) }]),
      batch(1, 2, [put('ledger', row('b', 1)), put('ledger', row('c', 1.5))]),
      batch(1, 2, [put('ledger', row('b', 1)), put('ledger', row('c', 1, { n: Number.NaN }))]),
      batch(1, 2, [put('ledger', row('b', 1)), put('', row('c', 1))]),
      batch(1, 2, [put('ledger', row('b', 1)), drop('ledger', '')]),
    ];
    for (const one of bad) await expect(tables.advance(one)).rejects.toMatchObject({ code: 'derived_input_invalid' });
    await expect(tables.list('ledger', { direction: 'asc', limit: -1 })).rejects.toMatchObject({ code: 'derived_input_invalid' });
    await expect(tables.list('ledger', { direction: 'asc', limit: 1, before: { order: 1.5, key: 'a' } })).rejects.toMatchObject({ code: 'derived_input_invalid' });
    expect(await everything(tables, ['ledger'])).toEqual(before);
  },

  'two handles advancing from the same cursor at once: exactly one applies, and the tables hold its batch alone': async ({ tables, other }) => {
    await tables.advance(batch(0, 2, [put('ledger', row('base', 1))]));
    const elsewhere = other();
    const mine = batch(2, 5, [put('ledger', row('mine', 2)), drop('ledger', 'base')]);
    const theirs = batch(2, 7, [put('ledger', row('theirs', 3)), put('ledger', row('base', 1, { by: 'theirs' }))]);
    const applied = await Promise.all([tables.advance(mine), elsewhere.advance(theirs)]);
    expect(applied.filter(Boolean)).toHaveLength(1);
    const [winner] = applied[0] ? [mine] : [theirs];
    expect(await tables.cursor()).toEqual(winner!.to);
    const expected = applied[0] ? [row('mine', 2)] : [row('base', 1, { by: 'theirs' }), row('theirs', 3)];
    expect(await allRows(elsewhere, 'ledger')).toEqual(expected);
    expect(await tables.digests()).toEqual([await recomputed(tables, 'ledger')]);
  },

  'many advances from two handles, interleaved, each from the cursor it read: no change lost or doubled': async ({ tables, other }) => {
    const handles = [tables, other()];
    const goal = 60;
    const wins = [0, 0];
    // Each handle, over and over: read the cursor and the running count, then add one row and
    // count it, from that cursor. A batch from a cursor that moved meanwhile must be refused.
    await Promise.all(
      handles.map(async (handle, who) => {
        for (;;) {
          const seq = (await handle.cursor())?.seq ?? 0;
          if (seq >= goal) return;
          const count = ((await handle.get('counts', 'total'))?.body.n as number | undefined) ?? 0;
          await new Promise((resolve) => setImmediate(resolve));
          const step = batch(seq, seq + 1, [put('ledger', row(`k${seq + 1}`, seq + 1, { who })), put('counts', row('total', 0, { n: count + 1 }))]);
          if (await handle.advance(step)) wins[who]! += 1;
        }
      }),
    );
    expect(wins[0]! + wins[1]!).toBe(goal);
    expect((await tables.cursor())?.seq).toBe(goal);
    expect((await tables.get('counts', 'total'))?.body).toEqual({ n: goal });
    expect(keysOf(await allRows(tables, 'ledger'))).toEqual(Array.from({ length: goal }, (_, i) => `k${i + 1}`));
    expect(await tables.digests()).toEqual([await recomputed(tables, 'counts'), await recomputed(tables, 'ledger')]);
  },

  'a snapshot holds every row of every view once, as the tables stood when it was taken, while they advance past it': async ({ tables }) => {
    await tables.advance(batch(0, 2, [put('ledger', row('a', 1)), put('ledger', row('b', 2, { x: 1 }, true)), put('scoreboard.totals', row('board', 0, { n: 2 }))]));
    const before = { cursor: await tables.cursor(), digests: await tables.digests() };
    const snapshot = await tables.snapshot();
    const read = await snapshot.next(1);
    await tables.advance(batch(2, 3, [put('ledger', row('c', 3)), drop('ledger', 'a'), put('scoreboard.totals', row('board', 0, { n: 3 }))]));
    for (let page = await snapshot.next(1); page.length > 0; page = await snapshot.next(1)) read.push(...page);
    snapshot.close();
    expect(await snapshot.next(1)).toEqual([]);
    expect({ cursor: snapshot.cursor, digests: snapshot.digests }).toEqual(before);
    expect(read.map(({ view, key }) => `${view}/${key}`).sort()).toEqual(['ledger/a', 'ledger/b', 'scoreboard.totals/board']);
    const sums = new Map<string, DerivedDigest>();
    for (const { view, hash } of read) {
      const sum = sums.get(view) ?? { view, sum: EMPTY_DIGEST, rows: 0 };
      sums.set(view, { view, sum: moveDigestBy(sum.sum, hash, null), rows: sum.rows + 1 });
    }
    expect([...sums.values()].sort((a, b) => (a.view < b.view ? -1 : 1))).toEqual(before.digests);
  },
};
