import { createHash, createPublicKey, type KeyObject, sign, verify } from 'node:crypto';
import type { SigningKey } from '../receipts/keys.ts';

// Checkpoints of the journal's global chain in the C2SP formats (c2sp.org/tlog-checkpoint and
// c2sp.org/signed-note): a body of three lines (origin, size, base64 of the 32-byte head), then
// an empty line, then one line per signature, `— <key name> <base64(key hash || signature)>`.
// Any tool that reads signed notes reads ours. Ed25519 only: the receipt key signs them.

/** What a checkpoint commits to: the journal (its origin), how many entries, and the global hash after the last. */
export interface Checkpoint {
  origin: string;
  size: number;
  /** The global chain's head, 64 lowercase hex characters. */
  head: string;
}

/**
 * The head of a checkpoint of no entries: SHA-256 of nothing, as C2SP's tlog-checkpoint gives an
 * empty log. A brand-new journal's first start signs one, so a mirror names the journal from its
 * first start on.
 */
export const EMPTY_CHECKPOINT_HEAD = createHash('sha256').update('').digest('hex');

/** Why a note was not accepted: a closed list. */
export const NOTE_PROBLEM_CODES = ['malformed_note', 'malformed_checkpoint', 'unknown_key', 'bad_signature'] as const;
export type NoteProblemCode = (typeof NOTE_PROBLEM_CODES)[number];

export type NoteReading = { ok: true; checkpoint: Checkpoint; keyName: string } | { ok: false; code: NoteProblemCode; message: string };

/** C2SP's algorithm byte for Ed25519 in key hashes and verifier keys. */
const ED25519 = 0x01;
const SIGNATURE_PREFIX = '\u2014 ';
/** A note with more signature lines than this is refused, as C2SP allows. */
const SIGNATURES_MAX = 100;
const ORIGIN_CHARS_MAX = 256;

/** The key name checkpoints are signed under: the receipt key's id. */
export function noteKeyName(keyId: string): string {
  return `interlock-${keyId}`;
}

/** The raw 32 bytes of an Ed25519 public key. */
function rawPublicKey(publicKey: KeyObject): Buffer {
  const der = publicKey.export({ type: 'spki', format: 'der' });
  return Buffer.from(der.subarray(der.length - 32));
}

/** The key hash: the first 4 bytes of SHA-256(name || "\n" || 0x01 || public key). */
export function noteKeyHash(name: string, publicKey: KeyObject): Buffer {
  return createHash('sha256')
    .update(Buffer.concat([Buffer.from(`${name}\n`, 'utf8'), Buffer.from([ED25519]), rawPublicKey(publicKey)]))
    .digest()
    .subarray(0, 4);
}

/** The verifier key string: `<name>+<key hash hex>+<base64(0x01 || public key)>`. */
export function verifierKey(name: string, publicKey: KeyObject): string {
  return `${name}+${noteKeyHash(name, publicKey).toString('hex')}+${Buffer.concat([Buffer.from([ED25519]), rawPublicKey(publicKey)]).toString('base64')}`;
}

/** A verifier key string read back: its name and the public key. */
export function parseVerifierKey(vkey: string): { name: string; publicKey: KeyObject } {
  // The name and the hash hold no '+'; the base64 key may.
  const first = vkey.indexOf('+');
  const second = vkey.indexOf('+', first + 1);
  if (first < 0 || second < 0) throw new Error('a verifier key is <name>+<hash>+<key>');
  const name = vkey.slice(0, first);
  const hash = vkey.slice(first + 1, second);
  const key = vkey.slice(second + 1);
  const bytes = Buffer.from(key, 'base64');
  if (!validKeyName(name) || bytes.length !== 33 || bytes[0] !== ED25519 || bytes.toString('base64') !== key) throw new Error('not an Ed25519 verifier key');
  const publicKey = createPublicKey({ key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), bytes.subarray(1)]), format: 'der', type: 'spki' });
  if (noteKeyHash(name, publicKey).toString('hex') !== hash) throw new Error('the verifier key’s hash does not match its key');
  return { name, publicKey };
}

function validKeyName(name: string): boolean {
  return name.length > 0 && !/[\s+]/u.test(name);
}

/** The checkpoint's body: origin, size and base64 head, each line ending in a newline. */
export function checkpointBody(checkpoint: Checkpoint): string {
  const problem = checkpointProblem(checkpoint);
  if (problem !== null) throw new TypeError(problem);
  return `${checkpoint.origin}\n${checkpoint.size}\n${Buffer.from(checkpoint.head, 'hex').toString('base64')}\n`;
}

function checkpointProblem(c: Checkpoint): string | null {
  if (typeof c.origin !== 'string' || c.origin.length === 0 || c.origin.length > ORIGIN_CHARS_MAX || /[\s+]/u.test(c.origin)) return 'the origin must be 1 to 256 characters with no space or +';
  if (!Number.isSafeInteger(c.size) || c.size < 0) return 'the size must be a non-negative integer';
  if (!/^[0-9a-f]{64}$/.test(c.head)) return 'the head must be 64 lowercase hex characters';
  return null;
}

/** Sign a checkpoint with the receipt key: the whole signed note. */
export function signCheckpoint(checkpoint: Checkpoint, key: Pick<SigningKey, 'keyId' | 'privateKey'>): string {
  const body = checkpointBody(checkpoint);
  const name = noteKeyName(key.keyId);
  const publicKey = createPublicKey(key.privateKey);
  const signature = sign(null, Buffer.from(body, 'utf8'), key.privateKey);
  return `${body}\n${SIGNATURE_PREFIX}${name} ${Buffer.concat([noteKeyHash(name, publicKey), signature]).toString('base64')}\n`;
}

