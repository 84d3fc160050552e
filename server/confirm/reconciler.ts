import type Stripe from 'stripe';
import type { Entry } from '../../shared/entries.ts';
import { parseRefundEffect } from '../refunds/effect.ts';
import { lastOf } from '../journal/chain.ts';
import type { JournalStore } from '../journal/store.ts';
import { statusRank } from '../journal/confirmations.ts';
import { EFFECT_METADATA_KEY } from '../targets/stripe-refunds.ts';
import { RECORD_RESULTS, type RecordResult, readRefund, recordConfirmation } from './record.ts';

/** What a lookup can come to: a recording result, or no refund of ours on the payment. */
export const LOOKUP_RESULTS = [...RECORD_RESULTS, 'NOT_FOUND'] as const;
/** One lookup result. */
export type LookupResult = (typeof LOOKUP_RESULTS)[number];

/** What one reconciler lookup can come to: a lookup result, or Stripe could not be asked. */
export const RECONCILE_RESULTS = [...LOOKUP_RESULTS, 'LOOKUP_FAILED'] as const;
/** One reconciler result. */
export type ReconcileResult = (typeof RECONCILE_RESULTS)[number];

/** The part of the Stripe target a lookup needs: every refund of a payment, in any status. */
export interface RefundLister {
  listRefunds(paymentIntent: string): Promise<Stripe.Refund[]>;
}

/** The reconciler's bounds, each with why it is what it is. */
export const reconcilerLimits = {
  /** Stripe usually delivers a webhook within seconds and retries for hours; a lookup only fills a real gap. */
  afterMsDefault: 5 * 60_000,
  /** Lookups in one pass, one after another; each is usually one list request. */
  lookupsPerPassMaxDefault: 10,
  /** Lookups per second across passes: a fifth of Stripe's ~100 requests/s, leaving the rest to sends. */
  lookupsPerSecondMax: 20,
} as const;

/**
 * Pull what Stripe says about an effect's refund, without a webhook (core §8.4): list the refunds
 * of the payment the last send was for, in any status (a failed refund is news too), keep those
 * whose metadata names this effect, and record each, oldest first. `NOT_FOUND` when none.
 */
export async function confirmByLookup(journal: JournalStore, target: RefundLister, effectId: string): Promise<LookupResult> {
  const chain = await journal.entries(effectId);
  const effect = parseRefundEffect(lastOf(chain, 'DISPATCHED')?.effect);
  if (effect === null) return 'NOT_FOUND';
  const ours = (await target.listRefunds(effect.payment_intent))
    .filter((refund) => refund.metadata?.[EFFECT_METADATA_KEY] === effectId)
    .sort((a, b) => a.created - b.created);
  if (ours.length === 0) return 'NOT_FOUND';
  let recorded = false;
  let last: RecordResult = 'REFUSED:mismatch';
  for (const refund of ours) {
    const facts = readRefund(refund);
    last = facts === null ? 'REFUSED:mismatch' : await recordConfirmation(journal, effectId, facts, { via: 'lookup', event: null, created: refund.created });
    recorded ||= last === 'CONFIRMED';
  }
  return recorded ? 'CONFIRMED' : last;
}

/**
 * True when an effect's refund was sent (a COMMITTED exists) at least `afterMs` ago and Stripe
 * has not confirmed it in a final status (succeeded, failed or canceled): then a lookup is due.
 */
export function isLookupDue(chain: readonly Entry[], nowMs: number, afterMs: number): boolean {
  const commit = chain.find((entry) => entry.kind === 'COMMITTED');
  if (commit === undefined || nowMs - commit.ts_ms < afterMs) return false;
  return !chain.some((entry) => entry.kind === 'CONFIRMED' && typeof entry.status === 'string' && statusRank(entry.status) > 0);
}

/** How a reconciler is built. */
export interface ReconcilerOptions {
  journal: JournalStore;
  target: RefundLister;
  /** Effect ids that may need a lookup (e.g. every effect committed lately); the reconciler filters them. */
  candidates: () => readonly string[] | Promise<readonly string[]>;
  /** The application clock. */
  nowMs: () => number;
  /** How long after the commit a missing final confirmation is looked up, and how long before the same effect is looked up again. */
  afterMs?: number;
  /** At most this many lookups per pass. */
  lookupsPerPassMax?: number;
  onConfirmed?: (effectId: string) => void;
  /** A failed lookup or candidate read; the pass carries on. */
  onError?: (effectId: string | null, error: unknown) => void;
  /** Whether a timed pass runs now (default: always): among servers on one database, the one holding the work's lease. */
  mayRun?: () => Promise<boolean>;
}

/** One lookup a pass made. */
export interface ReconcileOutcome {
  effectId: string;
  result: ReconcileResult;
}

