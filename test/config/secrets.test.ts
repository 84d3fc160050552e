import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { hashPassword, hashToken, parsePasswordHash, tokenMatches, verifyPassword } from '../../server/config/secrets.ts';
import { compiledEntry } from '../support/server-process.ts';

const run = promisify(execFile);
/** Tests that only check the format use a cheap cost; the config's own hashes use the default. */
const CHEAP = { cost: 1_024 };
const SCRYPT_FORMAT = /^scrypt\$16384\$8\$1\$[A-Za-z0-9+/]{22}==\$[A-Za-z0-9+/]{43}=$/;

describe('password hashes', () => {
  it('hashPassword writes scrypt$N$r$p$salt$hash with N=16384, r=8, p=1, a 16-byte salt and a 32-byte key', async () => {
    const stored = await hashPassword('interlock-demo');
    expect(stored).toMatch(SCRYPT_FORMAT);
    expect(parsePasswordHash(stored)).toMatchObject({ cost: 16_384, blockSize: 8, parallelization: 1 });
    expect(parsePasswordHash(stored)?.salt.length).toBe(16);
    expect(parsePasswordHash(stored)?.key.length).toBe(32);
  });

  it('round-trips: the right password verifies, a wrong one does not', async () => {
    const stored = await hashPassword('correct horse');
    expect(await verifyPassword('correct horse', stored)).toBe(true);
    expect(await verifyPassword('correct horse ', stored)).toBe(false);
    expect(await verifyPassword('', stored)).toBe(false);
  });

  it('salts every hash, so one password hashes differently twice', async () => {
    const [a, b] = await Promise.all([hashPassword('same', CHEAP), hashPassword('same', CHEAP)]);
    expect(a).not.toBe(b);
    expect(await verifyPassword('same', a)).toBe(true);
    expect(await verifyPassword('same', b)).toBe(true);
  });

  it('verifies a hash made at another cost, read from the stored parameters', async () => {
    const stored = await hashPassword('pw', { cost: 2_048, blockSize: 4, parallelization: 2 });
    expect(stored.startsWith('scrypt$2048$4$2$')).toBe(true);
    expect(await verifyPassword('pw', stored)).toBe(true);
  });

  const salt = Buffer.alloc(16, 7).toString('base64');
  const key = Buffer.alloc(32, 9).toString('base64');
  const MALFORMED: [string, string][] = [
    ['an empty value', ''],
    ['a plaintext password', 'pw'],
    ['another algorithm', `bcrypt$1024$8$1$${salt}$${key}`],
    ['too few parts', `scrypt$1024$8$1$${salt}`],
    ['too many parts', `scrypt$1024$8$1$${salt}$${key}$x`],
    ['N not a power of two', `scrypt$1000$8$1$${salt}$${key}`],
    ['N with a leading zero', `scrypt$01024$8$1$${salt}$${key}`],
    ['N large enough to exhaust memory', `scrypt$1073741824$8$1$${salt}$${key}`],
    ['r of zero', `scrypt$1024$0$1$${salt}$${key}`],
    ['p too large', `scrypt$1024$8$99$${salt}$${key}`],
    ['a salt that is not base64', `scrypt$1024$8$1$not*base64!!$${key}`],
    ['a salt shorter than 16 bytes', `scrypt$1024$8$1$${Buffer.alloc(8).toString('base64')}$${key}`],
    ['a key with a missing padding character', `scrypt$1024$8$1$${salt}$${key.slice(0, -1)}`],
    ['an empty key', `scrypt$1024$8$1$${salt}$`],
  ];

  it.each(MALFORMED)('a malformed stored value (%s) is no match and never throws', async (_what, stored) => {
    expect(parsePasswordHash(stored)).toBeNull();
    await expect(verifyPassword('pw', stored)).resolves.toBe(false);
  });

  it('a non-string stored value is no match', async () => {
    await expect(verifyPassword('pw', undefined as unknown as string)).resolves.toBe(false);
  });
});

describe('token hashes', () => {
  it('hashToken is the lowercase hex SHA-256 of the token', () => {
    expect(hashToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('tokenMatches accepts the token and refuses any other', () => {
    const stored = hashToken('sk_agent_demo_support_bot');
    expect(tokenMatches('sk_agent_demo_support_bot', stored)).toBe(true);
    expect(tokenMatches('sk_agent_demo_support_bo', stored)).toBe(false);
    expect(tokenMatches('', stored)).toBe(false);
  });

  it.each([
    ['uppercase hex', hashToken('abc').toUpperCase()],
    ['63 characters', hashToken('abc').slice(1)],
    ['not hex', 'z'.repeat(64)],
    ['empty', ''],
  ])('tokenMatches is false, never an error, for a malformed stored hash (%s)', (_what, stored) => {
    expect(tokenMatches('abc', stored)).toBe(false);
  });
});

describe('hash-secret CLI', () => {
  const cli = (args: string[], input?: string) => {
    const child = run(process.execPath, ['--enable-source-maps', compiledEntry('hash-secret'), ...args]);
    child.child.stdin?.end(input ?? '');
    return child;
  };

  it('prints the SHA-256 of a token, from the argument or from stdin', async () => {
    expect((await cli(['token', 'abc'])).stdout).toBe(`${hashToken('abc')}\n`);
    expect((await cli(['token'], 'abc\n')).stdout).toBe(`${hashToken('abc')}\n`);
  });

  it('prints a scrypt hash of a password that verifies', async () => {
    const { stdout } = await cli(['password', 'interlock-demo']);
    expect(stdout.trim()).toMatch(SCRYPT_FORMAT);
    expect(await verifyPassword('interlock-demo', stdout.trim())).toBe(true);
  });

  it('refuses an unknown kind with usage and exit code 2', async () => {
    await expect(cli(['secret', 'x'])).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('usage:') });
  });
});
