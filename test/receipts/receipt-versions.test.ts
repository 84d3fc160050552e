import { spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Entry } from '../../shared/entries.ts';
import type { JsonObject } from '../../shared/json.ts';
import { keyIdFor, type SigningKey } from '../../server/receipts/keys.ts';
import { signReceipt, type VerifyReport } from '../../server/receipts/receipts.ts';
import { verifyReceipt } from '../../server/receipts/verify.ts';
import { compiledEntry } from '../support/server-process.ts';

// Receipts say what their signature covers by their version `v`. v2 signs the key id with the
// effect id and the last hash; v1 (no `v`) signed only the last two, and receipts handed out then
// must verify forever, so a v1 receipt is kept frozen as a fixture.

const ROOT = join(import.meta.dirname, '..', '..');
const FIXTURES = join(ROOT, 'test', 'fixtures', 'receipts');

/**
 * v1-committed.json: WRITTEN ONCE by `signReceipt` of commit 81fb71f (the last code that signed
 * v1), over the chain of routine-1 in test/fixtures/journals/day-1.jsonl (PROPOSED, AUTHORIZED,
 * DISPATCHED, COMMITTED, CONFIRMED), with a key made for it whose public half is
 * v1-committed.pub.pem. Never regenerate it: its point is that this code's receipts still verify.
 */
const v1Receipt: JsonObject = JSON.parse(readFileSync(join(FIXTURES, 'v1-committed.json'), 'utf8'));
const v1KeyPath = join(FIXTURES, 'v1-committed.pub.pem');
const v1Key = readFileSync(v1KeyPath, 'utf8');

/** The same chain signed as today's code signs it, with a key of its own. */
const pair = generateKeyPairSync('ed25519');
const key: SigningKey = {
  keyId: keyIdFor(pair.publicKey),
  privateKey: pair.privateKey,
  publicKeyPem: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
};
const v2Receipt = signReceipt(String(v1Receipt.effect_id), v1Receipt.entries as unknown as Entry[], key) as unknown as JsonObject;
const keyRing = new Map([[key.keyId, key.publicKeyPem]]);

/** A receipt naming another key than the one that signed it, as an attacker would rewrite it. */
function withKeyId(receipt: JsonObject, keyId: string): JsonObject {
  return { ...receipt, key_id: keyId };
}
function codes(report: VerifyReport): string[] {
  return report.problems.map((problem) => problem.code);
}

describe('receipt versions: v1, signed before receipts carried a version', () => {
  it('a v1 receipt written by the v1 code carries no v and still verifies with its key', async () => {
    expect(v1Receipt.v).toBeUndefined();
    const report = await verifyReceipt(v1Receipt, v1Key);
    expect(codes(report)).toEqual([]);
    expect(report).toMatchObject({ valid: true, signed: true, tamper_evident: true, happened: true, key_id: v1Receipt.key_id });
  });

  it('a v1 receipt verifies by its key id in a published key set too', async () => {
    const report = await verifyReceipt(v1Receipt, new Map([[String(v1Receipt.key_id), v1Key]]));
    expect(report).toMatchObject({ valid: true, signed: true });
  });

  it('a v1 signature does not cover key_id: an edited one still verifies with the key given, which is what v2 mends', async () => {
    const report = await verifyReceipt(withKeyId(v1Receipt, '0000000000000000'), v1Key);
    expect(report).toMatchObject({ valid: true, signed: true, key_id: '0000000000000000' });
  });

  it('a v1 receipt with an entry cut off the end fails the signature, as before', async () => {
    const entries = v1Receipt.entries as JsonObject[];
    const report = await verifyReceipt({ ...v1Receipt, entries: entries.slice(0, -1) }, v1Key);
    expect(codes(report)).toEqual(['bad_signature']);
  });
});

