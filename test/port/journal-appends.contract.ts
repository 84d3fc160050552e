import { expect } from 'vitest';
import type { EntryKind } from '../../shared/entries.ts';
import type { JsonObject } from '../../shared/json.ts';
import { entryHashHolds, globalHashOf, hashEntry } from '../../server/journal/hash.ts';
import { blockWhileDispatched, effectIdOf, fakeClock, fields, kindsOf } from '../support/db-journals.ts';
import type { JournalCase } from './journal.contract.ts';

// Appends, the chain checks, and the reads: entries, inFlight, scan (the rows after a seq) and head.

const eid = effectIdOf(1);
const otherEid = effectIdOf(2);

/** After DISPATCHED then this entry, whether the effect is still in flight. */
const closers: Array<[EntryKind, JsonObject, boolean]> = [
  ['COMMITTED', { result: { id: 're_1' } }, false],
  ['AMBIGUOUS', { code: 'ambiguous' }, false],
  ['REFUSED', { code: 'lease_at_recovery', resolves: true }, false],
  ['REFUSED', { code: 'lease' }, true],
  ['CONFIRMED', { via: 'webhook' }, true],
  ['ESCALATED', { reason: 'stale_premise' }, true],
];

const closerCases: Record<string, JournalCase> = Object.fromEntries(
  closers.map(([kind, body, stillInFlight]) => [
    `inFlight: after DISPATCHED then ${kind} ${JSON.stringify(body)}, still in flight = ${stillInFlight}`,
    async (maker) => {
      const journal = maker.open(fakeClock());
      await journal.append('DISPATCHED', eid, fields('DISPATCHED'));
      await journal.append(kind, eid, fields(kind, body));
      expect(await journal.inFlight()).toEqual(stillInFlight ? [eid] : []);
    },
  ]),
);

