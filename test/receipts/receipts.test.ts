import { createHash, createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Entry } from '../../shared/entries.ts';
import {
  keyIdFor,
  loadOrCreateSigningKey,
  PUBLIC_KEY_FILE,
  parsePublicKeySet,
  publicKeySet,
  SIGNING_KEY_FILE,
} from '../../server/receipts/keys.ts';
import { finalStatus, statusRank } from '../../server/journal/confirmations.ts';
import {
  legacyReceiptSigningInput,
  type ReceiptSummary,
  receiptSigningInput,
  sentRefund,
  signReceipt,
  summarize,
} from '../../server/receipts/receipts.ts';
import {
  buildChain,
  committedSteps,
  dispatchedSteps,
  EFFECT_ID,
  entryAt,
  LEASE,
  OTHER_EFFECT_ID,
  REFUND,
  REFUND_ID,
  type Step,
} from '../support/entries.ts';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-keys-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const person = { by: 'ann', at_ms: 1, group: 'refunds', escalation: 'e1' };

describe('summarize', () => {
  // seed: tests/test_interlock.py Receipts test_committed_is_executed, test_ambiguous_is_unknown_not_executed,
  // test_refused_at_recovery_was_not_executed
  const table: [string, Step[], Partial<ReceiptSummary>][] = [
    [
      'a committed refund was executed and recorded, under the lease of its send',
      committedSteps(),
      { proposed: true, authorized: true, executed: true, recorded: true, final: 'COMMITTED', authority: LEASE },
    ],
    [
      'an open send is unknown, and final is the last kind',
      dispatchedSteps(),
      { executed: 'unknown', recorded: false, final: 'DISPATCHED', authority: LEASE },
    ],
    [
      'an ambiguous send is unknown and AMBIGUOUS outranks a later refusal',
      [...dispatchedSteps(), ['AMBIGUOUS', { code: 'ambiguous' }], ['REFUSED', { code: 'ambiguous', reason: 'ambiguous' }]],
      { executed: 'unknown', final: 'AMBIGUOUS' },
    ],
    [
      'a send refused at recovery was not executed',
      [...dispatchedSteps(), ['REFUSED', { code: 'lease_at_recovery', reason: 'lease at recovery', resolves: true }]],
      { executed: false, recorded: false, final: 'REFUSED' },
    ],
    [
      'a refusal before any send has the first AUTHORIZED lease as authority, or none',
      [
        ['PROPOSED', { lease: 'L1' }],
        ['AUTHORIZED', { lease: 'L1' }],
        ['AUTHORIZED', { lease: 'L2' }],
        ['REFUSED', { code: 'stale_premise', reason: 'stale_premise' }],
      ],
      { proposed: true, authorized: true, executed: false, final: 'REFUSED', authority: 'L1' },
    ],
    [
      'the last DISPATCHED lease is the authority',
      [
        ...dispatchedSteps(),
        ['REFUSED', { code: 'target_error', reason: 'declined', resolves: true }],
        ['ESCALATED', {}],
        ['DISPATCHED', { lease: person }],
      ],
      { authority: person, executed: 'unknown' },
    ],
    [
      'CONFIRMED never closes a send',
      [...dispatchedSteps(), ['CONFIRMED', { status: 'succeeded' }]],
      { executed: 'unknown', final: 'CONFIRMED' },
    ],
  ];
  it.each(table)('summarize: %s', (_name, steps, expected) => {
    expect(summarize(buildChain(EFFECT_ID, steps))).toMatchObject({ effect_id: EFFECT_ID, ...expected });
  });

  it('summarize: an effect with no entries proves nothing', () => {
    expect(summarize([], EFFECT_ID)).toEqual({
      effect_id: EFFECT_ID,
      proposed: false,
      authorized: false,
      executed: false,
      recorded: false,
      final: null,
      authority: null,
    });
  });
});