describe('receipt versions: v2, whose signature covers the key id', () => {
  it('a v2 receipt carries v 2 and verifies, by one key or by key id', async () => {
    expect(v2Receipt.v).toBe(2);
    for (const keys of [key.publicKeyPem, keyRing]) {
      const report = await verifyReceipt(v2Receipt, keys);
      expect(codes(report)).toEqual([]);
      expect(report).toMatchObject({ valid: true, signed: true, key_id: key.keyId });
    }
  });

  it('a v2 receipt whose key_id was edited fails the signature, even checked with the right key', async () => {
    const report = await verifyReceipt(withKeyId(v2Receipt, '0000000000000000'), key.publicKeyPem);
    expect(codes(report)).toEqual(['bad_signature']);
    expect(report).toMatchObject({ valid: false, signed: false, key_id: '0000000000000000' });
  });

  it('a v2 receipt with its key_id removed fails the signature', async () => {
    const { key_id: _dropped, ...rest } = v2Receipt;
    expect(codes(await verifyReceipt(rest, key.publicKeyPem))).toEqual(['bad_signature']);
  });

  it('a v2 receipt with its v removed is read as v1, whose message it never signed: the signature fails', async () => {
    const { v: _dropped, ...rest } = v2Receipt;
    expect(codes(await verifyReceipt(rest, key.publicKeyPem))).toEqual(['bad_signature']);
  });

  it('a v1 signature under v 2 fails: the two versions never sign the same message', async () => {
    expect(codes(await verifyReceipt({ ...v1Receipt, v: 2 }, v1Key))).toEqual(['bad_signature']);
  });
});

describe('receipt versions: a version the verifier does not read', () => {
  const table: [string, unknown][] = [
    ['v 3', 3],
    ['v 1 written out (v1 receipts carry no v)', 1],
    ['v "2" as a string', '2'],
    ['v null', null],
  ];
  it.each(table)('%s is unsupported_version, checked no further, and says what to do', async (_name, v) => {
    const report = await verifyReceipt({ ...v2Receipt, v }, key.publicKeyPem);
    expect(codes(report)).toEqual(['unsupported_version']);
    expect(report).toMatchObject({ valid: false, signed: false, happened: 'unknown', effect_id: v2Receipt.effect_id, key_id: key.keyId });
    expect(report.problems[0]?.message).toMatch(/verify it with the Interlock release that signed it, or a newer one/);
  });

  it('without a key, an unknown version is still unsupported, and signed is null', async () => {
    const report = await verifyReceipt({ ...v2Receipt, v: 3 });
    expect(codes(report)).toEqual(['unsupported_version']);
    expect(report.signed).toBeNull();
  });
});

describe('receipt versions: npm run verify agrees', () => {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-receipt-versions-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, value: unknown) => {
    const path = join(dir, name);
    writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
    return path;
  };
  const v2KeyPath = write('v2.pub.pem', key.publicKeyPem);

  /** The verifier as `npm run verify` runs it: its own process, compiled. */
  function runVerify(args: string[]) {
    const run = spawnSync(process.execPath, ['--enable-source-maps', compiledEntry('verify'), ...args], { cwd: ROOT, encoding: 'utf8' });
    return { status: run.status, stderr: run.stderr, report: run.stdout === '' ? null : (JSON.parse(run.stdout) as VerifyReport) };
  }

  const table: [string, () => string, () => string, number, string[]][] = [
    ['the frozen v1 receipt with its key exits 0', () => v1KeyPath, () => join(FIXTURES, 'v1-committed.json'), 0, []],
    ['a v2 receipt with its key exits 0', () => v2KeyPath, () => write('v2.json', v2Receipt), 0, []],
    ['a v2 receipt with an edited key_id exits 1: bad_signature', () => v2KeyPath, () => write('v2-key-id.json', withKeyId(v2Receipt, '0000000000000000')), 1, ['bad_signature']],
    ['a v 3 receipt exits 1: unsupported_version', () => v2KeyPath, () => write('v3.json', { ...v2Receipt, v: 3 }), 1, ['unsupported_version']],
  ];
  it.each(table)('verify-cli: %s', (_name, keyPath, receiptPath, exitCode, expectedCodes) => {
    const run = runVerify([receiptPath(), '--key', keyPath()]);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(exitCode);
    expect(run.report === null ? null : codes(run.report)).toEqual(expectedCodes);
  });
});
