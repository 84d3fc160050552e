import { limits } from '../../shared/limits.ts';

// Login throttling, decided on values (no clock, no store): the shell (login-throttle.ts) reads
// the counts, asks here, and writes back what it is told. Three counts, all checked before the
// password is hashed:
// - per name and address: a delay after each failure, 1 s doubling up to 15 minutes, so a person
//   who mistypes waits a second and nobody else waits at all;
// - per name, across addresses: a ceiling on failures an hour, which refuses only browsers
//   without a device cookie for that name (set at an earlier successful login), so guessing from
//   many addresses is bounded and the person still gets in;
// - per address (an IPv6 /64), across names: a ceiling on failures an hour, passed by the same
//   cookie, so one address trying name after new name (each a first attempt, each a full scrypt)
//   is bounded too, and a person whose browser logged in before still gets in from there.
// An attempt is counted as a failure when it is let through, before its password is checked, so
// attempts sent at once cannot all slip past a count none of them has written yet; a success
// takes it back.

/** Failures of one name from one address. */
export interface PairCount {
  failures: number;
  lastFailureMs: number;
}

/** Failures of one name from anywhere, or from one address under any name: a count draining at its ceiling's rate, as of `atMs`. */
export interface NameCount {
  failures: number;
  atMs: number;
}

/** Failures from one address, whatever names they were for: drained like a name's. */
export type AddressCount = NameCount;

/** What a login attempt is told before its password is hashed. */
export type LoginVerdict =
  | { kind: 'try'; pair: PairCount; name: NameCount; address: AddressCount }
  | { kind: 'wait'; waitMs: number; why: LoginWaitWhy };

/** Which count holds an attempt: the name and address's delay, the name's ceiling, the address's ceiling. */
export type LoginWaitWhy = 'address' | 'name' | 'address-all-names';

export interface LoginAttempt {
  pair: PairCount | undefined;
  name: NameCount | undefined;
  address: AddressCount | undefined;
  /** The browser carries a device cookie, signed by this server, naming this name. */
  knownDevice: boolean;
  nowMs: number;
  /** The per-name ceiling: failures an hour from browsers without a device cookie. */
  failuresPerHour: number;
  /** The per-address ceiling: failures an hour, under any names, from browsers without a device cookie for the name tried. */
  addressFailuresPerHour: number;
}

/** How long a name and address wait after their `failures`-th failure in a row. */
export function loginDelayMs(failures: number): number {
  if (failures <= 0) return 0;
  // 2^20 s is far past the cap, and keeps the power finite for any count.
  const doublings = Math.min(failures - 1, 20);
  return Math.min(limits.loginDelayFirstMs * 2 ** doublings, limits.loginDelayMaxMs);
}

/** A name and address's failures as they stand at `nowMs`: forgotten after a day without one. */
export function pairAt(pair: PairCount | undefined, nowMs: number): PairCount {
  if (pair === undefined || nowMs - pair.lastFailureMs >= limits.loginFailuresForgetMs) return { failures: 0, lastFailureMs: nowMs };
  return pair;
}

/** A name's failures as they stand at `nowMs`: drained at the ceiling's rate since they were counted. */
export function nameAt(name: NameCount | undefined, nowMs: number, failuresPerHour: number): NameCount {
  if (name === undefined) return { failures: 0, atMs: nowMs };
  const drained = (Math.max(0, nowMs - name.atMs) * failuresPerHour) / limits.loginNameWindowMs;
  return { failures: Math.max(0, name.failures - drained), atMs: nowMs };
}

/**
 * Whether an attempt may have its password checked now, and the counts to keep if it does (the
 * attempt counted as a failure until it succeeds). The address's own delay comes first: it is the
 * one a person who mistyped meets, and it holds whatever cookie the browser has.
 */
export function decideLoginAttempt(attempt: LoginAttempt): LoginVerdict {
  const { nowMs, failuresPerHour, addressFailuresPerHour } = attempt;
  const pair = pairAt(attempt.pair, nowMs);
  const pairWaitMs = pair.lastFailureMs + loginDelayMs(pair.failures) - nowMs;
  if (pair.failures > 0 && pairWaitMs > 0) return { kind: 'wait', waitMs: pairWaitMs, why: 'address' };
  const name = nameAt(attempt.name, nowMs, failuresPerHour);
  if (!attempt.knownDevice && name.failures + 1 > failuresPerHour) return { kind: 'wait', waitMs: drainMs(name, failuresPerHour), why: 'name' };
  const address = nameAt(attempt.address, nowMs, addressFailuresPerHour);
  if (!attempt.knownDevice && address.failures + 1 > addressFailuresPerHour) {
    return { kind: 'wait', waitMs: drainMs(address, addressFailuresPerHour), why: 'address-all-names' };
  }
  return {
    kind: 'try',
    pair: { failures: pair.failures + 1, lastFailureMs: nowMs },
    name: { failures: name.failures + 1, atMs: nowMs },
    address: { failures: address.failures + 1, atMs: nowMs },
  };
}

/** The time until a count at its ceiling has drained enough for one more attempt. */
function drainMs(count: NameCount, failuresPerHour: number): number {
  return Math.max(1, Math.ceil(((count.failures + 1 - failuresPerHour) * limits.loginNameWindowMs) / failuresPerHour));
}

/** When a name and address's failures are forgotten: a day after the last one, as `pairAt` says. */
export function pairForgottenAtMs(pair: PairCount): number {
  return pair.lastFailureMs + limits.loginFailuresForgetMs;
}

/**
 * When a name's (or address's) count has drained to nothing at its ceiling's rate, as `nameAt`
 * says, and a millisecond more: past it, the count answers as no count at all.
 */
export function nameDrainedAtMs(name: NameCount, failuresPerHour: number): number {
  return name.atMs + Math.ceil((name.failures * limits.loginNameWindowMs) / failuresPerHour) + 1;
}

/** A name's (or address's) count once an attempt it counted succeeded: that attempt was no failure. */
export function nameAfterSuccess(name: NameCount | undefined, nowMs: number, failuresPerHour: number): NameCount {
  const now = nameAt(name, nowMs, failuresPerHour);
  return { failures: Math.max(0, now.failures - 1), atMs: nowMs };
}
