import { spawnSync } from 'node:child_process';
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Entry } from '../../shared/entries.ts';
import type { JsonObject } from '../../shared/json.ts';
import { keyIdFor, loadOrCreateSigningKey, PUBLIC_KEY_FILE, publicKeySet, type SigningKey } from '../../server/receipts/keys.ts';
import { signReceipt, type VerifyProblemCode, type VerifyReport } from '../../server/receipts/receipts.ts';
import { runVerifyCli } from '../../server/receipts/verify-cli.ts';
import { keysFromKeySet } from '../../shared/receipts/verify.ts';
import { verifyReceipt } from '../../server/receipts/verify.ts';
import {
  buildChain,
  committedSteps,
  confirmedFields,
  decidedFields,
  dispatchedSteps,
  EFFECT_ID,
  editEntry,
  entryAt,
  escalatedFields,
  LEASE,
  liveChecks,
  OTHER_EFFECT_ID,
  PREMISES,
  personApprovedSteps,
  personLease,
  REFUND,
  REFUND_ID,
  refundResult,
  reseal,
  type Step,
} from '../support/entries.ts';
import { compiledEntry } from '../support/server-process.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'interlock-verify-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
const key: SigningKey = loadOrCreateSigningKey(dataDir);
/** The receipt key alone, as PEM: a Node KeyObject is handed to the verifier as its PEM text. */
const publicKey = key.publicKeyPem;
const keyRing = new Map([[key.keyId, key.publicKeyPem]]);
/** The same key imported by WebCrypto, as a browser that verifies many receipts would hold it. */
const cryptoKey = await crypto.subtle.importKey('spki', createPublicKey(key.publicKeyPem).export({ type: 'spki', format: 'der' }), { name: 'Ed25519' }, false, ['verify']);

function chain(steps: readonly Step[]): Entry[] {
  return buildChain(EFFECT_ID, steps);
}
/** An unsigned receipt: what verify sees when no key is given. */
function receiptOf(entries: readonly Entry[]): JsonObject {
  return { effect_id: EFFECT_ID, entries: [...entries] };
}
function signed(entries: readonly Entry[]): JsonObject {
  return signReceipt(EFFECT_ID, entries, key) as unknown as JsonObject;
}
function codes(report: VerifyReport): VerifyProblemCode[] {
  return report.problems.map((problem) => problem.code);
}
function verifySteps(steps: readonly Step[]): Promise<VerifyReport> {
  return verifyReceipt(signed(chain(steps)), publicKey);
}

describe('verify: a committed refund', () => {
  // seed: tests/test_receipts.py Receipts test_committed_refund_proves_all_three_claims_on_both_backends
  it('verify: a committed, signed refund is valid and proves every claim', async () => {
    const report = await verifyReceipt(signed(chain(committedSteps())), publicKey);
    expect(report).toMatchObject({
      effect_id: EFFECT_ID,
      key_id: key.keyId,
      valid: true,
      tamper_evident: true,
      signed: true,
      happened: true,
      happened_once: true,
      authorized_when_fired: true,
      assumptions_held: true,
      refused: null,
      evidence: refundResult(),
      approved_by: null,
      approval_verified: null,
      escalations: [],
      confirmed_by_target: null,
      confirmation: [],
      problems: [],
    });
  });

  it('verify: the report has exactly the fields of the spec plus key_id', async () => {
    expect(Object.keys(await verifyReceipt(signed(chain(committedSteps())))).sort()).toEqual(
      [
        'effect_id',
        'valid',
        'tamper_evident',
        'signed',
        'happened',
        'happened_once',
        'authorized_when_fired',
        'assumptions_held',
        'refused',
        'evidence',
        'rechecked_at_recovery',
        'approved_by',
        'approval_verified',
        'escalations',
        'confirmed_by_target',
        'confirmation',
        'problems',
        'key_id',
      ].sort(),
    );
  });

  it('verify: without a key the chain is still checked and signed is null', async () => {
    expect(await verifyReceipt(receiptOf(chain(committedSteps())))).toMatchObject({ valid: true, signed: null, tamper_evident: true });
  });

  it('verify: a receipt that went through JSON text verifies the same', async () => {
    const text = JSON.stringify(signed(chain(committedSteps())));
    expect(await verifyReceipt(JSON.parse(text), keyRing)).toMatchObject({ valid: true, signed: true });
  });
});

