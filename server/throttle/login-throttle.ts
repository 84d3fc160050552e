import { limits } from '../../shared/limits.ts';
import { addressKeyOf } from './client-address.ts';
import { BoundedStore } from './bounded-store.ts';
import { decideLoginAttempt, type NameCount, nameAfterSuccess, type PairCount } from './login.ts';

/** What the login route is told before it hashes a password. */
export type LoginCheck = { kind: 'try' } | { kind: 'wait'; waitMs: number; why: 'address' | 'name' };

/**
 * The counts behind login throttling (decided in login.ts), kept in memory in two bounded stores:
 * by name and address, and by name. A restart forgets them, which costs a guesser's delay at most;
 * it never locks anyone in or out.
 */
export class LoginThrottle {
  readonly #pairs = new BoundedStore<PairCount>(limits.throttleEntriesMax);
  readonly #names = new BoundedStore<NameCount>(limits.throttleEntriesMax);

  constructor(
    private readonly options: {
      failuresPerHour: number;
      wallMs: () => number;
    },
  ) {}

  /** Ask before hashing: a `try` is counted as a failure until `succeeded` takes it back. */
  check(name: string, address: string | undefined, knownDevice: boolean): LoginCheck {
    const nowMs = this.options.wallMs();
    const pairKey = pairKeyOf(name, address);
    const verdict = decideLoginAttempt({
      pair: this.#pairs.get(pairKey),
      name: this.#names.get(name),
      knownDevice,
      nowMs,
      failuresPerHour: this.options.failuresPerHour,
    });
    if (verdict.kind === 'wait') return verdict;
    this.#pairs.set(pairKey, verdict.pair);
    this.#names.set(name, verdict.name);
    return { kind: 'try' };
  }

  /** The password was right: that address starts again from nothing, and the name's count loses the attempt. */
  succeeded(name: string, address: string | undefined): void {
    this.#pairs.delete(pairKeyOf(name, address));
    this.#names.set(name, nameAfterSuccess(this.#names.get(name), this.options.wallMs(), this.options.failuresPerHour));
  }
}

/** Names are `[a-z0-9._-]` in the config, but a login may send anything: JSON keeps the two parts apart. */
function pairKeyOf(name: string, address: string | undefined): string {
  return JSON.stringify([name, addressKeyOf(address)]);
}
