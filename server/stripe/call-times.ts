/**
 * How long Stripe takes to answer each call, told by the paced transport (every Stripe call of the
 * process goes through it, the sandbox's included) to whoever listens: the metrics' histogram.
 * One time per HTTP call made, from its request to its answer: the wait for a place in the
 * budget is not in it, and a read made again after a 429 is a second call.
 */

/** How a Stripe call ended: a closed list, the histogram's `outcome` label. */
export const STRIPE_CALL_OUTCOMES = ['ok', 'rate_limited', 'client_error', 'server_error', 'network_error'] as const;
/** One way a Stripe call ended. */
export type StripeCallOutcome = (typeof STRIPE_CALL_OUTCOMES)[number];

/** The outcome of an answer with this HTTP status; null for none (no answer came). */
export function stripeCallOutcome(statusCode: number | null): StripeCallOutcome {
  if (statusCode === null) return 'network_error';
  if (statusCode === 429) return 'rate_limited';
  if (statusCode >= 500) return 'server_error';
  if (statusCode >= 400) return 'client_error';
  return 'ok';
}

/** Told of each call: its endpoint (`POST /v1/refunds`), how it ended, and its time in seconds. */
export type StripeCallListener = (endpoint: string, outcome: StripeCallOutcome, seconds: number) => void;

/** The listeners of one Stripe budget's calls. */
export class StripeCallTimes {
  readonly #listeners = new Set<StripeCallListener>();

  /** Listen to every call from now on; the answer stops listening. */
  listen(listener: StripeCallListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** One call answered (or failed with no answer) after `seconds`. */
  answered(endpoint: string, outcome: StripeCallOutcome, seconds: number): void {
    for (const listener of this.#listeners) listener(endpoint, outcome, seconds);
  }
}
