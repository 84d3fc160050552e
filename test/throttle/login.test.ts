import { describe, expect, it } from 'vitest';
import { limits } from '../../shared/limits.ts';
import { BoundedStore } from '../../shared/bounded-store.ts';
import { addressKeyOf } from '../../server/throttle/client-address.ts';
import { decideLoginAttempt, type LoginAttempt, loginDelayMs, nameAfterSuccess } from '../../server/throttle/login.ts';
import { LoginThrottle } from '../../server/throttle/login-throttle.ts';

// Login throttling as pure decisions on a fake clock: a delay per name and address, a ceiling per
// name that a device cookie passes, counts in bounded stores.

const T0 = 1_000_000_000;
const attempt = (overrides: Partial<LoginAttempt>): LoginAttempt => ({
  pair: undefined,
  name: undefined,
  address: undefined,
  knownDevice: false,
  nowMs: T0,
  failuresPerHour: 100,
  addressFailuresPerHour: 1_000,
  ...overrides,
});
const THROTTLE = { failuresPerHour: 100, addressFailuresPerHour: 1_000 };

describe('loginDelayMs: 1 s after the first failure, doubling, at most 15 minutes', () => {
  it.each([
    [0, 0],
    [1, 1_000],
    [2, 2_000],
    [3, 4_000],
    [10, 512_000],
    [11, 900_000],
    [12, 900_000],
    [1_000_000, 900_000],
  ])('after %i failures in a row: %i ms', (failures, delayMs) => {
    expect(loginDelayMs(failures)).toBe(delayMs);
  });
});

describe('decideLoginAttempt', () => {
  it.each<[string, Partial<LoginAttempt>, string]>([
    ['a first attempt', {}, 'try'],
    ['0.999 s after one failure, same name and address', { pair: { failures: 1, lastFailureMs: T0 - 999 } }, 'wait 1 address'],
    ['1 s after one failure', { pair: { failures: 1, lastFailureMs: T0 - 1_000 } }, 'try'],
    ['1 s after three failures in a row', { pair: { failures: 3, lastFailureMs: T0 - 1_000 } }, 'wait 3000 address'],
    ['4 s after three failures in a row', { pair: { failures: 3, lastFailureMs: T0 - 4_000 } }, 'try'],
    ['a device cookie does not skip the address delay', { pair: { failures: 2, lastFailureMs: T0 }, knownDevice: true }, 'wait 2000 address'],
    ['50 failures an hour before, just under a day', { pair: { failures: 50, lastFailureMs: T0 - limits.loginFailuresForgetMs + 1 } }, 'try'],
    ['the ceiling reached for the name, no device cookie', { name: { failures: 100, atMs: T0 } }, 'wait 36000 name'],
    ['the ceiling reached for the name, with its device cookie', { name: { failures: 100, atMs: T0 }, knownDevice: true }, 'try'],
    ['99 failures of the name: one more may try', { name: { failures: 99, atMs: T0 } }, 'try'],
    ['100 failures an hour ago have drained', { name: { failures: 100, atMs: T0 - 3_600_000 } }, 'try'],
    ['100 failures 36 s ago: one has drained', { name: { failures: 100, atMs: T0 - 36_000 } }, 'try'],
    ['a ceiling of 10 an hour, 10 failures just now', { name: { failures: 10, atMs: T0 }, failuresPerHour: 10 }, 'wait 360000 name'],
    ['the address ceiling reached across names, no device cookie', { address: { failures: 1_000, atMs: T0 } }, 'wait 3600 address-all-names'],
    ['the address ceiling reached, with a device cookie for this name', { address: { failures: 1_000, atMs: T0 }, knownDevice: true }, 'try'],
    ['999 failures from the address: one more may try', { address: { failures: 999, atMs: T0 } }, 'try'],
    ['1000 failures from the address an hour ago have drained', { address: { failures: 1_000, atMs: T0 - 3_600_000 } }, 'try'],
    ['the pair delay comes before the address ceiling', { pair: { failures: 1, lastFailureMs: T0 }, address: { failures: 1_000, atMs: T0 } }, 'wait 1000 address'],
  ])('%s: %s', (_case, overrides, expected) => {
    const verdict = decideLoginAttempt(attempt(overrides));
    expect(verdict.kind === 'try' ? 'try' : `wait ${verdict.waitMs} ${verdict.why}`).toBe(expected);
  });

  it('a try is counted as a failure at once, so attempts sent together cannot all pass a count none has written', () => {
    const first = decideLoginAttempt(attempt({}));
    expect(first).toEqual({ kind: 'try', pair: { failures: 1, lastFailureMs: T0 }, name: { failures: 1, atMs: T0 }, address: { failures: 1, atMs: T0 } });
    if (first.kind !== 'try') throw new Error('unreachable');
    expect(decideLoginAttempt(attempt({ pair: first.pair, name: first.name }))).toEqual({ kind: 'wait', waitMs: 1_000, why: 'address' });
  });

  it('a pair forgotten after a day of quiet starts again from one failure', () => {
    const verdict = decideLoginAttempt(attempt({ pair: { failures: 12, lastFailureMs: T0 - limits.loginFailuresForgetMs } }));
    expect(verdict).toMatchObject({ kind: 'try', pair: { failures: 1 } });
  });

  it('a success takes its attempt back from the name, never below nothing', () => {
    expect(nameAfterSuccess({ failures: 5, atMs: T0 }, T0, 100)).toEqual({ failures: 4, atMs: T0 });
    expect(nameAfterSuccess(undefined, T0, 100)).toEqual({ failures: 0, atMs: T0 });
  });
});