describe('verify: tampering', () => {
  // seed: tests/test_receipts.py Receipts test_edited_amount_is_detected
  const edits: [string, number, (entry: JsonObject) => void][] = [
    ['an edited DISPATCHED amount', 2, (e) => Object.assign(e.effect as JsonObject, { amount: 200_000 })],
    ['an edited PROPOSED agent', 0, (e) => Object.assign(e, { agent: 'someone-else' })],
    ['an edited AUTHORIZED lease', 1, (e) => Object.assign(e, { lease: 'L-other' })],
    ['an edited COMMITTED refund id', 3, (e) => Object.assign(e.result as JsonObject, { refund: 're_other' })],
    ['an edited DISPATCHED lease_live', 2, (e) => Object.assign(e.checks as JsonObject, { lease_live: false })],
    ['an edited timestamp', 3, (e) => Object.assign(e, { ts_ms: 1 })],
    ['an edited kind', 3, (e) => Object.assign(e, { kind: 'AMBIGUOUS' })],
    ['an added field', 2, (e) => Object.assign(e, { note: 'fine' })],
    ['a removed field', 2, (e) => delete e.premises],
  ];
  it.each(edits)('verify: %s is reported as altered', async (_name, index, edit) => {
    const report = await verifyReceipt(signed(editEntry(chain(committedSteps()), index, edit)), publicKey);
    expect(report.valid).toBe(false);
    expect(report.tamper_evident).toBe(false);
    expect(report.problems[0]).toMatchObject({ code: 'altered_entry', entry: index });
    expect(report.problems[0]?.message).toContain('was altered');
  });

  // seed: tests/test_receipts.py Receipts test_removed_entry_is_detected
  it('verify: a removed AUTHORIZED entry is a chain break, out of order', async () => {
    const entries = chain(committedSteps()).filter((entry) => entry.kind !== 'AUTHORIZED');
    const report = await verifyReceipt(receiptOf(entries));
    expect(report.tamper_evident).toBe(false);
    expect(report.problems[0]).toMatchObject({ code: 'chain_break', entry: 1, kind: 'DISPATCHED' });
    expect(report.problems[0]?.message).toContain('out of order');
    expect(codes(report)).toContain('send_without_authorization');
  });

  it('verify: a removed first entry breaks the chain at entry 0 and loses the proposal', async () => {
    const report = await verifyReceipt(receiptOf(chain(committedSteps()).slice(1)));
    expect(codes(report)).toEqual(['chain_break', 'no_initial_proposal']);
  });

  it('verify: reordered entries are a chain break', async () => {
    const entries = chain(committedSteps());
    const [proposed, authorized, dispatched, committed] = entries as [Entry, Entry, Entry, Entry];
    const report = await verifyReceipt(receiptOf([proposed, dispatched, authorized, committed]));
    expect(report.tamper_evident).toBe(false);
    expect(codes(report).filter((code) => code === 'chain_break').length).toBeGreaterThan(0);
    expect(report.problems.every((p) => p.code !== 'chain_break' || p.message.includes('out of order'))).toBe(true);
  });

  it('verify: an entry forged from another effect is a foreign entry', async () => {
    const entries = chain(dispatchedSteps());
    const otherCommit = entryAt(buildChain(OTHER_EFFECT_ID, committedSteps()), 3);
    const forged = { ...otherCommit, prev: entryAt(entries, -1).hash };
    const report = await verifyReceipt(receiptOf([...entries, forged]));
    expect(report.problems[0]).toMatchObject({ code: 'foreign_entry', entry: 3, kind: 'COMMITTED' });
    expect(report.tamper_evident).toBe(false);
  });

  // seed: tests/test_receipts.py Receipts test_rewritten_chain_fails_the_signature;
  // tests/test_scenario_github_merge.py Systems test_forged_receipt_passes_unsigned_fails_signed
  it('verify: a rewritten and resealed chain holds together but fails the signature', async () => {
    const original = signed(chain(committedSteps()));
    const rewritten = reseal(editEntry(chain(committedSteps()), 2, (e) => Object.assign(e.effect as JsonObject, { amount: 9_999 })));
    const report = await verifyReceipt({ ...original, entries: rewritten as JsonObject[] }, publicKey);
    expect(report).toMatchObject({ tamper_evident: true, signed: false, valid: false });
    expect(codes(report)).toEqual(['bad_signature']);
    expect(await verifyReceipt({ ...original, entries: rewritten as JsonObject[] })).toMatchObject({ valid: true, signed: null });
  });

  it('verify: entries cut off the end fail the signature, and go undetected without a key', async () => {
    const original = signed(chain(committedSteps()));
    const truncated = { ...original, entries: (original.entries as JsonObject[]).slice(0, 3) };
    expect(codes(await verifyReceipt(truncated, publicKey))).toEqual(['bad_signature']);
    expect(await verifyReceipt(truncated)).toMatchObject({ valid: true, signed: null, happened: 'unknown' });
  });
});

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** The same bytes spelled otherwise: the last character of a 64-byte signature carries 4 spare bits, all zero when canonical. */
function withSpareBitSet(signature: string): string {
  const last = BASE64URL.indexOf(signature.at(-1)!);
  expect(Buffer.from(signature.slice(0, -1) + BASE64URL[last + 1], 'base64url')).toEqual(Buffer.from(signature, 'base64url'));
  return signature.slice(0, -1) + BASE64URL[last + 1];
}

