import { randomUUID } from 'node:crypto';
import type { HeldLease, LeaseName, Leases } from '../../db/port/leases.ts';
import { isDeadHolderHere, thisHost } from './lease-holders.ts';

// Which server does each piece of background work, among the servers on one database: the one
// holding its lease (db/port/leases.ts). A round of the work first takes or renews the lease and
// is skipped when another server holds it; between rounds the lease is renewed every few seconds,
// so a server that stops holding it (stopped, killed, cut off) sees its work move to another
// within the TTL. A lease only saves duplicated work: what the work writes is kept right by the
// journal's conditional appends and claims whoever holds it.
//
// Each server also holds one alive lease, the first free of `server-alive-0`, `-1`, ..., renewed
// as the others are, and counts the alive leases held at each turn: the servers alive on the
// storage. The Stripe budget's slot rows could not say this: a server wants slots only while it
// has Stripe calls out or waiting, so an idle one, or one whose agents are refused at their rate
// before reaching Stripe, is in no row. A server that stops gives its alive lease back; one that dies
// stops being counted once its lease lapses (the TTL). Agents' rates are split by this count
// (server/throttle/rate.ts `shareOf`).
//
// A server killed and started again on the same host would wait out its own dead leases, the TTL,
// before its work ran again. So a lease (a piece of work's or an alive one) held by a holder of
// this host whose process is gone (server/app/lease-holders.ts) is taken over at once, at the next
// epoch, as its expiry would have let it be; never one of another host's holders, whose processes
// this server cannot see.

/** The leases' timing, each with why it is what it is. */
export const workLeaseLimits = {
  /** A dead holder's work moves to another server within this, plus one retry. */
  ttlMs: 10_000,
  /** A held lease is renewed this often: three renewals may fail before it lapses. */
  renewMs: 3_000,
  /** A lease another server holds is asked for this often, so it is taken soon after it lapses. */
  retryMs: 1_000,
} as const;

/** The names of the alive leases start with this; the rest is a number below ALIVE_LEASES_MAX. */
export const ALIVE_PREFIX = 'server-alive-';
/** Alive leases there are: more servers than this on one storage are counted as this many (the rows stay few). */
export const ALIVE_LEASES_MAX = 64;

/** A lease the keeper keeps: a piece of background work's, or the one saying this server is alive. */
export type KeptLease = LeaseName | 'alive';

/** What the leases are made of. */
export interface WorkLeasesOptions {
  store: Leases;
  /** This server's name in the lease rows (default: host, pid and a random part, new for each start). */
  holder?: string;
  ttlMs?: number;
  renewMs?: number;
  retryMs?: number;
  /** Whether a lease's holder is a process of this host that is gone, so its lease is taken at once (default `isDeadHolderHere`). */
  isDeadHolder?: (holder: string) => boolean;
  /** A monotonic clock in ms (default `performance.now`): how long this server may count a lease as its own. */
  monoMs?: () => number;
  /** A lease could not be taken, renewed, checked or given back; the next round tries again. */
  onError?: (name: KeptLease, error: unknown) => void;
  /** A lease came to this server (`lease`) or left it (null). */
  onChange?: (name: LeaseName, lease: HeldLease | null) => void;
}

/** A lease as this server holds it: until `validUntilMs` on its monotonic clock, at the latest. */
interface Holding {
  lease: HeldLease;
  renewedAtMs: number;
  validUntilMs: number;
}

/** The background work's leases as one server holds them. */
export class WorkLeases {
  /** This server's name in the lease rows. */
  readonly holder: string;
  readonly #options: WorkLeasesOptions;
  readonly #ttlMs: number;
  readonly #renewMs: number;
  readonly #monoMs: () => number;
  readonly #isDeadHolder: (holder: string) => boolean;
  readonly #held = new Map<LeaseName, Holding>();
  /** The work that runs on this server: its leases are kept or asked for by the timer. */
  readonly #names = new Set<LeaseName>();
  /** This server's alive lease, once taken, and when it was last renewed (monotonic ms). */
  #alive: { lease: HeldLease; renewedAtMs: number } | null = null;
  /** The servers alive on the storage, this one included, as last counted. */
  #liveServers = 1;
  #timer: NodeJS.Timeout | null = null;
  #keeping: Promise<void> | null = null;
  #stopped = false;

