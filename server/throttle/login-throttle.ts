import { MemoryLoginThrottles } from '../../db/memory/login-throttles.ts';
import type { LoginCount, LoginCountWrite, LoginKeys, LoginThrottles } from '../../db/port/login-throttles.ts';
import { addressKeyOf } from './client-address.ts';
import { type AddressCount, decideLoginAttempt, type LoginWaitWhy, type NameCount, nameAfterSuccess, nameDrainedAtMs, type PairCount, pairForgottenAtMs } from './login.ts';

/** What the login route is told before it hashes a password. */
export type LoginCheck = { kind: 'try' } | { kind: 'wait'; waitMs: number; why: LoginWaitWhy };

/** What the throttle is made of. */
export interface LoginThrottleOptions {
  failuresPerHour: number;
  addressFailuresPerHour: number;
  wallMs: () => number;
  /** Where the counts live (the storage's, db/port/login-throttles.ts): shared by every server on it, or this process's memory (the default). */
  store?: LoginThrottles;
}

/**
 * The counts behind login throttling (decided in login.ts), kept in a store by name and address,
 * by name, and by address. Each check and each success is one step of the store, so attempts sent
 * at once, to this server or to others on the same storage, are all counted.
 */
export class LoginThrottle {
  readonly #store: LoginThrottles;

  constructor(private readonly options: LoginThrottleOptions) {
    this.#store = options.store ?? new MemoryLoginThrottles();
  }

  /** Ask before hashing: a `try` is counted as a failure until `succeeded` takes it back. */
  check(name: string, address: string | undefined, knownDevice: boolean): Promise<LoginCheck> {
    const { failuresPerHour, addressFailuresPerHour } = this.options;
    const nowMs = this.options.wallMs();
    return this.#store.step<LoginCheck>(keysOf(name, address), nowMs, (counts) => {
      const verdict = decideLoginAttempt({
        pair: counts.pair && pairOf(counts.pair),
        name: counts.name,
        address: counts.address,
        knownDevice,
        nowMs,
        failuresPerHour,
        addressFailuresPerHour,
      });
      if (verdict.kind === 'wait') return { writes: {}, answer: verdict };
      return {
        writes: { pair: pairWrite(verdict.pair), name: nameWrite(verdict.name, failuresPerHour), address: nameWrite(verdict.address, addressFailuresPerHour) },
        answer: { kind: 'try' },
      };
    });
  }

  /** The password was right: that name and address start again from nothing, and the name's and the address's counts lose the attempt. */
  succeeded(name: string, address: string | undefined): Promise<void> {
    const { failuresPerHour, addressFailuresPerHour } = this.options;
    const nowMs = this.options.wallMs();
    return this.#store.step(keysOf(name, address), nowMs, (counts) => ({
      writes: {
        pair: null,
        name: nameWrite(nameAfterSuccess(counts.name, nowMs, failuresPerHour), failuresPerHour),
        address: nameWrite(nameAfterSuccess(counts.address, nowMs, addressFailuresPerHour), addressFailuresPerHour),
      },
      answer: undefined,
    }));
  }
}

/** The keys one attempt touches: the name and address together, the name, the address (an IPv6 /64 as one). */
function keysOf(name: string, address: string | undefined): LoginKeys {
  const addressKey = addressKeyOf(address);
  // Names are `[a-z0-9._-]` in the config, but a login may send anything: JSON keeps the two parts apart.
  return { pair: JSON.stringify([name, addressKey]), name, address: addressKey };
}

function pairOf(count: LoginCount): PairCount {
  return { failures: count.failures, lastFailureMs: count.atMs };
}

function pairWrite(pair: PairCount): LoginCountWrite {
  return { failures: pair.failures, atMs: pair.lastFailureMs, forgetAtMs: pairForgottenAtMs(pair) };
}

/** A name's or address's count to keep; one at nothing is forgotten, as it answers as no count at all. */
function nameWrite(count: NameCount | AddressCount, failuresPerHour: number): LoginCountWrite | null {
  if (count.failures <= 0) return null;
  return { failures: count.failures, atMs: count.atMs, forgetAtMs: nameDrainedAtMs(count, failuresPerHour) };
}
