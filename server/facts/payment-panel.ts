import type Stripe from 'stripe';
import type { PaymentPanel, PaymentRefund } from '../../shared/api.ts';
import { type PacingClock, REAL_PACING_CLOCK, TokenBucket } from '../reconcile/token-bucket.ts';
import { EFFECT_METADATA_KEY } from '../targets/stripe-refunds.ts';
import { factsLimits } from './limits.ts';

// The payment an item is about, as Stripe has it: who paid, with which card, when, every refund
// and who made it, and any dispute. Display only, like the current facts: nothing decides on it.

export interface PaymentPanelsOptions {
  stripe: Stripe;
  /** Every refund of a payment, in any status (the Stripe target's paged list). */
  listRefunds(paymentIntent: string): Promise<Stripe.Refund[]>;
  /** Stripe test mode, where the payment has a dashboard page; false for the local sandbox. */
  dashboard: boolean;
  /** Wall clock ms. */
  wallMs(): number;
  /** The time the item pages' read budget refills on; real time unless a test gives its own. */
  pacing?: PacingClock;
}

/** An item page asked for a panel when the item pages' Stripe reads were spent, and none was kept. */
export class PageReadsSpentError extends Error {
  constructor() {
    super('the item pages have read Stripe as often as they may just now');
  }
}

/** What a panel is read for: the item, its payment, how far its chain has moved, and the request ids the journal knows. */
export interface PanelRequest {
  effectId: string;
  paymentIntent: string;
  /** Anything that moves when the item's own chain moves (its entry count): a decision or a send reads Stripe again. */
  version: number;
  /**
   * The request an Interlock refund was made for, from the effect id in its metadata; null when
   * the journal does not know it, or the reader may not see that request. Asked on every read,
   * kept panel or not: one item's panel is shown to everyone who may open the item.
   */
  requestIdOf(effectId: string): Promise<string | null> | string | null;
}

/** A panel as read, with the effect id each refund was sent for (its request is named per reader). */
interface Read {
  panel: PaymentPanel;
  sentFor: (string | null)[];
}

interface Kept extends Read {
  paymentIntent: string;
  version: number;
}

/** Where the dashboard shows a test-mode payment. */
export function dashboardUrl(paymentIntent: string): string {
  return `https://dashboard.stripe.com/test/payments/${encodeURIComponent(paymentIntent)}`;
}

/**
 * Payment panels read through the `stripe` SDK (the payment intent with its latest charge,
 * customer and payment method expanded, its refunds, its latest dispute: three reads), kept per
 * item for a minute, so opening an item twice reads Stripe once. A panel is read again sooner
 * when the item's chain moved or a webhook named its payment; two opens at once share one read.
 */
export class PaymentPanels {
  readonly #options: PaymentPanelsOptions;
  /** Least recently read first. */
  readonly #kept = new Map<string, Kept>();
  readonly #reading = new Map<string, Promise<Read>>();
  /** Moves on every `forget`: a read that was under way then is answered, not kept. */
  #forgets = 0;
  /** Every Stripe read an item page starts, its panel's and its facts': `itemPageReadsBurst` at once, `itemPageReadsPerSecond` after. */
  readonly #pageReads: TokenBucket;

  constructor(options: PaymentPanelsOptions) {
    this.#options = options;
    this.#pageReads = new TokenBucket({ burst: factsLimits.itemPageReadsBurst, perSecond: factsLimits.itemPageReadsPerSecond }, options.pacing ?? REAL_PACING_CLOCK);
  }

  /** Whether an item page may read Stripe now (its facts now); false once the item pages' reads are spent. */
  takePageRead(): boolean {
    return this.#pageReads.tryTake();
  }

