// Reconciliation with Stripe: its closed sets of words, as the API (GET /api/reconciliation/:run_id)
// and the Reconciliation page name them. No I/O.

/**
 * How one refund of a period compares, journal against Stripe:
 * - `matched`: the journal's COMMITTED and Stripe's refund carry the same effect id and amount;
 * - `missing_in_stripe`: the journal says COMMITTED, and Stripe lists no refund with its effect id;
 * - `amount_mismatch`: both sides have it, with different amounts;
 * - `by_hand`: Stripe lists a refund on a payment Interlock has seen that Interlock did not make
 *   (no effect id of ours in its metadata): the dashboard, another system;
 * - `unrecorded`: Stripe lists a refund with one of our effect ids that the journal has not
 *   recorded as COMMITTED (a send still in flight, or one that ended AMBIGUOUS);
 * - `failed_at_stripe`: the journal says COMMITTED, and Stripe lists its refund as `failed` or
 *   `canceled`: no money went back, so it is not matched money (as the scoreboard's failed at
 *   Stripe). Added after the others, so it comes last.
 */
export const RECONCILIATION_CATEGORIES = ['matched', 'missing_in_stripe', 'amount_mismatch', 'by_hand', 'unrecorded', 'failed_at_stripe'] as const;
/** One category of a reconciliation. */
export type ReconciliationCategory = (typeof RECONCILIATION_CATEGORIES)[number];

/** Where a run stands: listing still, finished with a result, or stopped by a failure (and why). */
export const RECONCILIATION_STATES = ['running', 'done', 'failed'] as const;
/** One state of a run. */
export type ReconciliationState = (typeof RECONCILIATION_STATES)[number];

/** What a running run is doing: reading the journal, listing Stripe's refunds payment by payment, or comparing. */
export const RECONCILIATION_PHASES = ['reading_journal', 'listing_stripe', 'comparing', 'finished'] as const;
/** One phase of a run. */
export type ReconciliationPhase = (typeof RECONCILIATION_PHASES)[number];