export const appendCases: Record<string, JournalCase> = {
  'append: chains each entry to the previous entry of its effect and hashes it': async (maker) => {
    const clock = fakeClock(5_000);
    const journal = maker.open(clock);
    const first = await journal.append('PROPOSED', eid, fields('PROPOSED', { agent: 'a1' }));
    clock.advance(7);
    const second = await journal.append('AUTHORIZED', eid, fields('AUTHORIZED', { lease: 'g1' }));
    const other = await journal.append('PROPOSED', otherEid, fields('PROPOSED', { agent: 'a2' }));

    expect(first).toMatchObject({ effect_id: eid, kind: 'PROPOSED', ts_ms: 5_000, prev: null, agent: 'a1' });
    expect(second).toMatchObject({ kind: 'AUTHORIZED', ts_ms: 5_007, prev: first.hash });
    expect(other.prev).toBeNull();
    expect(second.hash).toBe(hashEntry(second));
    expect([first, second, other].every(entryHashHolds)).toBe(true);
    expect(await journal.entries(eid)).toEqual([first, second]);
  },

  'entries: an effect with no entries has an empty chain': async (maker) => {
    expect(await maker.open(fakeClock()).entries(eid)).toEqual([]);
  },

  'appendIf: the check sees the whole chain in order and null lets the entry through': async (maker) => {
    const journal = maker.open(fakeClock());
    await journal.append('PROPOSED', eid, fields('PROPOSED'));
    await journal.append('AUTHORIZED', eid, fields('AUTHORIZED'));
    let seen: EntryKind[] = [];
    const check = (chain: readonly { kind: EntryKind }[]) => {
      seen = chain.map((entry) => entry.kind);
      return null;
    };
    const result = await journal.appendIf('DISPATCHED', eid, check, fields('DISPATCHED', { effect: { amount: 5 } }));
    expect(seen).toEqual(['PROPOSED', 'AUTHORIZED']);
    expect(result.blocker).toBeNull();
    expect(result.entry).toMatchObject({ kind: 'DISPATCHED', effect: { amount: 5 } });
    expect(await kindsOf(journal, eid)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED']);
  },

  'appendIf: a blocker writes nothing and sets no claim': async (maker) => {
    const journal = maker.open(fakeClock());
    await journal.append('DISPATCHED', eid, fields('DISPATCHED'));
    const result = await journal.appendIf('DISPATCHED', eid, blockWhileDispatched, fields('DISPATCHED'), { owner: 'w1', ttlMs: 100 });
    expect(result).toEqual({ entry: null, blocker: 'in_flight' });
    expect(await kindsOf(journal, eid)).toEqual(['DISPATCHED']);
    expect(await journal.claim(eid, 'w2', 100)).toBe(true);
  },

  'appendIf: a check that throws writes nothing and rejects': async (maker) => {
    const journal = maker.open(fakeClock());
    const failing = () => {
      throw new Error('check failed');
    };
    await expect(journal.appendIf('DISPATCHED', eid, failing, fields('DISPATCHED'))).rejects.toThrow('check failed');
    expect(await journal.entries(eid)).toEqual([]);
  },

  'appendIf: a check that does not answer a string or null synchronously is refused': async (maker) => {
    const journal = maker.open(fakeClock());
    const asyncCheck = (async () => null) as never;
    await expect(journal.appendIf('DISPATCHED', eid, asyncCheck, fields('DISPATCHED'))).rejects.toThrow(TypeError);
    await expect(journal.appendIf('DISPATCHED', eid, () => '', fields('DISPATCHED'))).rejects.toThrow(TypeError);
    expect(await journal.entries(eid)).toEqual([]);
  },

  'append with release: the entry and the drop of that owner’s claim are one write; another owner’s claim stays': async (maker) => {
    const journal = maker.open(fakeClock());
    await journal.claim(eid, 'w1', 1_000);
    await journal.append('PROPOSED', eid, fields('PROPOSED'), { release: 'w2' });
    expect(await journal.claim(eid, 'w2', 1_000)).toBe(false);
    await journal.append('AUTHORIZED', eid, fields('AUTHORIZED'), { release: 'w1' });
    expect(await journal.claim(eid, 'w2', 1_000)).toBe(true);
    await expect(journal.append('AUTHORIZED', eid, fields('AUTHORIZED'), { release: '' })).rejects.toThrow(/release/);
  },

  'append with release: a write that is refused keeps the claim (nothing of it is applied)': async (maker) => {
    const journal = maker.open(fakeClock());
    await journal.append('PROPOSED', eid, fields('PROPOSED'));
    await journal.append('COMMITTED', eid, fields('COMMITTED', { result: 'first' }));
    await journal.claim(eid, 'w1', 1_000);
    await expect(journal.append('COMMITTED', eid, fields('COMMITTED', { result: 'again' }), { release: 'w1' })).rejects.toThrow();
    expect(await journal.claim(eid, 'w2', 1_000)).toBe(false);
    expect(await kindsOf(journal, eid)).toEqual(['PROPOSED', 'COMMITTED']);
  },

  'append: a REFUSED whose resolves is not a boolean is refused before anything is written (it cannot close a dispatch)': async (maker) => {
    const journal = maker.open(fakeClock());
    await journal.append('DISPATCHED', eid, fields('DISPATCHED'));
    await expect(journal.append('REFUSED', eid, fields('REFUSED', { code: 'lease', resolves: 'true' }))).rejects.toThrow(/REFUSED.resolves is malformed/);
    expect(await journal.inFlight()).toEqual([eid]);
  },

  'inFlight: an effect is in flight from its DISPATCHED': async (maker) => {
    const journal = maker.open(fakeClock());
    await journal.append('PROPOSED', eid, fields('PROPOSED'));
    expect(await journal.inFlight()).toEqual([]);
    await journal.append('DISPATCHED', eid, fields('DISPATCHED'));
    expect(await journal.inFlight()).toEqual([eid]);
  },

  ...closerCases,

  'inFlight: a new DISPATCHED after a close opens the effect again; effects come in dispatch order': async (maker) => {
    const journal = maker.open(fakeClock());
    await journal.append('DISPATCHED', otherEid, fields('DISPATCHED'));
    await journal.append('REFUSED', otherEid, fields('REFUSED', { code: 'target_error', resolves: true }));
    await journal.append('DISPATCHED', eid, fields('DISPATCHED'));
    await journal.append('DISPATCHED', eid, fields('DISPATCHED'));
    await journal.append('DISPATCHED', otherEid, fields('DISPATCHED'));
    expect(await journal.inFlight()).toEqual([eid, otherEid]);
  },

  'scan: returns entries after a seq in journal order, at most limit of them': async (maker) => {
    const journal = maker.open(fakeClock());
    const a = await journal.append('PROPOSED', eid, fields('PROPOSED'));
    const b = await journal.append('PROPOSED', otherEid, fields('PROPOSED'));
    const c = await journal.append('AUTHORIZED', eid, fields('AUTHORIZED'));
    const all = await journal.scan(0, 10);
    expect(all.map((s) => s.entry)).toEqual([a, b, c]);
    const seqs = all.map((s) => s.seq);
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    expect(new Set(seqs).size).toBe(3);
    expect(await journal.scan(seqs[0]!, 1)).toEqual([all[1]]);
    expect(await journal.scan(seqs[2]!, 10)).toEqual([]);
    await expect(journal.scan(0, 0)).rejects.toThrow(TypeError);
    await expect(journal.scan(0.5, 10)).rejects.toThrow(TypeError);
  },

  'seals: each entry scanned carries its global hash, chained over every entry before it in journal order': async (maker) => {
    const journal = maker.open(fakeClock());
    await journal.append('PROPOSED', eid, fields('PROPOSED'));
    await journal.append('PROPOSED', otherEid, fields('PROPOSED'));
    await journal.appendIf('AUTHORIZED', eid, () => null, fields('AUTHORIZED'));
    let previous: string | null = null;
    for (const { seq, entry, global } of await journal.scan(0, 10)) {
      expect(global).toBe(globalHashOf(previous, seq, entry.hash));
      previous = global;
    }
    // A page that starts later carries the same global hashes.
    const [, ...rest] = await journal.scan(0, 10);
    expect(await journal.scan((await journal.scan(0, 1))[0]!.seq, 10)).toEqual(rest);
  },

  'head: null for an empty journal, then the newest entry’s seq and global hash and the entry count; newestSeq its seq alone': async (maker) => {
    const journal = maker.open(fakeClock());
    expect(await journal.head()).toBeNull();
    expect(await journal.newestSeq()).toBe(0);
    await journal.append('PROPOSED', eid, fields('PROPOSED'));
    await journal.append('PROPOSED', otherEid, fields('PROPOSED'));
    // Neither a refused write nor a blocked one moves the head.
    await expect(journal.appendIf('AUTHORIZED', eid, () => { throw new Error('no'); }, fields('AUTHORIZED'))).rejects.toThrow('no');
    await journal.appendIf('AUTHORIZED', eid, () => 'blocked', fields('AUTHORIZED'));
    const last = (await journal.scan(0, 10)).at(-1)!;
    expect(await journal.head()).toEqual({ seq: last.seq, globalHash: last.global, size: 2 });
    expect(await journal.newestSeq()).toBe(last.seq);
  },
};