describe('addressKeyOf: IPv6 counted by /64', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['2001:db8:1:2::5', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:ffff:ffff:ffff:ffff', '2001:db8:1:2::/64'],
    ['2001:db8:1:3::5', '2001:db8:1:3::/64'],
    ['::1', '0:0:0:0::/64'],
    ['not an address', 'not an address'],
  ])('%s is counted as %s', (address, key) => {
    expect(addressKeyOf(address)).toBe(key);
  });
});

describe('LoginThrottle (the counts kept, on a fake clock)', () => {
  it('one person mistyping from one address waits 1 s there and nowhere else', async () => {
    let nowMs = T0;
    const throttle = new LoginThrottle({ ...THROTTLE, wallMs: () => nowMs });
    expect(await throttle.check('ana', '203.0.113.7', false)).toEqual({ kind: 'try' });
    expect(await throttle.check('ana', '203.0.113.7', false)).toEqual({ kind: 'wait', waitMs: 1_000, why: 'address' });
    expect(await throttle.check('ana', '203.0.113.8', false)).toEqual({ kind: 'try' });
    expect(await throttle.check('bea', '203.0.113.7', false)).toEqual({ kind: 'try' });
    nowMs += 1_000;
    expect(await throttle.check('ana', '203.0.113.7', false)).toEqual({ kind: 'try' });
    await throttle.succeeded('ana', '203.0.113.7');
    expect(await throttle.check('ana', '203.0.113.7', false)).toEqual({ kind: 'try' });
  });

  it('guessing from many addresses reaches the ceiling, and the person with a device cookie still gets in', async () => {
    let nowMs = T0;
    const throttle = new LoginThrottle({ ...THROTTLE, wallMs: () => nowMs });
    for (let i = 0; i < 100; i++) expect((await throttle.check('ana', `198.51.100.${i}`, false)).kind).toBe('try');
    expect(await throttle.check('ana', '198.51.100.200', false)).toMatchObject({ kind: 'wait', why: 'name' });
    expect(await throttle.check('ana', '203.0.113.7', true)).toEqual({ kind: 'try' });
    await throttle.succeeded('ana', '203.0.113.7');
    // The count drains at the ceiling's rate: one failure's worth every 36 s.
    nowMs += 35_999;
    expect(await throttle.check('ana', '198.51.100.201', false)).toMatchObject({ kind: 'wait', why: 'name', waitMs: 1 });
    nowMs += 1;
    expect(await throttle.check('ana', '198.51.100.201', false)).toEqual({ kind: 'try' });
  });

  it('one address trying name after new name reaches its ceiling across names; a device cookie for the name passes it', async () => {
    let nowMs = T0;
    const throttle = new LoginThrottle({ failuresPerHour: 100, addressFailuresPerHour: 10, wallMs: () => nowMs });
    for (let i = 0; i < 10; i++) expect((await throttle.check(`guess${i}`, '2001:db8:1:2::5', false)).kind).toBe('try');
    // Another address of the same /64 is the same address.
    expect(await throttle.check('guess10', '2001:db8:1:2::99', false)).toEqual({ kind: 'wait', waitMs: 360_000, why: 'address-all-names' });
    expect(await throttle.check('ana', '2001:db8:1:2::7', true)).toEqual({ kind: 'try' });
    await throttle.succeeded('ana', '2001:db8:1:2::7');
    // The success took back its own attempt only: the guesses still hold the address.
    expect(await throttle.check('guess12', '2001:db8:1:2::5', false)).toMatchObject({ kind: 'wait', why: 'address-all-names' });
    expect(await throttle.check('guess12', '2001:db8:1:3::5', false)).toEqual({ kind: 'try' });
    nowMs += 360_000;
    expect(await throttle.check('guess12', '2001:db8:1:2::5', false)).toEqual({ kind: 'try' });
  });

  it('addresses of one IPv6 /64 share a delay; the next /64 has its own', async () => {
    const throttle = new LoginThrottle({ ...THROTTLE, wallMs: () => T0 });
    expect((await throttle.check('ana', '2001:db8:1:2::5', false)).kind).toBe('try');
    expect(await throttle.check('ana', '2001:db8:1:2:aaaa::9', false)).toMatchObject({ kind: 'wait', why: 'address' });
    expect((await throttle.check('ana', '2001:db8:1:3::5', false)).kind).toBe('try');
  });
});

describe('BoundedStore', () => {
  it('holds at most its bound, forgetting the entry used least recently', () => {
    const store = new BoundedStore<number>(3);
    store.set('a', 1);
    store.set('b', 2);
    store.set('c', 3);
    expect(store.get('a')).toBe(1);
    store.set('d', 4);
    expect([store.size, store.get('b'), store.get('a'), store.get('c'), store.get('d')]).toEqual([3, undefined, 1, 3, 4]);
  });

  it('the login throttle keeps at most limits.throttleEntriesMax names and pairs', () => {
    expect(limits.throttleEntriesMax).toBe(100_000);
    expect(() => new BoundedStore(0)).toThrow(RangeError);
  });
});
