import { expect } from 'vitest';
import { RESERVATION_MOVED } from '../../server/journal/store.ts';
import { blockWhileDispatched, effectIdOf, fakeClock, fields, kindsOf } from '../support/db-journals.ts';
import type { JournalCase } from './journal.contract.ts';
import { dispatchOnPi } from './journal-reservations.contract.ts';

// Writers that interleave: many calls through one handle, calls through two handles on one journal
// (two connections, two clients), and real processes. A store that checks outside its write's
// transaction, or lets a claim be taken twice, fails here.

const eid = effectIdOf(1);
const [a, b] = [effectIdOf(1), effectIdOf(2)];
const PI = 'pi_shared';
const owners = ['w1', 'w2', 'w3', 'w4'];

export const concurrencyCases: Record<string, JournalCase> = {
  'appendIf: 8 concurrent calls on one effect through one handle write exactly one DISPATCHED': async (maker) => {
    const journal = maker.open(fakeClock());
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => journal.appendIf('DISPATCHED', eid, blockWhileDispatched, fields('DISPATCHED', { n: i }), { owner: `w${i}`, ttlMs: 100 })),
    );
    expect(results.filter((r) => r.entry !== null)).toHaveLength(1);
    expect(results.filter((r) => r.blocker === 'in_flight')).toHaveLength(7);
    expect(await kindsOf(journal, eid)).toEqual(['DISPATCHED']);
  },

  'appendIf: calls on one effect through two handles, interleaved, write exactly one DISPATCHED, whose claim is its writer’s': async (maker) => {
    const [one, two] = maker.openTwo(fakeClock());
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        (i % 2 === 0 ? one : two).appendIf('DISPATCHED', eid, blockWhileDispatched, fields('DISPATCHED', { n: i }), { owner: `w${i}`, ttlMs: 60_000 }),
      ),
    );
    const written = results.filter((r) => r.entry !== null);
    expect(written).toHaveLength(1);
    expect(results.filter((r) => r.blocker === 'in_flight')).toHaveLength(5);
    expect(await kindsOf(one, eid)).toEqual(['DISPATCHED']);
    expect(await kindsOf(two, eid)).toEqual(['DISPATCHED']);
    const winner = `w${(written[0]!.entry as unknown as { n: number }).n}`;
    expect(await two.claim(eid, 'someone-else', 1_000)).toBe(false);
    expect(await one.claim(eid, winner, 1_000)).toBe(true);
  },

  'claim: claims of one effect by six owners through two handles, interleaved, grant it to exactly one': async (maker) => {
    const [one, two] = maker.openTwo(fakeClock());
    const granted = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? one : two).claim(eid, `w${i}`, 60_000)));
    expect(granted.filter(Boolean)).toHaveLength(1);
    const holder = `w${granted.indexOf(true)}`;
    // The loser's second try is refused too, through either handle; the holder refreshes.
    const loser = holder === 'w0' ? 'w1' : 'w0';
    expect(await one.claim(eid, loser, 60_000)).toBe(false);
    expect(await two.claim(eid, loser, 60_000)).toBe(false);
    expect(await two.claim(eid, holder, 60_000)).toBe(true);
  },

  'appendIf with a guard: two effects on one payment, each checked against the same read through its own handle: one is written, the other is RESERVATION_MOVED': async (maker) => {
    const [one, two] = maker.openTwo(fakeClock());
    const [readOne, readTwo] = await Promise.all([one.reservations(PI), two.reservations(PI)]);
    const results = await Promise.all([
      one.appendIf('DISPATCHED', a, blockWhileDispatched, dispatchOnPi(500), { owner: 'w1', ttlMs: 1_000 }, { key: PI, afterSeq: readOne.seq }),
      two.appendIf('DISPATCHED', b, blockWhileDispatched, dispatchOnPi(500), { owner: 'w2', ttlMs: 1_000 }, { key: PI, afterSeq: readTwo.seq }),
    ]);
    expect(results.filter((r) => r.entry !== null)).toHaveLength(1);
    expect(results.filter((r) => r.blocker === RESERVATION_MOVED)).toHaveLength(1);
    expect((await one.reservations(PI)).open).toHaveLength(1);
    expect((await two.reservations(PI)).open).toHaveLength(1);
  },

  'durability: when a write through one handle resolves, the other handle already reads it': async (maker) => {
    const [one, two] = maker.openTwo(fakeClock());
    const seen = await Promise.all(
      Array.from({ length: 60 }, async (_, i) => {
        const entry = await one.append('PROPOSED', effectIdOf(i + 1), fields('PROPOSED', { n: i }));
        return (await two.entries(entry.effect_id)).some((e) => e.hash === entry.hash);
      }),
    );
    expect(seen.every(Boolean)).toBe(true);
  },

  'reads through one handle while the other writes see whole writes only: every entry with its seal, the head on an entry': async (maker) => {
    const [one, two] = maker.openTwo(fakeClock());
    let writing = true;
    const writes = Promise.all(
      Array.from({ length: 120 }, (_, i) => one.appendIf('PROPOSED', effectIdOf((i % 7) + 1), () => null, fields('PROPOSED', { n: i }), { owner: `w${i}`, ttlMs: 1_000 })),
    ).finally(() => {
      writing = false;
    });
    // Reads as fast as they answer, between the writes' own steps where a store lets them, and
    // now and then a turn of the loop, where a store that writes in batches writes.
    for (let reads = 0; writing || reads === 0; reads++) {
      const head = await two.head();
      const page = await two.scan(0, 1_000);
      // A scan throws on an entry without its seal; the head names an entry the reader can scan.
      if (head !== null) expect(page.some((s) => s.seq === head.seq && s.global === head.globalHash)).toBe(true);
      if (reads % 20 === 19) await new Promise((resolve) => setImmediate(resolve));
    }
    await writes;
    expect((await two.scan(0, 1_000)).length).toBe(120);
  },

  'a read through the writing handle, asked while its write is under way, sees only committed entries: nothing another handle cannot see after it': async (maker) => {
    const [one, two] = maker.openTwo(fakeClock());
    let seenHere: number[] = [];
    let seenElsewhere: number[] = [];
    let read: Promise<void> = Promise.resolve();
    // One write asks for a read of its own handle from inside its check, where a store that batches
    // writes has the batch open; writes queued with it keep that batch open a while longer.
    await Promise.all([
      one.append('PROPOSED', effectIdOf(1), fields('PROPOSED')),
      one.appendIf('PROPOSED', effectIdOf(2), () => {
        read = one.scan(0, 100).then(async (page) => {
          seenHere = page.map((s) => s.seq);
          // At once, through the other handle: whatever this handle answered was committed already.
          seenElsewhere = (await two.scan(0, 100)).map((s) => s.seq);
        });
        return null;
      }, fields('PROPOSED')),
      ...Array.from({ length: 6 }, (_, i) => one.append('PROPOSED', effectIdOf(i + 3), fields('PROPOSED'))),
    ]);
    await read;
    expect(seenHere.filter((seq) => !seenElsewhere.includes(seq))).toEqual([]);
    expect((await one.scan(0, 100)).length).toBe(8);
  },

  'across processes: 4 processes racing to dispatch one effect write exactly one DISPATCHED; the rest see in_flight': async (maker) => {
    const { outcomes, journal } = await maker.race!('dispatch', eid, owners);
    expect(outcomes.filter((o) => o.wrote === true)).toHaveLength(1);
    expect(outcomes.filter((o) => o.blocker === 'in_flight')).toHaveLength(3);
    const [dispatched] = await journal.entries(eid);
    expect(await kindsOf(journal, eid)).toEqual(['DISPATCHED']);
    // The claim set with the DISPATCHED belongs to the process that wrote it.
    const winner = owners[outcomes.findIndex((o) => o.wrote === true)];
    expect((dispatched as { owner?: unknown } | undefined)?.owner).toBe(winner);
    expect(await journal.claim(eid, 'someone-else', 1_000)).toBe(false);
  },

  'across processes: 4 processes racing for one effect’s claim: exactly one is granted it': async (maker) => {
    const { outcomes } = await maker.race!('claim', eid, owners);
    expect(outcomes.filter((o) => o.granted === true)).toHaveLength(1);
  },
};
