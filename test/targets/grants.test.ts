import { generateKeyPairSync } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteGrants } from '../../db/grants.ts';
import { MemoryJournal } from '../../db/journal-store.ts';
import type { Entry } from '../../shared/entries.ts';
import type { Json, JsonObject } from '../../shared/json.ts';
import { Gate } from '../../server/gate/gate.ts';
import { keyIdFor, type SigningKey } from '../../server/receipts/keys.ts';
import { signReceipt } from '../../server/receipts/receipts.ts';
import { verifyReceipt } from '../../server/receipts/verify.ts';
import { MemoryPayments } from '../../server/targets/memory-payments.ts';
import { cleanUpDatabases, fakeClock, openTempDatabase } from '../support/db-journals.ts';

afterEach(cleanUpDatabases);

const LEASE = 'L-support-7';
const T0 = 1_700_000_000_000;

function buildGrants() {
  const clock = fakeClock(T0);
  const opened = openTempDatabase();
  const grants = new SqliteGrants({ db: opened.db, nowMs: clock.wallClockMs });
  return { clock, opened, grants };
}

const refund = (amount: Json): JsonObject => ({ order: '881', amount });

describe('SqliteGrants: liveness', () => {
  it('a granted lease is live and described as {lease_id, max_cents, revoked, granted}', () => {
    const { grants } = buildGrants();
    grants.grant(LEASE);
    expect(grants.see(LEASE, refund(500))).toEqual({
      lease_live: true,
      lease: { lease_id: LEASE, max_cents: null, revoked: null, granted: T0 },
    });
  });

  it.each([
    ['an unknown lease id', 'L-nobody'],
    ['an empty string', ''],
    ['a number', 7],
    ['null', null],
    ['an object naming the lease', { lease_id: LEASE }],
    ['a list naming the lease', [LEASE]],
  ])('%s is not live and is described as null', (_name, lease) => {
    const { grants } = buildGrants();
    grants.grant(LEASE);
    expect(grants.see(lease as Json, refund(500))).toEqual({ lease_live: false, lease: null });
  });

  it('a revoked lease is not live; the first revocation time stands; granting again clears it', () => {
    const { grants, clock } = buildGrants();
    grants.grant(LEASE, { maxCents: 1_000 });
    clock.advance(1_000);
    expect(grants.revoke(LEASE)).toBe(true);
    clock.advance(1_000);
    expect(grants.revoke(LEASE)).toBe(false);
    expect(grants.see(LEASE, refund(500))).toEqual({
      lease_live: false,
      lease: { lease_id: LEASE, max_cents: 1_000, revoked: T0 + 1_000, granted: T0 },
    });
    grants.grant(LEASE, { maxCents: 3_000 });
    expect(grants.see(LEASE, refund(2_500))).toEqual({
      lease_live: true,
      lease: { lease_id: LEASE, max_cents: 3_000, revoked: null, granted: T0 + 2_000 },
    });
  });

  it('revoking a lease never granted changes nothing', () => {
    const { grants } = buildGrants();
    expect(grants.revoke(LEASE)).toBe(false);
    expect(grants.see(LEASE, refund(1))).toEqual({ lease_live: false, lease: null });
  });

  it('a lease is live strictly before its expiry and not from that instant on', () => {
    const { grants, clock } = buildGrants();
    grants.grant(LEASE, { expiresAtMs: T0 + 60_000 });
    clock.advance(59_999);
    expect(grants.see(LEASE, refund(1)).lease_live).toBe(true);
    clock.advance(1);
    expect(grants.see(LEASE, refund(1)).lease_live).toBe(false);
  });

  it('grants are durable: a reopened database still knows them', () => {
    const { grants, opened } = buildGrants();
    grants.grant(LEASE, { maxCents: 1_000 });
    grants.grant('L-gone');
    grants.revoke('L-gone');
    opened.close();
    const reopened = new SqliteGrants({ db: openTempDatabase(opened.file).db, nowMs: () => T0 });
    expect(reopened.see(LEASE, refund(1_000)).lease_live).toBe(true);
    expect(reopened.see('L-gone', refund(1)).lease_live).toBe(false);
  });
});

