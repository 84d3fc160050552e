import { randomBytes } from 'node:crypto';
import Stripe from 'stripe';
import type { ReconciliationRun, ReconciliationRunDetail } from '../../shared/api.ts';
import { limits } from '../../shared/limits.ts';
import { RECONCILIATION_CATEGORIES } from '../../shared/reconciliation.ts';
import { JournalCorruptError, type JournalStore } from '../journal/store.ts';
import { EFFECT_METADATA_KEY } from '../targets/stripe-refunds.ts';
import { readJournalSide } from './journal-side.ts';
import { compareRefunds, type Period } from './match.ts';
import { type PacingClock, REAL_PACING_CLOCK, TokenBucket } from './token-bucket.ts';

/** What the runs need from outside. */
export interface ReconciliationRunsOptions {
  journal: Pick<JournalStore, 'scan'>;
  stripe: Stripe;
  /** The wall clock runs are stamped with (journal entries and Stripe's `created` are wall-clock times too). */
  wallMs: () => number;
  /** The time the list pacing waits on; a fake one in tests. */
  pacing?: PacingClock;
  /** Where a failed run's cause is logged (a person sees a sentence on the run). */
  onError?: (runId: string, error: unknown) => void;
}

/** A run as the runs hold it: the answer, plus its key and the promise of its end. */
interface Held {
  run: ReconciliationRunDetail;
  key: string;
  finished: Promise<void>;
}

/**
 * Reconciliation runs with Stripe, in the background: one at a time per period, every run's
 * list calls taken from one token bucket (at most 20 in any second, across runs), each run's
 * progress and result readable while and after it runs.
 *
 * A run's result is kept here, in memory, and never written to the journal: it is a reading of
 * Stripe at one moment, not something Interlock did. Journaled, it would make the journal's
 * views (and their rebuild on restart) depend on what Stripe answered that day, and put entries
 * into no refund's chain; kept apart, a restart forgets it and a new run reads Stripe afresh.
 */
export class ReconciliationRuns {
  readonly #runs = new Map<string, Held>();
  readonly #bucket: TokenBucket;

  constructor(private readonly options: ReconciliationRunsOptions) {
    this.#bucket = new TokenBucket({ burst: limits.reconcileListBurst, perSecond: limits.reconcileListsPerSecond }, options.pacing ?? REAL_PACING_CLOCK);
  }