describe('sentRefund', () => {
  const table: [string, Step[], string | null][] = [
    ['no commit has no refund', dispatchedSteps(), null],
    ['a send result names the refund', committedSteps(), REFUND_ID],
    ['a lookup names the refund it found', [...dispatchedSteps(), ['COMMITTED', { via: 'recovery-query', found: 're_found' }]], 're_found'],
    ['a result without a refund id names none, even with found', [...dispatchedSteps(), ['COMMITTED', { result: {}, found: 're_x' }]], null],
    ['a commit with neither names none', [...dispatchedSteps(), ['COMMITTED', { via: 'failed-but-landed' }]], null],
    [
      'the first commit is the one that counts',
      [...committedSteps(), ['COMMITTED', { result: { refund: 're_second' } }]],
      REFUND_ID,
    ],
  ];
  it.each(table)('sentRefund: %s', (_name, steps, expected) => {
    expect(sentRefund(buildChain(EFFECT_ID, steps))).toBe(expected);
  });
});

describe('finalStatus', () => {
  // seed: tests/test_escalation_fixes.py Confirmations test_receipt_reads_final_status_by_precedence
  const table: [string[], string | null][] = [
    [[], null],
    [['pending'], 'pending'],
    [['pending', 'requires_action'], 'requires_action'],
    [['succeeded', 'pending'], 'succeeded'],
    [['pending', 'succeeded'], 'succeeded'],
    [['failed', 'succeeded'], 'failed'],
    [['failed', 'canceled'], 'canceled'],
    [['canceled', 'failed'], 'failed'],
    [['succeeded', 'failed', 'pending'], 'failed'],
  ];
  it.each(table)('finalStatus: %j stands as %s', (statuses, expected) => {
    expect(finalStatus(statuses)).toBe(expected);
  });

  it('statusRank: a final status outranks succeeded, which outranks anything still moving', () => {
    expect([statusRank('failed'), statusRank('canceled'), statusRank('succeeded'), statusRank('pending')]).toEqual([2, 2, 1, 0]);
    expect(statusRank('toString')).toBe(0);
  });
});

describe('signReceipt', () => {
  it('signReceipt: signs v2, the JSON ["interlock-receipt-v2",2,<effect_id>,<last hash>,<key_id>], with Ed25519, base64url, with the key id', () => {
    const key = loadOrCreateSigningKey(tempDir());
    const entries = buildChain(EFFECT_ID, committedSteps());
    const receipt = signReceipt(EFFECT_ID, entries, key);
    expect(Object.keys(receipt).sort()).toEqual(['effect_id', 'entries', 'key_id', 'signature', 'v']);
    expect(receipt).toMatchObject({ v: 2, effect_id: EFFECT_ID, entries, key_id: key.keyId });
    expect(receipt.signature).toMatch(/^[A-Za-z0-9_-]{86}$/);
    const message = `["interlock-receipt-v2",2,"${EFFECT_ID}","${entryAt(entries, -1).hash}","${key.keyId}"]`;
    expect(receiptSigningInput(EFFECT_ID, entryAt(entries, -1).hash, key.keyId)).toBe(message);
    const signature = Buffer.from(receipt.signature, 'base64url');
    expect(verify(null, Buffer.from(message, 'utf8'), createPublicKey(key.publicKeyPem), signature)).toBe(true);
  });

  it('signReceipt: an empty chain signs the effect id with a null hash', () => {
    const key = loadOrCreateSigningKey(tempDir());
    const receipt = signReceipt(EFFECT_ID, [], key);
    const message = Buffer.from(`["interlock-receipt-v2",2,"${EFFECT_ID}",null,"${key.keyId}"]`, 'utf8');
    expect(verify(null, message, createPublicKey(key.publicKeyPem), Buffer.from(receipt.signature, 'base64url'))).toBe(true);
  });

  it('legacyReceiptSigningInput: v1 signed "interlock-receipt-v1:<effect_id>:<last hash>", empty when there is none', () => {
    expect(legacyReceiptSigningInput(EFFECT_ID, 'ab12')).toBe(`interlock-receipt-v1:${EFFECT_ID}:ab12`);
    expect(legacyReceiptSigningInput(EFFECT_ID, null)).toBe(`interlock-receipt-v1:${EFFECT_ID}:`);
  });

  it('signReceipt: an entry of another effect is our bug and fails loudly', () => {
    const key = loadOrCreateSigningKey(tempDir());
    const foreign: Entry[] = buildChain(OTHER_EFFECT_ID, committedSteps());
    expect(() => signReceipt(EFFECT_ID, foreign, key)).toThrow(/another|entry of/);
  });
});

