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

describe('SqliteGrants: what the file keeps (the rest is the grants contract, test/port)', () => {
  it('grants are durable: a reopened database still knows them', async () => {
    const { grants, opened } = buildGrants();
    await grants.grant(LEASE, { maxCents: 1_000 });
    await grants.grant('L-gone');
    await grants.revoke('L-gone');
    opened.close();
    const reopened = new SqliteGrants({ db: openTempDatabase(opened.file).db, nowMs: () => T0 });
    expect((await reopened.see(LEASE, refund(1_000))).lease_live).toBe(true);
    expect((await reopened.see('L-gone', refund(1))).lease_live).toBe(false);
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
  ])('a stored row with %s (written around the store) fails closed', async (_name, columns, values) => {
    // seed: test_approval_recovery_fixes.py test_invalid_maximum_fails_closed; test_lockin_review_fixes.py test_nan_expiry_never_approves
    const { grants, opened } = buildGrants();
    opened.sqlite.prepare(`INSERT INTO grants (lease_id, ${columns}, granted_at_ms) VALUES ('${LEASE}', ${values}, ${T0})`).run();
    expect((await grants.see(LEASE, refund(1))).lease_live).toBe(false);
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
    await grants.grant(LEASE, { maxCents: 2_000 });
    expect((await gate.submit(proposal(2_001, 'case-over'))).status).toBe('REFUSED:lease');
    expect((await gate.submit(proposal(2_000, 'case-fits'))).status).toBe('COMMITTED');
    expect(target.refunds.map((r) => r.amountCents)).toEqual([2_000]);
  });

  it('a revoked or expired grant refuses the send as REFUSED:lease', async () => {
    const { grants, target, gate, proposal } = buildGrantedGate();
    await grants.grant(LEASE, { expiresAtMs: T0 });
    expect((await gate.submit(proposal(100, 'case-expired'))).status).toBe('REFUSED:lease');
    await grants.grant(LEASE);
    await grants.revoke(LEASE);
    expect((await gate.submit(proposal(100, 'case-revoked'))).status).toBe('REFUSED:lease');
    expect(target.refunds).toEqual([]);
  });

  it('the send records the grant, and its signed receipt verifies: authorized when fired', async () => {
    const { grants, journal, gate, proposal, key } = buildGrantedGate();
    await grants.grant(LEASE, { maxCents: 2_000 });
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
    await grants.grant(LEASE, { maxCents: 2_000 });
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
    await grants.grant(LEASE, { maxCents: 2_000 });
    const { effectId } = await gate.submit(proposal(2_000, 'case-fits'));
    const receipt = signReceipt(effectId, await journal.entries(effectId), key);
    const dispatched = receipt.entries.find((e) => e.kind === 'DISPATCHED') as Entry & JsonObject;
    (dispatched.checks as JsonObject).lease = { lease_id: LEASE, max_cents: 1_000, revoked: null, granted: T0 };
    const codes = (await verifyReceipt(receipt, key.publicKeyPem)).problems.map((p) => p.code);
    expect(codes).toEqual(expect.arrayContaining(['altered_entry', 'lease_not_attested']));
  });
});