describe('verify: keys and signatures', () => {
  const other = generateKeyPairSync('ed25519');
  const otherKey: SigningKey = {
    keyId: keyIdFor(other.publicKey),
    privateKey: other.privateKey,
    publicKeyPem: other.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
  const rsaPem = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const good = () => signed(chain(committedSteps()));
  const table: [string, () => JsonObject, Parameters<typeof verifyReceipt>[1], VerifyProblemCode[], boolean | null][] = [
    ['the right key by id verifies', good, keyRing, [], true],
    ['one PEM key verifies', good, publicKey, [], true],
    ['one CryptoKey verifies', good, cryptoKey, [], true],
    ['the published key set, as keysFromKeySet reads it, verifies', good, keysFromKeySet(JSON.parse(JSON.stringify(publicKeySet([key])))), [], true],
    ['a CryptoKey ring verifies', good, new Map([[key.keyId, cryptoKey]]), [], true],
    ['another public key fails the signature', good, otherKey.publicKeyPem, ['bad_signature'], false],
    ['one PEM text that is no key is unknown', good, 'not a pem', ['unknown_key'], false],
    ['an RSA key published under the id is unknown', good, new Map([[key.keyId, rsaPem]]), ['unknown_key'], false],
    ['a key id nobody published is unknown', good, new Map([[otherKey.keyId, otherKey.publicKeyPem]]), ['unknown_key'], false],
    ['a receipt without key_id is unknown to a key ring', () => ({ ...good(), key_id: null }), keyRing, ['unknown_key'], false],
    ['an unreadable published key is unknown', good, new Map([[key.keyId, 'not a pem']]), ['unknown_key'], false],
    ['a receipt signed by another key fails', () => signReceipt(EFFECT_ID, chain(committedSteps()), otherKey) as unknown as JsonObject, publicKey, ['bad_signature'], false],
    ['a missing signature fails', () => { const { signature: _dropped, ...rest } = good(); return rest; }, publicKey, ['bad_signature'], false],
    ['a non-string signature fails', () => ({ ...good(), signature: 42 }), publicKey, ['bad_signature'], false],
    ['a signature in another spelling fails', () => ({ ...good(), signature: `${good().signature}==` }), publicKey, ['bad_signature'], false],
    ['a signature in standard base64 fails', () => ({ ...good(), signature: Buffer.from(String(good().signature), 'base64url').toString('base64') }), publicKey, ['bad_signature'], false],
    ['a signature with its spare bits set fails', () => ({ ...good(), signature: withSpareBitSet(String(good().signature)) }), publicKey, ['bad_signature'], false],
    ['a signature for another effect fails', () => ({ ...signReceipt(EFFECT_ID, [], key), entries: good().entries }) as unknown as JsonObject, publicKey, ['bad_signature'], false],
  ];
  it.each(table)('verify: %s', async (_name, receipt, keys, expectedCodes, expectedSigned) => {
    const report = await verifyReceipt(receipt(), keys);
    expect(codes(report)).toEqual(expectedCodes);
    expect(report.signed).toBe(expectedSigned);
  });
});

describe('verify: shape', () => {
  // seed: tests/test_review_fixes.py ReviewFixes test_verify_rejects_a_forged_lone_commit_and_an_empty_receipt
  it('verify: an empty receipt is not valid, even signed', async () => {
    const report = await verifyReceipt(signReceipt(EFFECT_ID, [], key), publicKey);
    expect(report).toMatchObject({ valid: false, signed: true, happened: false });
    expect(codes(report)).toEqual(['empty_receipt']);
  });

  it('verify: a lone forged COMMITTED has no proposal and commits nothing that was sent', async () => {
    const report = await verifyReceipt(receiptOf(chain([['COMMITTED', { result: refundResult() }]])));
    expect(report.valid).toBe(false);
    expect(report.tamper_evident).toBe(true);
    expect(codes(report)).toEqual(['no_initial_proposal', 'orphan_commit']);
  });
});

describe('verify: the send pass', () => {
  // seed: tests/test_receipts.py Receipts test_refused_at_recovery_proves_nothing_was_sent
  const recoveryRefusals: [string, JsonObject, string][] = [
    ['stale_premise_at_recovery', liveChecks({ violations: ['amount changed'] }), 'stale_premise at recovery'],
    ['lease_at_recovery', liveChecks({ lease_live: false }), 'lease at recovery'],
  ];
  it.each(recoveryRefusals)('verify: a crash before the send refused at recovery (%s) proves nothing was sent', async (code, rechecked, reason) => {
    const report = await verifySteps([...dispatchedSteps(), ['REFUSED', { code, reason, resolves: true, rechecked }]]);
    expect(report).toMatchObject({
      valid: true,
      happened: false,
      happened_once: true,
      authorized_when_fired: null,
      assumptions_held: null,
      refused: reason,
      rechecked_at_recovery: rechecked,
      evidence: null,
    });
  });

  // seed: tests/test_receipts.py Receipts test_ambiguous_is_reported_as_unknown
  it('verify: a tier-3 crash left AMBIGUOUS has happened unknown', async () => {
    const rechecked = liveChecks();
    const report = await verifySteps([...dispatchedSteps(), ['AMBIGUOUS', { code: 'ambiguous', rechecked }]]);
    expect(report).toMatchObject({ valid: true, happened: 'unknown', happened_once: true, authorized_when_fired: true, refused: null });
    expect(report.rechecked_at_recovery).toEqual(rechecked);
  });

  it('verify: a send still open has happened unknown', async () => {
    expect(await verifySteps(dispatchedSteps())).toMatchObject({ valid: true, happened: 'unknown', authorized_when_fired: true });
  });

  it('verify: a refusal before any send is not a send and names the reason', async () => {
    const report = await verifySteps([
      ['PROPOSED', { lease: LEASE, premises: PREMISES, effect: REFUND }],
      ['REFUSED', { code: 'lease', reason: 'lease', checks: liveChecks({ lease_live: false }) }],
    ]);
    expect(report).toMatchObject({ valid: true, happened: false, refused: 'lease', authorized_when_fired: null });
  });

  // seed: tests/test_receipts.py Receipts test_crash_recovered_by_retry_still_proves_the_recheck
  it('verify: a crash recovered by an idempotent retry proves the recheck, and the resend counts as a send', async () => {
    const rechecked = liveChecks();
    const report = await verifySteps([...dispatchedSteps(), ['COMMITTED', { via: 'retry-idempotent', rechecked, result: refundResult() }]]);
    expect(report).toMatchObject({ valid: true, happened: true, happened_once: true, authorized_when_fired: true, assumptions_held: true });
    expect(report.rechecked_at_recovery).toEqual(rechecked);
  });

  // seed: tests/test_receipts.py Receipts test_revoked_at_recovery_does_not_claim_it_was_authorized
  it('verify: a resend after the lease was revoked does not claim it was authorized', async () => {
    const rechecked = liveChecks({ lease_live: false });
    const report = await verifySteps([...dispatchedSteps(), ['COMMITTED', { via: 'recovery-reapply', rechecked, result: refundResult() }]]);
    expect(report).toMatchObject({ valid: false, happened: true, authorized_when_fired: false, assumptions_held: true });
    expect(report.problems).toEqual([expect.objectContaining({ code: 'lease_not_attested', entry: 3, kind: 'COMMITTED' })]);
  });

  it('verify: a lookup that found the refund is the evidence', async () => {
    const report = await verifySteps([...dispatchedSteps(), ['COMMITTED', { via: 'recovery-query', rechecked: liveChecks(), found: 're_found' }]]);
    expect(report).toMatchObject({ valid: true, evidence: 're_found', happened: true });
  });

  // seed: tests/test_merge_defects.py TargetErrorIsFinal test_receipt_flags_a_send_after_a_target_error
  it('verify: a resend after a target error without a new escalation is flagged and breaks happened once', async () => {
    const report = await verifySteps([
      ...dispatchedSteps(),
      ['REFUSED', { code: 'target_error', reason: 'target reported failure: card_declined', resolves: true }],
      ['DISPATCHED', { effect: REFUND, lease: LEASE, premises: PREMISES, checks: liveChecks() }],
      ['COMMITTED', { result: refundResult() }],
    ]);
    expect(codes(report)).toEqual(['send_after_target_failure']);
    expect(report).toMatchObject({ happened: true, happened_once: false, authorized_when_fired: true });
  });

  it('verify: a send after a target error is allowed once an escalation came in between', async () => {
    const report = await verifySteps([
      ...dispatchedSteps(),
      ['REFUSED', { code: 'target_error', reason: 'declined', resolves: true }],
      ...personApprovedSteps().slice(1),
    ]);
    expect(codes(report)).toEqual([]);
    expect(report).toMatchObject({ valid: true, happened_once: true, approved_by: 'ann' });
  });

  const sendProblems: [string, Step[], VerifyProblemCode[], boolean][] = [
    [
      'a second send while the first is open',
      [...dispatchedSteps(), ['DISPATCHED', { effect: REFUND, lease: LEASE, premises: PREMISES, checks: liveChecks() }]],
      ['send_while_open'],
      false,
    ],
    [
      'a send with no AUTHORIZED before it',
      [
        ['PROPOSED', { lease: LEASE, premises: PREMISES, effect: REFUND }],
        ['DISPATCHED', { effect: REFUND, lease: LEASE, premises: PREMISES, checks: liveChecks() }],
      ],
      ['send_without_authorization'],
      true,
    ],
    ['a commit after the send was already committed', [...committedSteps(), ['COMMITTED', { result: refundResult() }]], ['orphan_commit', 'multiple_commits'], false],
  ];
  it.each(sendProblems)('verify: %s is a problem', async (_name, steps, expectedCodes, once) => {
    const report = await verifySteps(steps);
    expect(codes(report)).toEqual(expectedCodes);
    expect(report.happened_once).toBe(once);
  });
});

describe('verify: lease and premises attestation', () => {
  // seed: tests/test_runtime_gate_parity.py GateParity test_verify_reads_the_runtime_snapshot_shape
  const grant = { lease_id: LEASE, max_cents: 5_000, revoked: null, granted: 1_700_000_000 };
  const table: [string, JsonObject, JsonObject, boolean][] = [
    ['a live lease with no store description', liveChecks(), REFUND, true],
    ['a live grant within its cap', liveChecks({ lease: grant }), REFUND, true],
    ['a live grant with no cap', liveChecks({ lease: { ...grant, max_cents: null } }), { ...REFUND, amount: 10 ** 9 }, true],
    ['an amount exactly at the cap', liveChecks({ lease: grant }), { ...REFUND, amount: 5_000 }, true],
    ['lease_live false', liveChecks({ lease_live: false }), REFUND, false],
    ['lease_live missing', { lease: null, violations: [] }, REFUND, false],
    ['lease_live truthy but not true', liveChecks({ lease_live: 1 }), REFUND, false],
    ['a revoked grant snapshot', liveChecks({ lease: { ...grant, revoked: 1_700_000_500 } }), REFUND, false],
    ['an amount over max_cents', liveChecks({ lease: grant }), { ...REFUND, amount: 5_001 }, false],
    ['a boolean amount under a cap', liveChecks({ lease: grant }), { ...REFUND, amount: true }, false],
    ['a fractional amount under a cap', liveChecks({ lease: grant }), { ...REFUND, amount: 10.5 }, false],
    ['a missing amount under a cap', liveChecks({ lease: grant }), { order: '881' }, false],
    ['a cap that is not a number', liveChecks({ lease: { ...grant, max_cents: '5000' } }), REFUND, false],
    ['use problems from a reserving store', liveChecks({ use_problems: ['already used by 0123456789ab'] }), REFUND, false],
    ['problems in the grant description', liveChecks({ lease: { approval: 'A1', problems: ['expired'] } }), REFUND, false],
  ];
  it.each(table)('verify: a send with %s -> authorized_when_fired %s', async (_name, checks, effect, held) => {
    const report = await verifySteps(dispatchedSteps({ checks, effect }));
    expect(report.authorized_when_fired).toBe(held);
    expect(codes(report)).toEqual(held ? [] : ['lease_not_attested']);
  });

  const premises: [string, JsonObject, boolean][] = [
    ['no violations', liveChecks(), true],
    ['a violation', liveChecks({ violations: ['refunded changed'] }), false],
    ['violations missing', { lease_live: true, lease: null }, false],
    ['violations not a list', liveChecks({ violations: {} }), false],
  ];
  it.each(premises)('verify: a send with %s -> assumptions_held %s', async (_name, checks, held) => {
    const report = await verifySteps(dispatchedSteps({ checks }));
    expect(report.assumptions_held).toBe(held);
    expect(codes(report)).toEqual(held ? [] : ['premises_not_attested']);
  });

  it('verify: a refused send is dropped from the claims, so a later good send stands alone', async () => {
    const report = await verifySteps([
      ...dispatchedSteps({ checks: liveChecks({ lease_live: false }) }),
      ['REFUSED', { code: 'lease_at_recovery', reason: 'lease at recovery', resolves: true }],
    ]);
    expect(report).toMatchObject({ valid: true, authorized_when_fired: null });
  });
});

describe('verify: the people pass', () => {
  // seed: tests/test_escalation_receipts.py EscalationReceipts test_person_approved_send_verifies
  it('verify: a person-approved send verifies and names the approver', async () => {
    const report = await verifySteps(personApprovedSteps());
    expect(report).toMatchObject({ valid: true, approved_by: 'ann', approval_verified: true, happened: true });
    expect(report.escalations).toEqual([
      {
        at_ms: escalatedFields().at_ms,
        reason: 'needs_judgment',
        group: 'refunds',
        routed_to: ['ann', 'bob'],
        level: 0,
        breach: false,
        changes: [],
        repairs: 0,
        decision: { by: 'ann', decision: 'approve', at_ms: 1_700_000_060_000 },
      },
    ]);
  });

  // seed: tests/test_escalation_receipts.py EscalationReceipts test_legacy_person_lease_stays_valid
  it('verify: a legacy person lease without an escalation on a chain with none passes unchecked', async () => {
    const lease = { by: 'ann', at_ms: 1, group: 'refunds' };
    const report = await verifySteps(committedSteps({ lease }));
    expect(report).toMatchObject({ valid: true, approved_by: 'ann', approval_verified: null });
  });

  it('verify: a policy lease is no person', async () => {
    const report = await verifySteps(committedSteps({ lease: { by: 'policy', rules: ['small'] } }));
    expect(report).toMatchObject({ valid: true, approved_by: null });
  });

  const stale = escalatedFields({ level: 1, at_ms: 1_700_000_900_000 });
  const table: [string, Step[], VerifyProblemCode[]][] = [
    [
      // seed: tests/test_escalation_receipts.py EscalationReceipts test_send_citing_superseded_escalation_is_a_problem
      'a decision and a send citing a superseded escalation',
      [
        ['PROPOSED', { lease: null, premises: PREMISES, effect: REFUND }],
        ['ESCALATED', escalatedFields()],
        ['ESCALATED', stale],
        ['DECIDED', (sealed) => ({ ...decidedFields()(sealed), escalation: entryAt(sealed, 1).hash })],
        ['AUTHORIZED', (sealed) => ({ lease: personLease(sealed, { escalation: entryAt(sealed, 1).hash }) })],
        ['DISPATCHED', (sealed) => ({ effect: REFUND, lease: personLease(sealed, { escalation: entryAt(sealed, 1).hash }), premises: PREMISES, checks: liveChecks() })],
      ],
      ['decision_not_for_latest', 'sent_without_decision'],
    ],
    [
      // seed: tests/test_escalation_receipts.py EscalationReceipts test_decision_by_someone_not_routed_is_a_problem
      'a decision by someone outside the group',
      personApprovedSteps({ decided: { by: 'mallory' }, lease: { by: 'mallory' } }),
      ['decider_not_routed'],
    ],
    ['a decision naming another group', personApprovedSteps({ decided: { group: 'finance' } }), ['decider_not_routed', 'decision_mismatch']],
    [
      // seed: tests/test_escalation_receipts.py EscalationReceipts test_two_decisions_on_one_escalation_is_a_problem
      'two decisions on one escalation',
      personApprovedSteps({ beforeSend: [['DECIDED', decidedFields({ by: 'bob', at_ms: 1_700_000_070_000 })]] }),
      ['decided_twice'],
    ],
    [
      // seed: tests/test_escalation_receipts.py EscalationReceipts test_policy_send_after_escalation_is_a_problem
      'a policy send after an escalation',
      [
        ['PROPOSED', { lease: null, premises: PREMISES, effect: REFUND }],
        ['ESCALATED', escalatedFields()],
        ...committedSteps({ lease: { by: 'policy', rules: ['small'] } }).slice(1),
      ],
      ['sent_without_decision'],
    ],
    [
      // seed: tests/test_escalation_receipts.py EscalationReceipts test_decision_after_the_send_is_a_problem
      'a decision after the send',
      [
        ['PROPOSED', { lease: null, premises: PREMISES, effect: REFUND }],
        ['ESCALATED', escalatedFields()],
        ['AUTHORIZED', (sealed) => ({ lease: personLease(sealed) })],
        ['DISPATCHED', (sealed) => ({ effect: REFUND, lease: personLease(sealed), premises: PREMISES, checks: liveChecks() })],
        ['DECIDED', decidedFields()],
        ['COMMITTED', { result: refundResult() }],
      ],
      ['decision_mismatch'],
    ],
    ['a lease whose time differs from the decision', personApprovedSteps({ lease: { at_ms: 5 } }), ['decision_mismatch']],
    ['a lease naming another approver', personApprovedSteps({ lease: { by: 'bob' } }), ['decision_mismatch']],
    [
      // seed: tests/test_escalation_receipts.py EscalationReceipts test_send_on_facts_the_approver_never_saw_is_a_problem
      'a send on facts the approver never saw',
      personApprovedSteps({ premises: { ...PREMISES, refunded: 500 } }),
      ['facts_not_seen_by_approver'],
    ],
    [
      // seed: tests/test_escalation_receipts.py EscalationReceipts test_send_after_close_is_a_problem
      'a send after a person rejected it',
      personApprovedSteps({ decided: { decision: 'reject' } }),
      ['sent_after_close', 'decision_mismatch'],
    ],
    [
      // seed: tests/test_escalation_receipts.py EscalationReceipts test_send_citing_an_escalation_not_in_the_receipt_is_a_problem
      'a send citing an escalation not in the receipt',
      committedSteps({ lease: { by: 'ann', at_ms: 1, group: 'refunds', escalation: 'f'.repeat(64) } }),
      ['cites_missing_escalation'],
    ],
  ];
  it.each(table)('verify: %s is a problem', async (_name, steps, expectedCodes) => {
    const report = await verifySteps(steps);
    expect(codes(report)).toEqual(expectedCodes);
    expect(report.valid).toBe(false);
    if (steps.some(([kind]) => kind === 'ESCALATED')) expect(report.approval_verified).toBe(false);
  });

  it('verify: a send without any decision after an escalation is a problem', async () => {
    const report = await verifySteps([
      ['PROPOSED', { lease: null, premises: PREMISES, effect: REFUND }],
      ['ESCALATED', escalatedFields()],
      ...committedSteps().slice(1),
    ]);
    expect(codes(report)).toEqual(['sent_without_decision']);
    expect(report.approval_verified).toBe(false);
  });

  it('verify: the escalation history records the first decision and counts repairs', async () => {
    const repairs = [{ code: 'still_fits', set: {}, why: 'still fits' }];
    const report = await verifySteps([
      ['PROPOSED', { lease: null, premises: PREMISES, effect: REFUND }],
      ['ESCALATED', escalatedFields({ repairs, reason: 'stale_premise' })],
      ['DECIDED', decidedFields({ decision: 'reject' })],
    ]);
    expect(report).toMatchObject({ valid: true, happened: false, approval_verified: true, approved_by: null });
    expect(report.escalations[0]).toMatchObject({ repairs: 1, reason: 'stale_premise', decision: { by: 'ann', decision: 'reject' } });
  });
});

describe('verify: the confirmation pass', () => {
  const confirmed = (overrides: JsonObject = {}): Step => ['CONFIRMED', confirmedFields(overrides)];
  const table: [string, Step[], VerifyProblemCode[]][] = [
    ['a matching confirmation', [...committedSteps(), confirmed()], []],
    // seed: tests/test_escalation_receipts.py EscalationReceipts test_confirmation_without_send_or_wrong_amount_is_a_problem
    ['a confirmation of another amount', [...committedSteps(), confirmed({ amount: 1_999 })], ['confirmed_amount_mismatch']],
    ['a confirmation before any send', [['PROPOSED', { lease: LEASE, premises: PREMISES, effect: REFUND }], confirmed()], ['confirmation_without_send']],
    // seed: tests/test_escalation_fixes.py Confirmations test_confirmation_of_another_refund_id_is_refused_and_flagged
    ['a confirmation of another refund', [...committedSteps(), confirmed({ refund: 're_other' })], ['confirmed_other_refund']],
    // seed: tests/test_escalation_receipts.py EscalationReceipts test_two_refund_ids_break_happened_once
    [
      'two refund ids for one uncommitted send',
      [...dispatchedSteps(), confirmed({ refund: 're_a' }), confirmed({ refund: 're_b', event: 'evt_2' })],
      ['confirmed_multiple_refunds'],
    ],
    // seed: tests/test_escalation_receipts.py EscalationReceipts test_confirmation_of_never_landed_effect_is_a_problem
    [
      'a succeeded confirmation of a send that never landed',
      [...dispatchedSteps(), ['REFUSED', { code: 'target_error', reason: 'declined', resolves: true }], confirmed()],
      ['confirmed_never_landed'],
    ],
    [
      'a failed confirmation of a send that never landed',
      [...dispatchedSteps(), ['REFUSED', { code: 'target_error', reason: 'declined', resolves: true }], confirmed({ status: 'failed' })],
      [],
    ],
    // seed: tests/test_escalation_fixes.py Confirmations test_confirmed_resend_in_flight_after_resolved_refusal_verifies
    [
      'a confirmed resend still in flight after a resolved refusal',
      [
        ...dispatchedSteps(),
        ['REFUSED', { code: 'target_error', reason: 'declined', resolves: true }],
        ...personApprovedSteps().slice(1, -1),
        confirmed(),
      ],
      [],
    ],
  ];
  it.each(table)('verify: confirmation pass, %s', async (_name, steps, expectedCodes) => {
    expect(codes(await verifySteps(steps))).toEqual(expectedCodes);
  });

  it('verify: two refund ids break happened once', async () => {
    const report = await verifySteps([...dispatchedSteps(), confirmed({ refund: 're_a' }), confirmed({ refund: 're_b' })]);
    expect(report.happened_once).toBe(false);
  });

  // seed: tests/test_escalation_receipts.py EscalationReceipts test_confirmed_by_target_follows_last_status
  const precedence: [string[], boolean | 'pending' | null][] = [
    [[], null],
    [['pending'], 'pending'],
    [['succeeded'], true],
    [['pending', 'succeeded'], true],
    [['succeeded', 'pending'], true],
    [['succeeded', 'failed'], false],
    [['failed', 'succeeded'], false],
    [['canceled'], false],
    [['requires_action'], 'pending'],
  ];
  it.each(precedence)('verify: confirmations %j -> confirmed_by_target %s', async (statuses, expected) => {
    const steps: Step[] = [
      ...committedSteps(),
      ...statuses.map((status, i): Step => confirmed({ status, event: `evt_${i}` })),
    ];
    const report = await verifySteps(steps);
    expect(report.confirmed_by_target).toBe(expected);
    expect(report.confirmation.map((item) => item.status)).toEqual(statuses);
    expect(report.confirmation[0] ?? null).toEqual(
      statuses.length === 0 ? null : { via: 'webhook', event: 'evt_0', refund: REFUND_ID, status: statuses[0] },
    );
  });
});

describe('verify: malformed input never throws', () => {
  const cyclic: JsonObject = { effect_id: EFFECT_ID };
  (cyclic as Record<string, unknown>).entries = [cyclic];
  const good = () => receiptOf(chain(committedSteps()));
  const table: [string, unknown][] = [
    ['undefined', undefined],
    ['null', null],
    ['a number', 42],
    ['a string', 'receipt'],
    ['a list', []],
    ['an object without effect_id', { entries: [] }],
    ['a numeric effect_id', { effect_id: 7, entries: [] }],
    ['entries not a list', { effect_id: EFFECT_ID, entries: 'none' }],
    ['entries holding a number', { effect_id: EFFECT_ID, entries: [1] }],
    ['entries holding null', { effect_id: EFFECT_ID, entries: [null] }],
    ['a cyclic receipt', cyclic],
    ['a bigint amount', { effect_id: EFFECT_ID, entries: [{ amount: 10n }] }],
    ['a non-finite amount', { effect_id: EFFECT_ID, entries: [{ amount: Number.NaN }] }],
  ];
  it.each(table)('verify: %s is a malformed receipt', async (_name, input) => {
    for (const keys of [undefined, publicKey, keyRing]) {
      const report = await verifyReceipt(input, keys);
      expect(report.valid).toBe(false);
      expect(codes(report)).toEqual(['malformed_receipt']);
      expect(report.signed).toBe(keys === undefined ? null : false);
    }
  });

  const entryDefects: [string, (entry: JsonObject) => void][] = [
    ['a missing hash', (e) => delete e.hash],
    ['a numeric hash', (e) => Object.assign(e, { hash: 1 })],
    ['a missing kind', (e) => delete e.kind],
    ['a missing prev', (e) => delete e.prev],
  ];
  // seed: tests/test_escalation_fixes.py TamperedReceipt test_missing_hash_or_kind_is_a_problem
  it.each(entryDefects)('verify: an entry with %s is a malformed entry, reported not thrown', async (_name, edit) => {
    const entries = editEntry(chain(committedSteps()), 2, edit);
    const report = await verifyReceipt({ ...good(), entries: entries as JsonObject[] }, publicKey);
    expect(report.valid).toBe(false);
    expect(report.tamper_evident).toBe(false);
    expect(report.problems).toContainEqual(expect.objectContaining({ code: 'malformed_receipt', entry: 2 }));
  });

  it('verify: a string with no canonical form is an altered entry, not a crash', async () => {
    const entries = editEntry(chain(committedSteps()), 0, (e) => Object.assign(e, { agent: '\ud800' }));
    expect(codes(await verifyReceipt(receiptOf(entries)))).toEqual(['altered_entry']);
  });
});

describe('verify: the command line', () => {
  const cliDir = mkdtempSync(join(tmpdir(), 'interlock-verify-cli-'));
  afterAll(() => rmSync(cliDir, { recursive: true, force: true }));
  const write = (name: string, value: unknown) => {
    const path = join(cliDir, name);
    writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
    return path;
  };
  const receipt = signed(chain(committedSteps()));
  const validPath = write('valid.json', receipt);
  const tampered = editEntry(receipt.entries as Entry[], 2, (e) => Object.assign(e.effect as JsonObject, { amount: 200_000 }));
  const tamperedPath = write('tampered.json', { ...receipt, entries: tampered });
  const pemPath = join(dataDir, PUBLIC_KEY_FILE);
  const keysPath = write('keys.json', publicKeySet([key]));

  function runNode(args: string[]) {
    return spawnSync(process.execPath, ['--enable-source-maps', compiledEntry('verify'), ...args], {
      cwd: join(import.meta.dirname, '..', '..'),
      encoding: 'utf8',
    });
  }

  it('verify-cli: a valid receipt with its key exits 0 and prints the report', async () => {
    const run = runNode([validPath, '--key', pemPath]);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ valid: true, signed: true, key_id: key.keyId });
  });

  it('verify-cli: a tampered receipt exits 1 and names the altered entry', async () => {
    const run = runNode([tamperedPath, '--key', pemPath]);
    expect(run.status).toBe(1);
    const report = JSON.parse(run.stdout) as VerifyReport;
    expect(report.problems[0]).toMatchObject({ code: 'altered_entry', entry: 2 });
  });

  it('verify-cli: a published key set verifies by key id', async () => {
    const outcome = await runVerifyCli([validPath, '--keys', keysPath]);
    expect(outcome.exitCode).toBe(0);
    expect(JSON.parse(outcome.stdout)).toMatchObject({ valid: true, signed: true });
  });

  it('verify-cli: without a key it checks the chain only', async () => {
    const outcome = await runVerifyCli([validPath]);
    expect(outcome.exitCode).toBe(0);
    expect(JSON.parse(outcome.stdout)).toMatchObject({ valid: true, signed: null });
  });

  const usage: [string, string[], RegExp][] = [
    ['no receipt', [], /expected one receipt file, got 0/],
    ['two receipts', [validPath, validPath], /expected one receipt file, got 2/],
    ['an unknown option', [validPath, '--secret', 'x'], /Unknown option/],
    ['--key without a value', [validPath, '--key'], /argument missing|--key/],
    ['both --key and --keys', [validPath, '--key', pemPath, '--keys', keysPath], /not both/],
    ['a missing receipt file', [join(cliDir, 'nope.json')], /cannot read receipt file/],
    ['a receipt that is not JSON', [write('text.json', 'not json')], /is not JSON/],
    ['a key file that is not PEM', [validPath, '--key', write('bad.pem', 'nope')], /not a PEM public key/],
    ['a key set that is not one', [validPath, '--keys', write('bad-keys.json', { keys: 1 })], /not a usable key set/],
  ];
  it.each(usage)('verify-cli: %s is a usage error with exit 2', async (_name, args, message) => {
    const outcome = await runVerifyCli(args);
    expect(outcome.exitCode).toBe(2);
    expect(outcome.stdout).toBe('');
    expect(outcome.stderr).toMatch(message);
    expect(outcome.stderr).toMatch(/^usage: .+ <receipt\.json> \[--key /m);
  });

  it('verify-cli: a usage error exits 2 from the real process too', async () => {
    const run = runNode([]);
    expect(run.status).toBe(2);
    // Named as it was started: node on the compiled tool.
    expect(run.stderr).toContain(`usage: node ${relative(join(import.meta.dirname, '..', '..'), compiledEntry('verify'))} <receipt.json> [--key`);
  });
});