  /**
   * Whether a start for this period answers a run: its own while it runs, else a new one while
   * fewer than `reconcileRunsRunningMax` run. A caller asks first and refuses the start otherwise.
   */
  mayStart(period: Period): boolean {
    const running = [...this.#runs.values()].filter((held) => held.run.state === 'running');
    return running.some((held) => held.key === keyOf(period)) || running.length < limits.reconcileRunsRunningMax;
  }

  /** Start a run for the period, or answer the one already running for it (`started` false). Only when `mayStart`. */
  start(period: Period, by: string): { run: ReconciliationRunDetail; started: boolean } {
    const key = keyOf(period);
    for (const held of this.#runs.values()) {
      if (held.key === key && held.run.state === 'running') return { run: held.run, started: false };
    }
    if (!this.mayStart(period)) throw new Error(`${limits.reconcileRunsRunningMax} reconciliation runs are running: the caller must ask mayStart first`);
    const run: ReconciliationRunDetail = {
      id: `rec_${randomBytes(8).toString('hex')}`,
      from_ms: period.fromMs,
      to_ms: period.toMs,
      state: 'running',
      started_by: by,
      started_at_ms: this.options.wallMs(),
      finished_at_ms: null,
      progress: { phase: 'reading_journal', payment_intents_done: 0, payment_intents_total: null, refunds_listed: 0 },
      error: null,
      counts: null,
      result: null,
    };
    const finished = this.#execute(run, period);
    this.#runs.set(run.id, { run, key, finished });
    this.#forgetOldest();
    return { run, started: true };
  }

  /** A run with its result, or undefined for an unknown (or forgotten) id. */
  get(runId: string): ReconciliationRunDetail | undefined {
    return this.#runs.get(runId)?.run;
  }

  /** Every run kept, newest first, without rows. */
  list(): ReconciliationRun[] {
    return [...this.#runs.values()].reverse().map(({ run: { result: _result, ...run } }) => run);
  }

  /** Resolves once the run has finished (done or failed); at once for an unknown id. */
  async settled(runId: string): Promise<void> {
    await this.#runs.get(runId)?.finished;
  }

  async #execute(run: ReconciliationRunDetail, period: Period): Promise<void> {
    try {
      const journal = await readJournalSide(this.options.journal);
      const paymentIntents = [...journal.byPaymentIntent.keys()];
      if (paymentIntents.length > limits.reconcilePaymentIntentsMax) {
        throw new RunRefusal(`Interlock has seen ${paymentIntents.length} payments, more than the ${limits.reconcilePaymentIntentsMax} one run lists`);
      }
      run.progress = { ...run.progress, phase: 'listing_stripe', payment_intents_total: paymentIntents.length };
      const window = { fromMs: period.fromMs - limits.reconcileSlackMs, toMs: period.toMs + limits.reconcileSlackMs };
      const stripeRefunds: Stripe.Refund[] = [];
      for (const paymentIntent of paymentIntents) {
        for (const refund of await this.#listRefunds(paymentIntent, window)) stripeRefunds.push(refund);
        run.progress = { ...run.progress, payment_intents_done: run.progress.payment_intents_done + 1, refunds_listed: stripeRefunds.length };
      }
      run.progress = { ...run.progress, phase: 'comparing' };
      const result = compareRefunds({
        journal,
        stripeRefunds,
        period,
        slackMs: limits.reconcileSlackMs,
        effectKey: EFFECT_METADATA_KEY,
        rowsPerCategoryMax: limits.reconcileRowsPerCategoryMax,
      });
      run.result = result;
      run.counts = Object.fromEntries(RECONCILIATION_CATEGORIES.map((category) => [category, result[category].count]));
      run.state = 'done';
    } catch (error) {
      this.options.onError?.(run.id, error);
      run.error = failureSentence(error);
      run.state = 'failed';
    } finally {
      run.progress = { ...run.progress, phase: 'finished' };
      run.finished_at_ms = this.options.wallMs();
    }
  }

  /**
   * Every refund of one payment created within the window, through the SDK's auto-pagination.
   * Each list call takes a token first: the first page's before `list()` sends it, and each next
   * page's before the iterator is asked past the last refund of a full page, which is when the
   * SDK sends for the next one (Stripe fills every page but the last).
   */
  async #listRefunds(paymentIntent: string, window: Period): Promise<Stripe.Refund[]> {
    const pageSize = limits.stripeListLimit;
    const created = { gte: Math.floor(window.fromMs / 1000), lte: Math.floor(window.toMs / 1000) };
    const refunds: Stripe.Refund[] = [];
    await this.#bucket.take();
    for await (const refund of this.options.stripe.refunds.list({ payment_intent: paymentIntent, created, limit: pageSize })) {
      refunds.push(refund);
      if (refunds.length > limits.reconcileRefundsPerPaymentMax) {
        throw new RunRefusal(`${paymentIntent} has more than ${limits.reconcileRefundsPerPaymentMax} refunds in the period; narrow the period`);
      }
      if (refunds.length % pageSize === 0) await this.#bucket.take();
    }
    return refunds;
  }

  /** Past the runs kept, forget the oldest finished one; a running run is never forgotten. */
  #forgetOldest(): void {
    for (const [id, held] of this.#runs) {
      if (this.#runs.size <= limits.reconcileRunsKept) return;
      if (held.run.state !== 'running') this.#runs.delete(id);
    }
  }
}

/** The key of a period: one run at a time per key. */
function keyOf(period: Period): string {
  return `${period.fromMs}-${period.toMs}`;
}

/** A run that cannot go on for a reason a person can act on. */
class RunRefusal extends Error {}

/** What a person is told of a failed run: never exception text from Stripe or SQLite. */
function failureSentence(error: unknown): string {
  if (error instanceof RunRefusal) return `${error.message}.`;
  if (error instanceof JournalCorruptError) return 'The journal failed an integrity check; nothing was compared.';
  if (error instanceof Stripe.errors.StripeError) return `Stripe could not be read (${error.type}); nothing was changed. Start the run again.`;
  return 'The run failed on an error of ours; it is logged. Start the run again.';
}