  /** The item's payment panel, from the cache when it is fresh. A failed read throws and is not kept. */
  async read(request: PanelRequest): Promise<PaymentPanel> {
    const kept = this.#kept.get(request.effectId);
    const fresh =
      kept !== undefined &&
      kept.version === request.version &&
      this.#options.wallMs() - kept.panel.as_of_ms < factsLimits.panelTtlMs;
    if (fresh) return named(kept, request);
    const key = `${request.effectId}:${request.version}`;
    const inFlight = this.#reading.get(key);
    if (inFlight !== undefined) return named(await inFlight, request);
    // The budget spent: the panel last read, however old (it says when), else none.
    if (!this.takePageRead()) {
      if (kept !== undefined) return named(kept, request);
      throw new PageReadsSpentError();
    }
    const forgets = this.#forgets;
    const reading = this.#readPanel(request).finally(() => this.#reading.delete(key));
    this.#reading.set(key, reading);
    const read = await reading;
    if (forgets === this.#forgets) this.#keep(request, read);
    return named(read, request);
  }

  /** A verified Stripe event named this payment: its panels are read again next time. */
  forget(paymentIntent: string): void {
    this.#forgets += 1;
    for (const [effectId, kept] of this.#kept) {
      if (kept.paymentIntent === paymentIntent) this.#kept.delete(effectId);
    }
  }

  #keep(request: PanelRequest, read: Read): void {
    this.#kept.delete(request.effectId);
    this.#kept.set(request.effectId, { ...read, paymentIntent: request.paymentIntent, version: request.version });
    for (const effectId of this.#kept.keys()) {
      if (this.#kept.size <= factsLimits.panelsKeptMax) break;
      this.#kept.delete(effectId);
    }
  }

  async #readPanel(request: PanelRequest): Promise<Read> {
    const { stripe } = this.#options;
    const asOfMs = this.#options.wallMs();
    const [intent, refunds, disputes] = await Promise.all([
      stripe.paymentIntents.retrieve(request.paymentIntent, { expand: ['latest_charge', 'customer', 'payment_method'] }),
      this.#options.listRefunds(request.paymentIntent),
      stripe.disputes.list({ payment_intent: request.paymentIntent, limit: 1 }),
    ]);
    const charge = expanded(intent.latest_charge);
    const customer = expanded(intent.customer);
    const dispute = disputes.data[0];
    // Stripe lists newest first; the panel reads oldest first (a stable sort keeps a second's refunds in order).
    const oldestFirst = [...refunds].reverse().sort((a, b) => a.created - b.created);
    const panel: PaymentPanel = {
      payment_intent: intent.id,
      amount: intent.amount,
      currency: intent.currency,
      charged_at_ms: charge === null ? null : charge.created * 1000,
      customer: customer === null ? null : { name: 'deleted' in customer ? null : (customer.name ?? null), email: 'deleted' in customer ? null : customer.email },
      card: cardOf(expanded(intent.payment_method), charge),
      refunds: oldestFirst.map((refund) => paymentRefund(refund, () => null)),
      dispute: dispute === undefined ? null : disputeOf(dispute),
      dashboard_url: this.#options.dashboard ? dashboardUrl(intent.id) : null,
      as_of_ms: asOfMs,
    };
    return { panel, sentFor: oldestFirst.map((refund) => refund.metadata?.[EFFECT_METADATA_KEY] ?? null) };
  }
}

/** A panel as this reader is shown it: each Interlock refund's request named only when they may see it. */
async function named(read: Read, request: PanelRequest): Promise<PaymentPanel> {
  const refunds = await Promise.all(
    read.panel.refunds.map(async (refund, i) => {
      const effectId = read.sentFor[i] ?? null;
      return { ...refund, request_id: effectId === null ? null : await request.requestIdOf(effectId) };
    }),
  );
  return { ...read.panel, refunds };
}

/** One refund and who made it: Interlock (its effect id in the metadata) or someone outside it. */
export function paymentRefund(refund: Stripe.Refund, requestIdOf: (effectId: string) => string | null): PaymentRefund {
  const effectId = refund.metadata?.[EFFECT_METADATA_KEY];
  return {
    id: refund.id,
    amount: refund.amount,
    status: refund.status ?? 'unknown',
    created_ms: refund.created * 1000,
    by: effectId === undefined ? 'outside' : 'interlock',
    request_id: effectId === undefined ? null : requestIdOf(effectId),
  };
}

/** A dispute as the panel shows it: what the bank took back, and by when the evidence is due. */
function disputeOf(dispute: Stripe.Dispute): NonNullable<PaymentPanel['dispute']> {
  const dueBy = dispute.evidence_details?.due_by;
  return {
    status: dispute.status,
    reason: dispute.reason ?? null,
    amount: dispute.amount,
    currency: dispute.currency,
    due_by_ms: typeof dueBy === 'number' ? dueBy * 1000 : null,
  };
}

/** The card the payment was made with: the payment method's, or else the charge's record of it. */
function cardOf(method: Stripe.PaymentMethod | null, charge: Stripe.Charge | null): PaymentPanel['card'] {
  if (method?.card) return { brand: method.card.brand, last4: method.card.last4 };
  const card = charge?.payment_method_details?.card;
  if (card?.brand && card.last4) return { brand: card.brand, last4: card.last4 };
  return null;
}

/** An expanded field's object; null when Stripe left it an id (a server that ignores `expand`) or there is none. */
function expanded<T extends { id: string }>(value: string | T | null | undefined): T | null {
  return value === null || value === undefined || typeof value === 'string' ? null : value;
}