describe('SqliteGrants: the cap in cents', () => {
  it.each([
    // [amount, live under a cap of 1000]
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
  ])('amount %s under a cap of 1000 cents → live %s', (amount, live) => {
    // seed: test_lockin_review_fixes.py test_match_does_not_equate_bool_and_int;
    // test_approval_recovery_fixes.py test_nonfinite_amounts_never_reach_the_function
    const { grants } = buildGrants();
    grants.grant(LEASE, { maxCents: 1_000 });
    const effect = amount === undefined ? { order: '881' } : refund(amount as Json);
    expect(grants.see(LEASE, effect).lease_live).toBe(live);
  });

  it('a cap of one cent never covers `true`, though true == 1 in a loose comparison', () => {
    // seed: test_lockin_review_fixes.py test_match_does_not_equate_bool_and_int
    const { grants } = buildGrants();
    grants.grant(LEASE, { maxCents: 1 });
    expect(grants.see(LEASE, refund(1)).lease_live).toBe(true);
    expect(grants.see(LEASE, refund(true)).lease_live).toBe(false);
  });

  it('without a cap any effect is covered', () => {
    const { grants } = buildGrants();
    grants.grant(LEASE);
    expect(grants.see(LEASE, refund(99_999_999)).lease_live).toBe(true);
  });
});

describe('SqliteGrants: terms that cannot be enforced are refused or fail closed', () => {
  it.each([
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
  ])('grant refuses %s with a TypeError and leaves the earlier grant as it was', (_name, terms) => {
    // seed: test_approval_recovery_fixes.py test_invalid_maximum_fails_closed; test_lockin_review_fixes.py test_nan_expiry_never_approves
    const { grants } = buildGrants();
    grants.grant(LEASE, { maxCents: 100 });
    expect(() => grants.grant(LEASE, terms as never)).toThrow(TypeError);
    expect(() => grants.grant('L-new', terms as never)).toThrow(TypeError);
    expect(grants.see(LEASE, refund(100))).toMatchObject({ lease_live: true, lease: { max_cents: 100 } });
    expect(grants.see(LEASE, refund(101)).lease_live).toBe(false);
    expect(grants.see('L-new', refund(1))).toEqual({ lease_live: false, lease: null });
  });

  it('grant refuses an empty lease id', () => {
    const { grants } = buildGrants();
    expect(() => grants.grant('')).toThrow(TypeError);
  });

  it.each([
    ['a NaN expiry written as text', 'max_cents, expires_at_ms', `NULL, 'NaN'`],
    ['a fractional expiry', 'max_cents, expires_at_ms', `NULL, ${T0 + 60_000}.5`],
    ['an expiry that is not a number', 'max_cents, expires_at_ms', `NULL, 'tomorrow'`],
    ['a zero cap', 'max_cents, expires_at_ms', '0, NULL'],
    ['a negative cap', 'max_cents, expires_at_ms', '-5, NULL'],
    ['a fractional cap', 'max_cents, expires_at_ms', '1000.5, NULL'],
    ['a cap that is not a number', 'max_cents, expires_at_ms', `'a lot', NULL`],
    ['a cap stored as bytes', 'max_cents, expires_at_ms', `X'03E8', NULL`],
  ])('a stored row with %s (written around the store) fails closed', (_name, columns, values) => {
    // seed: test_approval_recovery_fixes.py test_invalid_maximum_fails_closed; test_lockin_review_fixes.py test_nan_expiry_never_approves
    const { grants, opened } = buildGrants();
    opened.sqlite.prepare(`INSERT INTO grants (lease_id, ${columns}, granted_at_ms) VALUES ('${LEASE}', ${values}, ${T0})`).run();
    expect(grants.see(LEASE, refund(1)).lease_live).toBe(false);
  });
});

