import { createHash, randomBytes, scrypt, scryptSync, timingSafeEqual } from 'node:crypto';

/** scrypt's cost parameters, by node:crypto's names (N, r, p). */
export interface ScryptCost {
  cost: number;
  blockSize: number;
  parallelization: number;
}

/** The cost new password hashes get, and the least the config file accepts. */
export const SCRYPT_DEFAULTS: ScryptCost = { cost: 16_384, blockSize: 8, parallelization: 1 };

const SALT_BYTES = 16;
const KEY_BYTES = 32;
/** Bounds on a stored hash's parameters, so a hand-edited value cannot make a login eat the machine. */
const COST_MAX = 2 ** 20;
const BLOCK_SIZE_MAX = 32;
const PARALLELIZATION_MAX = 16;
const MEMORY_BYTES_MAX = 256 * 1024 * 1024;

/** A parsed `scrypt$N$r$p$salt$hash` value. */
export interface PasswordHash extends ScryptCost {
  salt: Buffer;
  key: Buffer;
}

/** scrypt needs about 128·N·r bytes; leave headroom so Node's own memory check never trips. */
function memoryFor(cost: ScryptCost): number {
  return 128 * cost.cost * cost.blockSize;
}

function derive(password: string, salt: Buffer, keyBytes: number, cost: ScryptCost): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const options = { ...cost, maxmem: 2 * memoryFor(cost) };
    scrypt(password, salt, keyBytes, options, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

/** Canonical base64 only: Node's decoder skips junk, and a hash that round-trips is the one that was written. */
function decodeBase64(text: string): Buffer | null {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return null;
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? bytes : null;
}

function decodeInteger(text: string): number | null {
  return /^[1-9][0-9]{0,9}$/.test(text) ? Number(text) : null;
}

/** The parts of a stored password hash, or null when it is not a well-formed, bounded scrypt value. */
export function parsePasswordHash(stored: unknown): PasswordHash | null {
  if (typeof stored !== 'string') return null;
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return null;
  const [cost, blockSize, parallelization] = parts.slice(1, 4).map(decodeInteger);
  const salt = decodeBase64(parts[4] ?? '');
  const key = decodeBase64(parts[5] ?? '');
  if (!cost || !blockSize || !parallelization || !salt || !key) return null;
  const powerOfTwo = cost > 1 && (cost & (cost - 1)) === 0;
  if (!powerOfTwo || cost > COST_MAX || blockSize > BLOCK_SIZE_MAX || parallelization > PARALLELIZATION_MAX) return null;
  if (memoryFor({ cost, blockSize, parallelization }) > MEMORY_BYTES_MAX) return null;
  if (salt.length < SALT_BYTES || key.length < 16 || key.length > 64) return null;
  return { cost, blockSize, parallelization, salt, key };
}

/** Hash a password as `scrypt$N$r$p$salt$hash` (base64 salt and key) with a fresh random salt. */
export async function hashPassword(password: string, options: Partial<ScryptCost> = {}): Promise<string> {
  const cost = { ...SCRYPT_DEFAULTS, ...options };
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, KEY_BYTES, cost);
  return ['scrypt', cost.cost, cost.blockSize, cost.parallelization, salt.toString('base64'), key.toString('base64')].join('$');
}

/**
 * Whether `password` matches a stored hash. The comparison is constant-time; a malformed stored
 * value is simply no match, never an exception, so a bad config line cannot crash a login.
 */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parsePasswordHash(stored);
  if (parsed === null || typeof password !== 'string') return false;
  try {
    const key = await derive(password, parsed.salt, parsed.key.length, parsed);
    return timingSafeEqual(key, parsed.key);
  } catch {
    return false;
  }
}

/**
 * `verifyPassword`, blocking: for checks made while the config is read (at start and at reload),
 * which are synchronous. One call costs one scrypt at the stored hash's cost (50 to 130 ms at the
 * default), so it is for a few checks, never for a request.
 */
export function verifyPasswordSync(password: string, stored: string): boolean {
  const parsed = parsePasswordHash(stored);
  if (parsed === null) return false;
  try {
    const key = scryptSync(password, parsed.salt, parsed.key.length, { ...costOf(parsed), maxmem: 2 * memoryFor(parsed) });
    return timingSafeEqual(key, parsed.key);
  } catch {
    return false;
  }
}

function costOf(hash: ScryptCost): ScryptCost {
  return { cost: hash.cost, blockSize: hash.blockSize, parallelization: hash.parallelization };
}

/** The lowercase hex SHA-256 of a bearer token: what the config stores instead of the token. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** True for a 64-character lowercase hex SHA-256. */
export function isSha256Hex(value: unknown): value is string {
  return typeof value === 'string' && /^[0-9a-f]{64}$/.test(value);
}

/** Whether a bearer token hashes to `sha256hex`, compared in constant time; false for a malformed hash. */
export function tokenMatches(token: string, sha256hex: string): boolean {
  if (typeof token !== 'string' || !isSha256Hex(sha256hex)) return false;
  return timingSafeEqual(createHash('sha256').update(token, 'utf8').digest(), Buffer.from(sha256hex, 'hex'));
}
