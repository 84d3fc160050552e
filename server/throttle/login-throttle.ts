import { limits } from '../../shared/limits.ts';
import { addressKeyOf } from './client-address.ts';
import { BoundedStore } from './bounded-store.ts';
import { type AddressCount, decideLoginAttempt, type LoginWaitWhy, type NameCount, nameAfterSuccess, type PairCount } from './login.ts';

/** What the login route is told before it hashes a password. */
export type LoginCheck = { kind: 'try' } | { kind: 'wait'; waitMs: number; why: LoginWaitWhy };

/**
 * The counts behind login throttling (decided in login.ts), kept in memory in three bounded stores:
 * by name and address, by name, and by address. A restart forgets them, which costs a guesser's delay at most;
 * it never locks anyone in or out.
 */
export class LoginThrottle {
  readonly #pairs = new BoundedStore<PairCount>(limits.throttleEntriesMax);
  readonly #names = new BoundedStore<NameCount>(limits.throttleEntriesMax);
  readonly #addresses = new BoundedStore<AddressCount>(limits.throttleEntriesMax);

  constructor(
    private readonly options: {
      failuresPerHour: number;
      addressFailuresPerHour: number;
      wallMs: () => number;
    },
  ) {}

  /** Ask before hashing: a `try` is counted as a failure until `succeeded` takes it back. */
  check(name: string, address: string | undefined, knownDevice: boolean): LoginCheck {
    const nowMs = this.options.wallMs();
    const pairKey = pairKeyOf(name, address);
    const addressKey = addressKeyOf(address);
    const verdict = decideLoginAttempt({
      pair: this.#pairs.get(pairKey),
      name: this.#names.get(name),
      address: this.#addresses.get(addressKey),
      knownDevice,
      nowMs,
      failuresPerHour: this.options.failuresPerHour,
      addressFailuresPerHour: this.options.addressFailuresPerHour,
    });
    if (verdict.kind === 'wait') return verdict;
    this.#pairs.set(pairKey, verdict.pair);
    this.#names.set(name, verdict.name);
    this.#addresses.set(addressKey, verdict.address);
    return { kind: 'try' };
  }

  /** The password was right: that name and address start again from nothing, and the name's and the address's counts lose the attempt. */
  succeeded(name: string, address: string | undefined): void {
    const nowMs = this.options.wallMs();
    const addressKey = addressKeyOf(address);
    this.#pairs.delete(pairKeyOf(name, address));
    this.#names.set(name, nameAfterSuccess(this.#names.get(name), nowMs, this.options.failuresPerHour));
    this.#addresses.set(addressKey, nameAfterSuccess(this.#addresses.get(addressKey), nowMs, this.options.addressFailuresPerHour));
  }
}

/** Names are `[a-z0-9._-]` in the config, but a login may send anything: JSON keeps the two parts apart. */
function pairKeyOf(name: string, address: string | undefined): string {
  return JSON.stringify([name, addressKeyOf(address)]);
}