/** A gate over simulated payments whose authority is the grants store; an order of $100. */
function buildGrantedGate() {
  const { grants, clock } = buildGrants();
  const target = new MemoryPayments(1);
  target.addOrder('881', 10_000);
  const journal = new MemoryJournal({ wallClockMs: clock.wallClockMs });
  const gate = new Gate({ journal, target, leases: grants, wallClockMs: clock.wallClockMs });
  const proposal = (amountCents: number, requestKey: string) => ({
    agent: 'refund-bot',
    lease: LEASE,
    requestKey,
    premises: target.capture('881'),
    effect: refund(amountCents),
  });
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const key: SigningKey = { keyId: keyIdFor(publicKey), privateKey, publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
  return { grants, target, journal, gate, proposal, key };
}

describe('SqliteGrants behind the gate, and what receipts attest', () => {
  it('a send over the cap is refused as REFUSED:lease and nothing is sent; within the cap it commits', async () => {
    const { grants, target, gate, proposal } = buildGrantedGate();
    grants.grant(LEASE, { maxCents: 2_000 });
    expect((await gate.submit(proposal(2_001, 'case-over'))).status).toBe('REFUSED:lease');
    expect((await gate.submit(proposal(2_000, 'case-fits'))).status).toBe('COMMITTED');
    expect(target.refunds.map((r) => r.amountCents)).toEqual([2_000]);
  });

  it('a revoked or expired grant refuses the send as REFUSED:lease', async () => {
    const { grants, target, gate, proposal } = buildGrantedGate();
    grants.grant(LEASE, { expiresAtMs: T0 });
    expect((await gate.submit(proposal(100, 'case-expired'))).status).toBe('REFUSED:lease');
    grants.grant(LEASE);
    grants.revoke(LEASE);
    expect((await gate.submit(proposal(100, 'case-revoked'))).status).toBe('REFUSED:lease');
    expect(target.refunds).toEqual([]);
  });

  it('the send records the grant, and its signed receipt verifies: authorized when fired', async () => {
    const { grants, journal, gate, proposal, key } = buildGrantedGate();
    grants.grant(LEASE, { maxCents: 2_000 });
    const { effectId } = await gate.submit(proposal(2_000, 'case-fits'));
    const entries = await journal.entries(effectId);
    expect(entries.find((e) => e.kind === 'DISPATCHED')?.checks).toMatchObject({
      lease_live: true,
      lease: { lease_id: LEASE, max_cents: 2_000, revoked: null, granted: T0 },
    });
    const report = await verifyReceipt(signReceipt(effectId, entries, key), key.publicKeyPem);
    expect(report.problems).toEqual([]);
    expect(report).toMatchObject({ valid: true, signed: true, authorized_when_fired: true, happened_once: true });
  });

  it('a receipt whose recorded grant does not cover the amount sent reports lease_not_attested, even resealed and re-signed', async () => {
    const { grants, journal, gate, proposal, key } = buildGrantedGate();
    grants.grant(LEASE, { maxCents: 2_000 });
    const { effectId } = await gate.submit(proposal(2_000, 'case-fits'));
    // Someone holding the journal and the key rewrites the recorded cap below the amount and reseals the chain.
    const forged = new MemoryJournal({ wallClockMs: () => T0 });
    for (const entry of await journal.entries(effectId)) {
      const { effect_id: _id, kind, ts_ms: _ts, prev: _prev, hash: _hash, ...fields } = entry as Entry & JsonObject;
      if (kind === 'DISPATCHED') fields.checks = { ...(fields.checks as JsonObject), lease: { lease_id: LEASE, max_cents: 1_000, revoked: null, granted: T0 } };
      await forged.append(kind, effectId, fields);
    }
    const report = await verifyReceipt(signReceipt(effectId, await forged.entries(effectId), key), key.publicKeyPem);
    expect(report.problems.map((p) => p.code)).toEqual(['lease_not_attested']);
    expect(report).toMatchObject({ valid: false, tamper_evident: true, signed: true, authorized_when_fired: false });
  });

  it('the same forgery left unsealed breaks the chain and the signature as well', async () => {
    const { grants, journal, gate, proposal, key } = buildGrantedGate();
    grants.grant(LEASE, { maxCents: 2_000 });
    const { effectId } = await gate.submit(proposal(2_000, 'case-fits'));
    const receipt = signReceipt(effectId, await journal.entries(effectId), key);
    const dispatched = receipt.entries.find((e) => e.kind === 'DISPATCHED') as Entry & JsonObject;
    (dispatched.checks as JsonObject).lease = { lease_id: LEASE, max_cents: 1_000, revoked: null, granted: T0 };
    const codes = (await verifyReceipt(receipt, key.publicKeyPem)).problems.map((p) => p.code);
    expect(codes).toEqual(expect.arrayContaining(['altered_entry', 'lease_not_attested']));
  });
});