describe('receipt signing key', () => {
  it('keys: the first start writes an Ed25519 key pair, the private key readable only by its owner', () => {
    const dir = tempDir();
    const key = loadOrCreateSigningKey(dir);
    const privateStat = statSync(join(dir, SIGNING_KEY_FILE));
    expect(privateStat.mode & 0o777).toBe(0o600);
    expect(readFileSync(join(dir, PUBLIC_KEY_FILE), 'utf8')).toBe(key.publicKeyPem);
    expect(key.privateKey.asymmetricKeyType).toBe('ed25519');
    const der = createPublicKey(key.publicKeyPem).export({ type: 'spki', format: 'der' });
    expect(key.keyId).toBe(createHash('sha256').update(der).digest('hex').slice(0, 16));
    expect(key.keyId).toMatch(/^[0-9a-f]{16}$/);
  });

  it('keys: a restart loads the same key, and rewrites a missing public key file', () => {
    const dir = tempDir();
    const first = loadOrCreateSigningKey(dir);
    rmSync(join(dir, PUBLIC_KEY_FILE));
    const second = loadOrCreateSigningKey(join(dir, '.'));
    expect(second.keyId).toBe(first.keyId);
    expect(second.publicKeyPem).toBe(first.publicKeyPem);
    expect(readFileSync(join(dir, PUBLIC_KEY_FILE), 'utf8')).toBe(first.publicKeyPem);
  });

  it('keys: a private key file that is not Ed25519 is refused with a clear message', () => {
    const dir = tempDir();
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    writeFileSync(join(dir, SIGNING_KEY_FILE), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    expect(() => loadOrCreateSigningKey(dir)).toThrow(/not an Ed25519 private key/);
  });

  it('keys: the published key set lists key id, alg and PEM, and reads back by key id', () => {
    const key = loadOrCreateSigningKey(tempDir());
    const set = publicKeySet([key]);
    expect(set).toEqual({ keys: [{ key_id: key.keyId, alg: 'Ed25519', public_key_pem: key.publicKeyPem }] });
    const parsed = parsePublicKeySet(JSON.parse(JSON.stringify(set)));
    expect([...parsed.keys()]).toEqual([key.keyId]);
    expect(parsed.get(key.keyId)).toBe(key.publicKeyPem);
    expect(keyIdFor(createPublicKey(parsed.get(key.keyId)!))).toBe(key.keyId);
  });

  const badSets: [string, unknown, RegExp][] = [
    ['not an object', 'keys', /"keys" list/],
    ['keys not a list', { keys: {} }, /"keys" list/],
    ['an item without key_id', { keys: [{ alg: 'Ed25519', public_key_pem: 'x' }] }, /key_id/],
    ['another alg', { keys: [{ key_id: 'k', alg: 'RS256', public_key_pem: 'x' }] }, /only Ed25519/],
    [
      'one key id twice',
      {
        keys: [
          { key_id: 'k', alg: 'Ed25519', public_key_pem: 'x' },
          { key_id: 'k', alg: 'Ed25519', public_key_pem: 'y' },
        ],
      },
      /keys\[1\] repeats key_id k/,
    ],
  ];
  it.each(badSets)('keys: a key set that is %s is refused', (_name, value, message) => {
    expect(() => parsePublicKeySet(value)).toThrow(message);
  });

  it('keys: a key set naming a key by another id is refused rather than trusted', () => {
    const key = loadOrCreateSigningKey(tempDir());
    const set = { keys: [{ key_id: '0000000000000000', alg: 'Ed25519', public_key_pem: key.publicKeyPem }] };
    expect(() => parsePublicKeySet(set)).toThrow(/does not match/);
  });

  it('signReceipt: an edit anywhere in the chain changes the signature', () => {
    // The signature covers the last hash, which covers every earlier entry through `prev`.
    const key = loadOrCreateSigningKey(tempDir());
    const a = signReceipt(EFFECT_ID, buildChain(EFFECT_ID, committedSteps()), key);
    const b = signReceipt(EFFECT_ID, buildChain(EFFECT_ID, committedSteps({ effect: { ...REFUND, amount: 1 } })), key);
    expect(a.signature).not.toBe(b.signature);
  });
});