/** What one pass did: how many effects were due, and the lookups it made (at most the per-pass cap). */
export interface ReconcilePass {
  due: number;
  looked: ReconcileOutcome[];
}

/**
 * Confirms by lookup the refunds whose webhook never came, at a bounded rate: each pass looks up
 * at most `lookupsPerPassMax` due effects, one after another, those looked up longest ago (or
 * never) first, and the same effect no more often than every `afterMs`.
 */
export class Reconciler {
  readonly afterMs: number;
  readonly lookupsPerPassMax: number;
  readonly #options: ReconcilerOptions;
  /** When each candidate was last looked up; pruned to the current candidates every pass. */
  readonly #lookedAtMs = new Map<string, number>();
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<ReconcilePass> | null = null;

  constructor(options: ReconcilerOptions) {
    this.#options = options;
    this.afterMs = options.afterMs ?? reconcilerLimits.afterMsDefault;
    this.lookupsPerPassMax = options.lookupsPerPassMax ?? reconcilerLimits.lookupsPerPassMaxDefault;
    if (!Number.isSafeInteger(this.afterMs) || this.afterMs < 0) throw new RangeError('afterMs must be a whole number of ms, 0 or more');
    if (!Number.isSafeInteger(this.lookupsPerPassMax) || this.lookupsPerPassMax < 1) {
      throw new RangeError('lookupsPerPassMax must be a whole number, 1 or more');
    }
  }

  /** The due effects, in the order a pass looks them up. */
  async due(): Promise<string[]> {
    const { journal, nowMs } = this.#options;
    const ids = [...new Set(await this.#options.candidates())];
    const now = nowMs();
    const live = new Set(ids);
    for (const id of this.#lookedAtMs.keys()) if (!live.has(id)) this.#lookedAtMs.delete(id);
    const due: Array<{ id: string; lookedAtMs: number; committedMs: number }> = [];
    for (const id of ids) {
      const lookedAtMs = this.#lookedAtMs.get(id) ?? Number.NEGATIVE_INFINITY;
      if (now - lookedAtMs < this.afterMs) continue;
      const chain = await journal.entries(id);
      if (!isLookupDue(chain, now, this.afterMs)) continue;
      const committedMs = chain.find((entry) => entry.kind === 'COMMITTED')!.ts_ms;
      due.push({ id, lookedAtMs, committedMs });
    }
    due.sort((a, b) => a.lookedAtMs - b.lookedAtMs || a.committedMs - b.committedMs);
    return due.map(({ id }) => id);
  }

  /** One pass: find the due effects and look up at most `lookupsPerPassMax` of them. */
  async runPass(): Promise<ReconcilePass> {
    const { journal, target, nowMs, onConfirmed, onError } = this.#options;
    const due = await this.due();
    const looked: ReconcileOutcome[] = [];
    for (const effectId of due.slice(0, this.lookupsPerPassMax)) {
      this.#lookedAtMs.set(effectId, nowMs());
      let result: ReconcileResult;
      try {
        result = await confirmByLookup(journal, target, effectId);
      } catch (error) {
        result = 'LOOKUP_FAILED';
        onError?.(effectId, error);
      }
      looked.push({ effectId, result });
      if (result === 'CONFIRMED') onConfirmed?.(effectId);
    }
    return { due: due.length, looked };
  }

  /** Run a pass every `intervalMs`, never two at once; the timer does not keep the process alive. */
  start(intervalMs: number): void {
    if (this.#timer !== null) throw new Error('the reconciler is already started');
    if (!Number.isSafeInteger(intervalMs) || intervalMs <= 0) throw new RangeError('intervalMs must be a positive whole number of ms');
    const perSecond = (this.lookupsPerPassMax * 1000) / intervalMs;
    if (perSecond > reconcilerLimits.lookupsPerSecondMax) {
      throw new RangeError(`${this.lookupsPerPassMax} lookups every ${intervalMs} ms is over ${reconcilerLimits.lookupsPerSecondMax} lookups/s`);
    }
    this.#timer = setInterval(() => void this.#tick(), intervalMs);
    this.#timer.unref();
  }

  /** Stop the timer; resolves once a pass in progress has finished. */
  async stop(): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    await this.#running?.catch(() => undefined);
  }

  /** A pass of the timer: none while `mayRun` says another server runs them. */
  async #timedPass(): Promise<ReconcilePass> {
    if (this.#options.mayRun !== undefined && !(await this.#options.mayRun())) return { due: 0, looked: [] };
    return this.runPass();
  }

  async #tick(): Promise<void> {
    if (this.#running !== null) return;
    this.#running = this.#timedPass();
    try {
      await this.#running;
    } catch (error) {
      this.#options.onError?.(null, error);
    } finally {
      this.#running = null;
    }
  }
}