/**
 * Read a signed note as a checkpoint, accepted only with a signature by `key` (a PEM public key
 * and the key id it is named by, or a verifier key string). Lines signed by other keys are
 * passed over, as C2SP says; at least one by this key must verify.
 */
export function readCheckpoint(note: string, key: { publicKeyPem: string; keyId: string } | { vkey: string }): NoteReading {
  const fail = (code: NoteProblemCode, message: string): NoteReading => ({ ok: false, code, message });
  let name: string;
  let publicKey: KeyObject;
  try {
    if ('vkey' in key) ({ name, publicKey } = parseVerifierKey(key.vkey));
    else {
      name = noteKeyName(key.keyId);
      publicKey = createPublicKey(key.publicKeyPem);
    }
  } catch (error) {
    return fail('unknown_key', `the key cannot be used: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (typeof note !== 'string' || note.includes('\r') || !note.endsWith('\n')) return fail('malformed_note', 'a signed note is text of lines each ending in a newline, with no carriage return');
  const split = note.lastIndexOf('\n\n');
  if (split < 0) return fail('malformed_note', 'a signed note has an empty line between its text and its signatures');
  const body = note.slice(0, split + 1);
  const lines = note.slice(split + 2, -1).split('\n');
  if (lines.length > SIGNATURES_MAX) return fail('malformed_note', `more than ${SIGNATURES_MAX} signature lines`);
  const hash = noteKeyHash(name, publicKey);
  let signedByKey = false;
  const others: string[] = [];
  for (const line of lines) {
    if (!line.startsWith(SIGNATURE_PREFIX)) return fail('malformed_note', 'every line after the empty line must be a signature, "— <name> <signature>"');
    const [lineName, encoded, ...rest] = line.slice(SIGNATURE_PREFIX.length).split(' ');
    if (lineName === undefined || encoded === undefined || rest.length > 0 || !validKeyName(lineName)) return fail('malformed_note', 'a signature line is "— <name> <base64>"');
    const bytes = Buffer.from(encoded, 'base64');
    if (bytes.length < 5 || bytes.toString('base64') !== encoded) return fail('malformed_note', 'a signature is base64 of a 4-byte key hash and the signature');
    if (lineName !== name || !bytes.subarray(0, 4).equals(hash)) {
      others.push(lineName);
      continue;
    }
    if (!verify(null, Buffer.from(body, 'utf8'), publicKey, bytes.subarray(4))) return fail('bad_signature', `the signature by ${name} does not verify: the note was changed after it was signed`);
    signedByKey = true;
  }
  if (!signedByKey) return fail('unknown_key', `the note has no signature by ${name}${others.length === 0 ? '' : `, only by ${[...new Set(others)].join(', ')}`}`);
  const read = checkpointOfBody(body);
  if (typeof read === 'string') return fail('malformed_checkpoint', read);
  return { ok: true, checkpoint: read, keyName: name };
}

/**
 * What a refusal of a note signed by another key adds: the common cause (servers or processes on
 * one journal started with keys of their own) before the rarer one (a checkpoint forged with a key
 * none of them held). Empty for any other problem.
 */
export function otherKeyAdvice(read: NoteReading): string {
  if (read.ok || read.code !== 'unknown_key') return '';
  return '. Every server and process on one journal must sign with the same receipt key (RECEIPT_KEY_PATH, see docs/operators/integrity.md): give this one the key the others use. If none of them ever held the key that signed it, the checkpoint was forged';
}

/**
 * What a note's body says, its signatures unchecked: for an offline check given no key, which
 * still holds the journal against what the checkpoint claims (a journal short of it was cut, or
 * the checkpoint was forged; either is damage). Null for text that is not a checkpoint note.
 */
export function unverifiedCheckpoint(note: string): Checkpoint | null {
  if (typeof note !== 'string') return null;
  const split = note.lastIndexOf('\n\n');
  if (split < 0) return null;
  const read = checkpointOfBody(note.slice(0, split + 1));
  return typeof read === 'string' ? null : read;
}

/** The checkpoint a note's body (its lines up to the empty one) holds, or what is wrong with it. */
function checkpointOfBody(body: string): Checkpoint | string {
  const [origin = '', sizeText = '', root = '', ...extensions] = body.slice(0, -1).split('\n');
  const rootBytes = Buffer.from(root, 'base64');
  if (!/^(0|[1-9][0-9]*)$/.test(sizeText) || rootBytes.length !== 32 || rootBytes.toString('base64') !== root || extensions.some((line) => line.length === 0)) {
    return 'a checkpoint is its origin, its size in decimal and its 32-byte head in base64, one a line';
  }
  const checkpoint = { origin, size: Number(sizeText), head: rootBytes.toString('hex') };
  return checkpointProblem(checkpoint) ?? checkpoint;
}

/**
 * True when `next` may follow `previous` of the same journal and epoch: no smaller, and at equal
 * size the same head. (Whether the larger one extends the smaller takes the entries between.)
 */
export function mayFollow(previous: Checkpoint, next: Checkpoint): boolean {
  if (previous.origin !== next.origin) return false;
  if (next.size < previous.size) return false;
  return next.size !== previous.size || next.head === previous.head;
}
