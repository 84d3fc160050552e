import { expect } from 'vitest';
import { blockWhileDispatched, effectIdOf, fakeClock, fields } from '../support/db-journals.ts';
import type { JournalCase } from './journal.contract.ts';

// Claims: who owns an effect (a sender, a recoverer) until when.

const eid = effectIdOf(1);
const otherEid = effectIdOf(2);

/** [why, who holds it for 100 ms (or nobody), how long after, who asks, granted]. */
const grants: Array<[string, string | null, number, string, boolean]> = [
  ['no claim is held', null, 0, 'w1', true],
  ['the same owner refreshes it', 'w1', 50, 'w1', true],
  ['another owner holds it unexpired', 'w1', 99, 'w2', false],
  ['it expires exactly now', 'w1', 100, 'w2', true],
  ['it has expired', 'w1', 101, 'w2', true],
];

const grantCases: Record<string, JournalCase> = Object.fromEntries(
  grants.map(([why, holder, afterMs, claimant, granted]) => [
    `claim: when ${why} (held by ${holder} for 100 ms, asked after ${afterMs} ms by ${claimant}), granted = ${granted}`,
    async (maker) => {
      const clock = fakeClock();
      const journal = maker.open(clock);
      if (holder !== null) expect(await journal.claim(eid, holder, 100)).toBe(true);
      clock.advance(afterMs);
      expect(await journal.claim(eid, claimant, 100)).toBe(granted);
    },
  ]),
);

export const claimCases: Record<string, JournalCase> = {
  ...grantCases,

  'claim: a refresh by the same owner moves the expiry, and a refusal leaves the holder': async (maker) => {
    const clock = fakeClock();
    const journal = maker.open(clock);
    await journal.claim(eid, 'w1', 100);
    clock.advance(50);
    expect(await journal.claim(eid, 'w1', 100)).toBe(true);
    clock.advance(70);
    expect(await journal.claim(eid, 'w2', 100)).toBe(false);
    expect(await journal.claim(eid, 'w1', 100)).toBe(true);
    expect(await journal.claim(otherEid, 'w2', 100)).toBe(true);
  },

  'claim: an owner or a lifetime that cannot mean what the caller intends is refused': async (maker) => {
    const journal = maker.open(fakeClock());
    await expect(journal.claim(eid, '', 100)).rejects.toThrow(TypeError);
    await expect(journal.claim(eid, 'w1', 0)).rejects.toThrow(TypeError);
    await expect(journal.claim(eid, 'w1', 1.5)).rejects.toThrow(TypeError);
    await expect(journal.claim('not-an-effect', 'w1', 100)).rejects.toThrow(TypeError);
    expect(await journal.claim(eid, 'w2', 100)).toBe(true);
  },

  'release: only the owner drops its claim': async (maker) => {
    const journal = maker.open(fakeClock());
    await journal.claim(eid, 'w1', 1_000);
    await journal.release(eid, 'w2');
    expect(await journal.claim(eid, 'w2', 1_000)).toBe(false);
    await journal.release(eid, 'w1');
    expect(await journal.claim(eid, 'w2', 1_000)).toBe(true);
  },

  'appendIf with a claim: sets the claim in the same write, overwriting another owner': async (maker) => {
    const clock = fakeClock();
    const journal = maker.open(clock);
    expect(await journal.claim(eid, 'w2', 1_000)).toBe(true);
    const result = await journal.appendIf('DISPATCHED', eid, blockWhileDispatched, fields('DISPATCHED'), { owner: 'w1', ttlMs: 100 });
    expect(result.blocker).toBeNull();
    expect(await journal.claim(eid, 'w2', 1_000)).toBe(false);
    clock.advance(100);
    expect(await journal.claim(eid, 'w2', 1_000)).toBe(true);
  },
};
