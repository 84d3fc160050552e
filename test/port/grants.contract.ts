import { expect } from 'vitest';
import type { Json, JsonObject } from '../../shared/json.ts';
import type { Grants } from '../../db/port/grants.ts';
import type { FakeClock } from '../support/db-journals.ts';
import type { ContractCase } from './contract.ts';

// What every grants store does (db/port/grants.ts): liveness, the cap in cents, terms refused,
// and what another connection onto the same store sees.

export interface GrantsEnv {
  clock: FakeClock;
  grants: Grants;
  /** Another connection onto the same store (another process's view of it). */
  other(): Grants;
}

export const LEASE = 'L-support-7';
export const T0 = 1_700_000_000_000;

export const refund = (amount: Json): JsonObject => ({ order: '881', amount });

const CAP_AMOUNTS: [unknown, boolean][] = [
  [1_000, true],
  [1, true],
  [1_001, false],
  [0, false],
  [-100, false],
  [999.5, false],
  [Number.NaN, false],
  [Number.POSITIVE_INFINITY, false],
  [2 ** 53, false],
  [true, false],
  ['500', false],
  [null, false],
  [undefined, false],
];

const REFUSED_TERMS: [string, object][] = [
  ['a zero cap', { maxCents: 0 }],
  ['a negative cap', { maxCents: -5 }],
  ['a fractional cap', { maxCents: 10.5 }],
  ['a NaN cap', { maxCents: Number.NaN }],
  ['an infinite cap', { maxCents: Number.POSITIVE_INFINITY }],
  ['a boolean cap', { maxCents: true }],
  ['a string cap', { maxCents: '1000' }],
  ['a NaN expiry', { expiresAtMs: Number.NaN }],
  ['an infinite expiry', { expiresAtMs: Number.POSITIVE_INFINITY }],
  ['a fractional expiry', { expiresAtMs: T0 + 0.5 }],
];

export const grantsCases: Record<string, ContractCase<GrantsEnv>> = {
  'a granted lease is live and described as {lease_id, max_cents, revoked, granted}': async ({ grants }) => {
    await grants.grant(LEASE);
    expect(await grants.see(LEASE, refund(500))).toEqual({ lease_live: true, lease: { lease_id: LEASE, max_cents: null, revoked: null, granted: T0 } });
    expect(await grants.describe(LEASE)).toEqual({ lease_id: LEASE, max_cents: null, revoked: null, granted: T0 });
  },

  'a lease naming no grant (unknown, empty, not a string) is not live and is described as null': async ({ grants }) => {
    await grants.grant(LEASE);
    for (const lease of ['L-nobody', '', 7, null, { lease_id: LEASE }, [LEASE]] as Json[]) {
      expect(await grants.see(lease, refund(500))).toEqual({ lease_live: false, lease: null });
      expect(await grants.describe(lease)).toBeNull();
    }
  },

  'a revoked lease is not live; the first revocation time stands; granting again clears it': async ({ grants, clock }) => {
    await grants.grant(LEASE, { maxCents: 1_000 });
    clock.advance(1_000);
    expect(await grants.revoke(LEASE)).toBe(true);
    clock.advance(1_000);
    expect(await grants.revoke(LEASE)).toBe(false);
    expect(await grants.see(LEASE, refund(500))).toEqual({ lease_live: false, lease: { lease_id: LEASE, max_cents: 1_000, revoked: T0 + 1_000, granted: T0 } });
    await grants.grant(LEASE, { maxCents: 3_000 });
    expect(await grants.see(LEASE, refund(2_500))).toEqual({ lease_live: true, lease: { lease_id: LEASE, max_cents: 3_000, revoked: null, granted: T0 + 2_000 } });
  },

  'revoking a lease never granted changes nothing': async ({ grants }) => {
    expect(await grants.revoke(LEASE)).toBe(false);
    expect(await grants.see(LEASE, refund(1))).toEqual({ lease_live: false, lease: null });
  },

  'a lease is live strictly before its expiry and not from that instant on': async ({ grants, clock }) => {
    await grants.grant(LEASE, { expiresAtMs: T0 + 60_000 });
    clock.advance(59_999);
    expect((await grants.see(LEASE, refund(1))).lease_live).toBe(true);
    clock.advance(1);
    expect((await grants.see(LEASE, refund(1))).lease_live).toBe(false);
  },

  'a cap of 1000 cents covers only whole amounts from 1 to 1000 (never true, a string or a non-finite number)': async ({ grants }) => {
    await grants.grant(LEASE, { maxCents: 1_000 });
    for (const [amount, live] of CAP_AMOUNTS) {
      const effect = amount === undefined ? { order: '881' } : refund(amount as Json);
      expect([amount, (await grants.see(LEASE, effect)).lease_live]).toEqual([amount, live]);
    }
  },

  'a cap of one cent never covers `true`; without a cap any amount is covered': async ({ grants }) => {
    await grants.grant(LEASE, { maxCents: 1 });
    expect((await grants.see(LEASE, refund(1))).lease_live).toBe(true);
    expect((await grants.see(LEASE, refund(true))).lease_live).toBe(false);
    await grants.grant('L-uncapped');
    expect((await grants.see('L-uncapped', refund(99_999_999))).lease_live).toBe(true);
  },

  'terms that could not be enforced are refused with a TypeError, leaving the earlier grant as it was': async ({ grants }) => {
    await grants.grant(LEASE, { maxCents: 100 });
    for (const [name, terms] of REFUSED_TERMS) {
      await expect(grants.grant(LEASE, terms as never), name).rejects.toThrow(TypeError);
      await expect(grants.grant('L-new', terms as never), name).rejects.toThrow(TypeError);
    }
    await expect(grants.grant('')).rejects.toThrow(TypeError);
    expect(await grants.see(LEASE, refund(100))).toMatchObject({ lease_live: true, lease: { max_cents: 100 } });
    expect((await grants.see(LEASE, refund(101))).lease_live).toBe(false);
    expect(await grants.see('L-new', refund(1))).toEqual({ lease_live: false, lease: null });
  },

  'a grant and a revocation made on another connection are seen by the next see': async ({ grants, other }) => {
    const elsewhere = other();
    expect((await grants.see(LEASE, refund(1))).lease_live).toBe(false);
    await elsewhere.grant(LEASE, { maxCents: 500 });
    expect((await grants.see(LEASE, refund(1))).lease_live).toBe(true);
    expect(await elsewhere.revoke(LEASE)).toBe(true);
    expect((await grants.see(LEASE, refund(1))).lease_live).toBe(false);
  },

  'grants and revocations racing sees on two connections: every see after the revocation says not live': async ({ grants, other }) => {
    const elsewhere = other();
    for (let round = 0; round < 20; round++) {
      const lease = `L-race-${round}`;
      await grants.grant(lease);
      expect((await grants.see(lease, refund(1))).lease_live).toBe(true);
      const sees = Array.from({ length: 5 }, () => grants.see(lease, refund(1)));
      const revoked = elsewhere.revoke(lease);
      await Promise.all(sees);
      expect(await revoked).toBe(true);
      // Only one revocation takes, whichever connection asks again.
      expect(await grants.revoke(lease)).toBe(false);
      expect((await grants.see(lease, refund(1))).lease_live).toBe(false);
      expect((await elsewhere.see(lease, refund(1))).lease_live).toBe(false);
    }
  },
};
