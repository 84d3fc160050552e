import { expect } from 'vitest';
import { checkSealedChain } from '../../server/journal/seals.ts';
import type { Sequenced } from '../../server/journal/store.ts';
import { effectIdOf, fakeClock, fields } from '../support/db-journals.ts';
import type { JournalCase } from './journal.contract.ts';

// The reads a chain is held against the global chain with: one chain with each entry's seal and
// the seal before it, the seal at one seq, and the chains' ids a page at a time.

const [a, b, c] = [effectIdOf(1), effectIdOf(2), effectIdOf(3)];

export const sealCases: Record<string, JournalCase> = {
  'sealedChain: each entry of the chain with its seq, its seal and the seal of the entry before it in the journal, which the check holds': async (maker) => {
    const journal = maker.open(fakeClock());
    expect(await journal.sealedChain(a)).toEqual([]);
    for (const kind of ['PROPOSED', 'AUTHORIZED', 'REFUSED'] as const) {
      for (const id of [a, b, c]) await journal.append(kind, id, fields(kind));
    }
    const all: Sequenced[] = await journal.scan(0, 100);
    const sealOf = new Map(all.map(({ seq, global }) => [seq, global]));
    const sealed = await journal.sealedChain(b);
    const expected = all.flatMap(({ seq, entry, global }, i) => (entry.effect_id === b ? [{ seq, entry, global, previousGlobal: i === 0 ? null : (sealOf.get(all[i - 1]?.seq ?? 0) ?? null) }] : []));
    expect(sealed).toEqual(expected);
    expect(checkSealedChain(b, sealed)).toEqual(await journal.entries(b));
    // The journal's first entry has no seal before it.
    expect((await journal.sealedChain(a))[0]?.previousGlobal).toBeNull();
  },
  'sealAt: the global hash stored at a seq, null where there is none': async (maker) => {
    const journal = maker.open(fakeClock());
    expect(await journal.sealAt(1)).toBeNull();
    await journal.append('PROPOSED', a, fields('PROPOSED'));
    await journal.append('PROPOSED', b, fields('PROPOSED'));
    const head = await journal.head();
    expect(await journal.sealAt(head?.seq ?? 0)).toBe(head?.globalHash);
    expect(await journal.sealAt(0)).toBeNull();
    expect(await journal.sealAt((head?.seq ?? 0) + 1)).toBeNull();
    await expect(journal.sealAt(1.5)).rejects.toThrow(TypeError);
  },
  'chainEnds: each chain asked, where it stood at a seq: its last entry at or below it and how many entries it had; none for a chain not begun': async (maker) => {
    const journal = maker.open(fakeClock());
    expect(await journal.chainEnds([a], 10)).toEqual([]);
    for (const kind of ['PROPOSED', 'AUTHORIZED', 'REFUSED'] as const) {
      for (const id of [a, b]) await journal.append(kind, id, fields(kind));
    }
    await journal.append('PROPOSED', c, fields('PROPOSED'));
    const all = await journal.scan(0, 100);
    // Where each chain stood through `seq`, from the whole journal read in order.
    const expected = (ids: string[], seq: number) =>
      ids.flatMap((id) => {
        const before = all.filter(({ seq: s, entry }) => s <= seq && entry.effect_id === id);
        const last = before.at(-1);
        return last === undefined ? [] : [{ effectId: id, seq: last.seq, hash: last.entry.hash, length: before.length }];
      });
    const byId = (ends: Array<{ effectId: string }>) => [...ends].sort((x, y) => x.effectId.localeCompare(y.effectId));
    for (const seq of [0, 1, 3, 4, 6, 7, 100]) {
      expect(byId(await journal.chainEnds([a, b, c, effectIdOf(9)], seq))).toEqual(expected([a, b, c], seq));
    }
    // An id asked twice is answered once; no id, nothing.
    expect(await journal.chainEnds([b, b], 4)).toEqual(expected([b], 4));
    expect(await journal.chainEnds([], 4)).toEqual([]);
    await expect(journal.chainEnds([a], 1.5)).rejects.toThrow(TypeError);
  },
  'chainIds: every chain once, in ascending order, a page at a time after the last id given': async (maker) => {
    const journal = maker.open(fakeClock());
    expect(await journal.chainIds('', 10)).toEqual([]);
    for (const id of [c, a, b, a, c]) await journal.append('PROPOSED', id, fields('PROPOSED')).catch(() => journal.append('REFUSED', id, fields('REFUSED')));
    expect(await journal.chainIds('', 2)).toEqual([a, b]);
    expect(await journal.chainIds(b, 2)).toEqual([c]);
    expect(await journal.chainIds(c, 2)).toEqual([]);
    await expect(journal.chainIds('', 0)).rejects.toThrow(TypeError);
  },
};
