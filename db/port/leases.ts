// Background-work leases: one row per named piece of background work (the SLA ticker, checkpoint
// signing, the pull reconciler, demo traffic), naming the server that does it until its expiry.
// They only save servers on one database from doing the same work at once: what the work writes
// is kept right across servers by the journal's conditional appends and per-message claims, so a
// lease that two servers briefly both believe they hold costs duplicated work, never a wrong entry.

/** A lease as its holder holds it: its name, holder, epoch and expiry on the store's clock (ms). */
export interface HeldLease {
  name: string;
  holder: string;
  /** Grows by one each time the lease passes to another holder (or is taken again after a release); a renewal keeps it. */
  epoch: number;
  /** When it lapses unless renewed, in ms on the store's clock (not the holder's). */
  expiresMs: number;
}

/** Who held a lease, and at which epoch: what a take-over expects to find. */
export type LeaseHolding = Pick<HeldLease, 'holder' | 'epoch'>;

/**
 * Where the leases live, shared by every server on the store. Each call is one conditional write
 * or read, so however calls from several servers interleave, no two holders ever hold one lease at
 * the same epoch, and an unexpired lease is taken only by its own holder.
 */
export interface Leases {
  /**
   * Take the lease when it is free, expired or already `holder`'s (then renew it), for `ttlMs` from
   * now on the store's clock: the lease as held, or null when another holder holds it unexpired.
   */
  acquire(name: string, holder: string, ttlMs: number): Promise<HeldLease | null>;
  /**
   * Take the lease from `from` (its holder and epoch as `heldNow` read them) for `holder`, for
   * `ttlMs` from now, whether or not it has lapsed, at the next epoch: only while `from` still holds
   * it at that epoch, judged in the one write, so of several servers taking it from one holder at
   * once one takes it. For a holder known to be dead; null when the lease moved since it was read.
   */
  takeOver(name: string, holder: string, ttlMs: number, from: LeaseHolding): Promise<HeldLease | null>;
  /** The lease as held now, unexpired, by whichever holder; null when it is free, given back or lapsed. */
  heldNow(name: string): Promise<HeldLease | null>;
  /** Give it back, if `holder` still holds it at `epoch`: true when it did. */
  release(name: string, holder: string, epoch: number): Promise<boolean>;
  /** Whether `holder` still holds it, unexpired, at `epoch`: asked before acting on work done under it. */
  check(name: string, holder: string, epoch: number): Promise<boolean>;
  /** How many leases whose names start with `prefix` are held, unexpired, now on the store's clock. */
  countHeld(prefix: string): Promise<number>;
  /** Close what the store opened; a call after it opens it again where it can. */
  close(): Promise<void>;
}

/** The names of the background work held under leases. */
export const LEASE_NAMES = ['sla-ticker', 'checkpoint-signing', 'pull-reconciler', 'reconciliation-runs', 'demo-traffic'] as const;
/** One lease name. */
export type LeaseName = (typeof LEASE_NAMES)[number];

/** Refuse a take-over no store carries out: from nobody, from the taker itself, or at an epoch no lease has. */
export function refuseBadTakeOver(name: string, holder: string, ttlMs: number, from: LeaseHolding): void {
  refuseBadLeaseAsk(name, holder, ttlMs);
  if (from.holder === '' || from.holder === holder) throw new RangeError('a lease is taken over from another holder');
  if (!Number.isSafeInteger(from.epoch) || from.epoch < 1) throw new RangeError(`a lease's epoch is a whole number from 1: ${from.epoch}`);
}

/** Refuse what no store can keep: an empty name or holder, a TTL that is not a positive whole number of ms. */
export function refuseBadLeaseAsk(name: string, holder: string, ttlMs?: number): void {
  if (name === '' || holder === '') throw new RangeError('a lease needs a name and a holder');
  if (ttlMs !== undefined && (!Number.isSafeInteger(ttlMs) || ttlMs < 1)) throw new RangeError(`a lease's TTL must be a positive whole number of ms: ${ttlMs}`);
}