  constructor(options: WorkLeasesOptions) {
    this.#options = options;
    this.holder = options.holder ?? `${thisHost()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.#isDeadHolder = options.isDeadHolder ?? ((holder) => isDeadHolderHere(holder));
    this.#ttlMs = options.ttlMs ?? workLeaseLimits.ttlMs;
    this.#renewMs = options.renewMs ?? workLeaseLimits.renewMs;
    this.#monoMs = options.monoMs ?? (() => performance.now());
  }

  /**
   * A round's first step: take or renew `name` now; true when this server holds it. When the store
   * cannot be asked, the lease held before counts until its TTL runs out here.
   */
  async hold(name: LeaseName): Promise<boolean> {
    if (this.#stopped) return false;
    this.#names.add(name);
    const sentAtMs = this.#monoMs();
    let lease: HeldLease | null;
    try {
      lease = (await this.#options.store.acquire(name, this.holder, this.#ttlMs)) ?? (await this.#takeFromDead(name));
    } catch (error) {
      this.#options.onError?.(name, error);
      return this.holds(name);
    }
    if (this.#stopped) return false;
    this.#record(name, lease, sentAtMs);
    return lease !== null;
  }

  /** Whether this server holds `name` as of its last take or renewal, without asking the store. */
  holds(name: LeaseName): boolean {
    const holding = this.#held.get(name);
    return holding !== undefined && this.#monoMs() < holding.validUntilMs;
  }

  /** Ask the store whether this server still holds `name` at the epoch it took it: before acting on work done under it. */
  async confirm(name: LeaseName): Promise<boolean> {
    const holding = this.#held.get(name);
    if (holding === undefined || !this.holds(name)) return false;
    try {
      return await this.#options.store.check(name, this.holder, holding.lease.epoch);
    } catch (error) {
      this.#options.onError?.(name, error);
      return this.holds(name);
    }
  }

  /** The lease held for `name`, or null: its epoch tells one holding from the next. */
  held(name: LeaseName): HeldLease | null {
    return this.holds(name) ? this.#held.get(name)!.lease : null;
  }

  /** The servers alive on the storage, this one included, as of the last turn: 1 until counted, and where no other server can be. */
  liveServers(): number {
    return this.#liveServers;
  }

  /**
   * Hold this server's alive lease (renewed every `renewMs`; when it was lost, the first free
   * one is taken) and count the alive leases held: the servers alive, this one included even
   * when every alive lease is taken. Run at each turn of the timer; while the store cannot be
   * asked, the last count stands.
   */
  async keepAliveLease(): Promise<number> {
    if (this.#stopped) return this.#liveServers;
    try {
      if (this.#alive === null || this.#monoMs() - this.#alive.renewedAtMs >= this.#renewMs) await this.#holdAliveLease();
      const held = await this.#options.store.countHeld(ALIVE_PREFIX);
      this.#liveServers = Math.max(1, held + (this.#alive === null ? 1 : 0));
    } catch (error) {
      this.#options.onError?.('alive', error);
    }
    return this.#liveServers;
  }

  async #holdAliveLease(): Promise<void> {
    const sentAtMs = this.#monoMs();
    const { store } = this.#options;
    if (this.#alive !== null) {
      const renewed = await store.acquire(this.#alive.lease.name, this.holder, this.#ttlMs);
      this.#alive = renewed === null ? null : { lease: renewed, renewedAtMs: sentAtMs };
      if (renewed !== null) return;
    }
    for (let i = 0; i < ALIVE_LEASES_MAX && this.#alive === null; i++) {
      const name = `${ALIVE_PREFIX}${i}`;
      const lease = (await store.acquire(name, this.holder, this.#ttlMs)) ?? (await this.#takeFromDead(name));
      if (lease !== null) this.#alive = { lease, renewedAtMs: sentAtMs };
    }
  }

  /** Take `name` over when the holder it is held by now is a process of this host that is gone; else null. */
  async #takeFromDead(name: string): Promise<HeldLease | null> {
    const { store } = this.#options;
    const held = await store.heldNow(name);
    if (held === null || held.holder === this.holder || !this.#isDeadHolder(held.holder)) return null;
    return store.takeOver(name, this.holder, this.#ttlMs, held);
  }

  /**
   * Keep the leases of the work that runs here (each named by a round once), from now on: renew a
   * held one every `renewMs`, ask for one another server holds every `retryMs`, and keep this
   * server's alive lease and the count of servers alive. `names` are asked for at once.
   */
  start(names: readonly LeaseName[] = []): void {
    if (this.#timer !== null || this.#stopped) return;
    for (const name of names) this.#names.add(name);
    this.#timer = setInterval(() => void this.#keep(), this.#options.retryMs ?? workLeaseLimits.retryMs);
    this.#timer.unref();
    void this.#keep();
  }

  /** Stop keeping the leases and give back the ones held, so another server takes the work at once. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    await this.#keeping;
    const held: [KeptLease, HeldLease][] = [...this.#held].filter(([name]) => this.holds(name)).map(([name, { lease }]) => [name, lease]);
    if (this.#alive !== null) held.push(['alive', this.#alive.lease]);
    this.#held.clear();
    this.#alive = null;
    await Promise.all(
      held.map(async ([name, lease]) => {
        try {
          await this.#options.store.release(lease.name, this.holder, lease.epoch);
        } catch (error) {
          this.#options.onError?.(name, error);
        }
      }),
    );
  }

  /** One turn of the timer: every lease due a renewal or a new try, one after another. */
  #keep(): Promise<void> {
    if (this.#keeping !== null) return this.#keeping;
    this.#keeping = (async () => {
      for (const name of this.#names) {
        const holding = this.#held.get(name);
        if (holding !== undefined && this.holds(name) && this.#monoMs() - holding.renewedAtMs < this.#renewMs) continue;
        await this.hold(name);
      }
      await this.keepAliveLease();
    })().finally(() => {
      this.#keeping = null;
    });
    return this.#keeping;
  }

  #record(name: LeaseName, lease: HeldLease | null, sentAtMs: number): void {
    const before = this.held(name);
    if (lease === null) this.#held.delete(name);
    // Counted from when the ask was sent: the store's TTL began no earlier.
    else this.#held.set(name, { lease, renewedAtMs: sentAtMs, validUntilMs: sentAtMs + this.#ttlMs });
    if (lease !== null && before?.epoch !== lease.epoch) this.#options.onChange?.(name, lease);
    if (lease === null && before !== null) this.#options.onChange?.(name, null);
  }
}

/** Where the leases say what they do: a lease that moved (info), one that could not be asked (error). */
export interface WorkLeasesLog {
  error(fields: object, message: string): void;
  info?(fields: object, message: string): void;
}

/**
 * The leases of a server's background work on `store`, logging each lease that comes or goes, and
 * a store that cannot be asked once a minute at most (the next round tries again).
 */
export function loggedWorkLeases(store: Leases, log: WorkLeasesLog): WorkLeases {
  let lastErrorMs = Number.NEGATIVE_INFINITY;
  return new WorkLeases({
    store,
    onError: (name, error) => {
      if (Date.now() - lastErrorMs < 60_000) return;
      lastErrorMs = Date.now();
      const what = name === 'alive' ? "this server's alive lease (by which the servers alive are counted)" : `the lease of background work ${name}`;
      log.error({ err: error, lease: name }, `${what} could not be asked for; it is tried again`);
    },
    onChange: (name, lease) =>
      log.info?.(
        { lease: name, epoch: lease?.epoch ?? null },
        lease === null ? `background work ${name} runs on another server now` : `background work ${name} runs on this server now (lease epoch ${lease.epoch})`,
      ),
  });
}
