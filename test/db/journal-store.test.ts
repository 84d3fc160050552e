import { afterEach, describe, expect, it } from 'vitest';
import type { EntryKind } from '../../shared/entries.ts';
import type { JsonObject } from '../../shared/json.ts';
import { entryHashHolds, hashEntry } from '../../server/journal/hash.ts';
import { blockWhileDispatched, cleanUpDatabases, effectIdOf, fakeClock, fields, journalBackends, kindsOf } from '../support/db-journals.ts';

afterEach(cleanUpDatabases);

const eid = effectIdOf(1);
const otherEid = effectIdOf(2);

describe.each(journalBackends)('$name', (backend) => {
  it('append: chains each entry to the previous entry of its effect and hashes it', async () => {
    const clock = fakeClock(5_000);
    const journal = backend.open(clock);
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
  });

  it('entries: an effect with no entries has an empty chain', async () => {
    expect(await backend.open(fakeClock()).entries(eid)).toEqual([]);
  });

  it('appendIf: the check sees the whole chain in order and null lets the entry through', async () => {
    const journal = backend.open(fakeClock());
    await journal.append('PROPOSED', eid, fields('PROPOSED'));
    await journal.append('AUTHORIZED', eid, fields('AUTHORIZED'));
    let seen: EntryKind[] = [];
    const result = await journal.appendIf(
      'DISPATCHED',
      eid,
      (chain) => {
        seen = chain.map((entry) => entry.kind);
        return null;
      },
      fields('DISPATCHED', { effect: { amount: 5 } }),
    );
    expect(seen).toEqual(['PROPOSED', 'AUTHORIZED']);
    expect(result.blocker).toBeNull();
    expect(result.entry).toMatchObject({ kind: 'DISPATCHED', effect: { amount: 5 } });
    expect(await kindsOf(journal, eid)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED']);
  });

  it('appendIf: a blocker writes nothing', async () => {
    const journal = backend.open(fakeClock());
    await journal.append('DISPATCHED', eid, fields('DISPATCHED'));
    const result = await journal.appendIf('DISPATCHED', eid, blockWhileDispatched, fields('DISPATCHED'), { owner: 'w1', ttlMs: 100 });
    expect(result).toEqual({ entry: null, blocker: 'in_flight' });
    expect(await kindsOf(journal, eid)).toEqual(['DISPATCHED']);
    expect(await journal.claim(eid, 'w2', 100)).toBe(true);
  });

  it('appendIf: a check that throws writes nothing and rejects', async () => {
    const journal = backend.open(fakeClock());
    const failing = () => {
      throw new Error('check failed');
    };
    await expect(journal.appendIf('DISPATCHED', eid, failing, fields('DISPATCHED'))).rejects.toThrow('check failed');
    expect(await journal.entries(eid)).toEqual([]);
  });

  it('appendIf: a check that does not answer a string or null synchronously is refused', async () => {
    const journal = backend.open(fakeClock());
    const asyncCheck = (async () => null) as never;
    await expect(journal.appendIf('DISPATCHED', eid, asyncCheck, fields('DISPATCHED'))).rejects.toThrow(TypeError);
    await expect(journal.appendIf('DISPATCHED', eid, () => '', fields('DISPATCHED'))).rejects.toThrow(TypeError);
    expect(await journal.entries(eid)).toEqual([]);
  });

  it('appendIf: with a claim, sets the claim in the same step, overwriting another owner', async () => {
    const clock = fakeClock();
    const journal = backend.open(clock);
    expect(await journal.claim(eid, 'w2', 1_000)).toBe(true);
    const result = await journal.appendIf('DISPATCHED', eid, blockWhileDispatched, fields('DISPATCHED'), { owner: 'w1', ttlMs: 100 });
    expect(result.blocker).toBeNull();
    expect(await journal.claim(eid, 'w2', 1_000)).toBe(false);
    clock.advance(100);
    expect(await journal.claim(eid, 'w2', 1_000)).toBe(true);
  });

  it.each<[string, string | null, number, string, boolean]>([
    ['no claim is held', null, 0, 'w1', true],
    ['the same owner refreshes it', 'w1', 50, 'w1', true],
    ['another owner holds it unexpired', 'w1', 99, 'w2', false],
    ['it expires exactly now', 'w1', 100, 'w2', true],
    ['it has expired', 'w1', 101, 'w2', true],
  ])('claim: when %s (held by %s for 100 ms, asked after %i ms by %s), granted = %s', async (_why, holder, afterMs, claimant, granted) => {
    const clock = fakeClock();
    const journal = backend.open(clock);
    if (holder !== null) expect(await journal.claim(eid, holder, 100)).toBe(true);
    clock.advance(afterMs);
    expect(await journal.claim(eid, claimant, 100)).toBe(granted);
  });

  it('claim: a refresh by the same owner moves the expiry, and a refusal leaves the holder', async () => {
    const clock = fakeClock();
    const journal = backend.open(clock);
    await journal.claim(eid, 'w1', 100);
    clock.advance(50);
    expect(await journal.claim(eid, 'w1', 100)).toBe(true);
    clock.advance(70);
    expect(await journal.claim(eid, 'w2', 100)).toBe(false);
    expect(await journal.claim(eid, 'w1', 100)).toBe(true);
    expect(await journal.claim(otherEid, 'w2', 100)).toBe(true);
  });

  it('release: only the owner drops its claim', async () => {
    const journal = backend.open(fakeClock());
    await journal.claim(eid, 'w1', 1_000);
    await journal.release(eid, 'w2');
    expect(await journal.claim(eid, 'w2', 1_000)).toBe(false);
    await journal.release(eid, 'w1');
    expect(await journal.claim(eid, 'w2', 1_000)).toBe(true);
  });

  it('append with release: the entry and the drop of that owner\'s claim are one write; another owner\'s claim stays', async () => {
    const journal = backend.open(fakeClock());
    await journal.claim(eid, 'w1', 1_000);
    await journal.append('PROPOSED', eid, fields('PROPOSED'), { release: 'w2' });
    expect(await journal.claim(eid, 'w2', 1_000)).toBe(false);
    await journal.append('AUTHORIZED', eid, fields('AUTHORIZED'), { release: 'w1' });
    expect(await journal.claim(eid, 'w2', 1_000)).toBe(true);
    await expect(journal.append('AUTHORIZED', eid, fields('AUTHORIZED'), { release: '' })).rejects.toThrow(/release/);
  });

  it('append with release: a write that is refused keeps the claim (nothing of it is applied)', async () => {
    const journal = backend.open(fakeClock());
    await journal.append('PROPOSED', eid, fields('PROPOSED'));
    await journal.append('COMMITTED', eid, fields('COMMITTED', { result: 'first' }));
    await journal.claim(eid, 'w1', 1_000);
    await expect(journal.append('COMMITTED', eid, fields('COMMITTED', { result: 'again' }), { release: 'w1' })).rejects.toThrow();
    expect(await journal.claim(eid, 'w2', 1_000)).toBe(false);
  });

  it('append: a REFUSED whose resolves is not a boolean is refused before anything is written (it cannot close a dispatch)', async () => {
    const journal = backend.open(fakeClock());
    await journal.append('DISPATCHED', eid, fields('DISPATCHED'));
    await expect(journal.append('REFUSED', eid, fields('REFUSED', { code: 'lease', resolves: 'true' }))).rejects.toThrow(/REFUSED.resolves is malformed/);
    expect(await journal.inFlight()).toEqual([eid]);
  });

  it('inFlight: an effect is in flight from its DISPATCHED', async () => {
    const journal = backend.open(fakeClock());
    await journal.append('PROPOSED', eid, fields('PROPOSED'));
    expect(await journal.inFlight()).toEqual([]);
    await journal.append('DISPATCHED', eid, fields('DISPATCHED'));
    expect(await journal.inFlight()).toEqual([eid]);
  });

  it.each<[EntryKind, JsonObject, boolean]>([
    ['COMMITTED', { result: { id: 're_1' } }, false],
    ['AMBIGUOUS', { code: 'ambiguous' }, false],
    ['REFUSED', { code: 'lease_at_recovery', resolves: true }, false],
    ['REFUSED', { code: 'lease' }, true],
    ['CONFIRMED', { via: 'webhook' }, true],
    ['ESCALATED', { reason: 'stale_premise' }, true],
  ])('inFlight: after DISPATCHED then %s %j, still in flight = %s', async (kind, body, stillInFlight) => {
    const journal = backend.open(fakeClock());
    await journal.append('DISPATCHED', eid, fields('DISPATCHED'));
    await journal.append(kind, eid, fields(kind, body));
    expect(await journal.inFlight()).toEqual(stillInFlight ? [eid] : []);
  });

  it('inFlight: a new DISPATCHED after a close opens the effect again; effects come in dispatch order', async () => {
    const journal = backend.open(fakeClock());
    await journal.append('DISPATCHED', otherEid, fields('DISPATCHED'));
    await journal.append('REFUSED', otherEid, fields('REFUSED', { code: 'target_error', resolves: true }));
    await journal.append('DISPATCHED', eid, fields('DISPATCHED'));
    await journal.append('DISPATCHED', eid, fields('DISPATCHED'));
    await journal.append('DISPATCHED', otherEid, fields('DISPATCHED'));
    expect(await journal.inFlight()).toEqual([eid, otherEid]);
  });

  it('scan: returns entries after a seq in journal order, at most limit of them', async () => {
    const journal = backend.open(fakeClock());
    const a = await journal.append('PROPOSED', eid, fields('PROPOSED'));
    const b = await journal.append('PROPOSED', otherEid, fields('PROPOSED'));
    const c = await journal.append('AUTHORIZED', eid, fields('AUTHORIZED'));
    const all = await journal.scan(0, 10);
    expect(all.map((s) => s.entry)).toEqual([a, b, c]);
    const seqs = all.map((s) => s.seq);
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    expect(await journal.scan(seqs[0]!, 1)).toEqual([all[1]]);
    expect(await journal.scan(seqs[2]!, 10)).toEqual([]);
    await expect(journal.scan(0, 0)).rejects.toThrow(TypeError);
  });

  it('appendIf: 8 concurrent calls on one effect write exactly one DISPATCHED', async () => {
    const journal = backend.open(fakeClock());
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        journal.appendIf('DISPATCHED', eid, blockWhileDispatched, fields('DISPATCHED', { n: i }), { owner: `w${i}`, ttlMs: 100 }),
      ),
    );
    expect(results.filter((r) => r.entry !== null)).toHaveLength(1);
    expect(results.filter((r) => r.blocker === 'in_flight')).toHaveLength(7);
    expect(await kindsOf(journal, eid)).toEqual(['DISPATCHED']);
  });
});
