import type Stripe from 'stripe';
import { checkDemoOptions, DEMO_CUSTOMER, decideCustomer } from './customers.ts';
import { invalidRequest, missingInParam, SandboxError } from './errors.ts';
import { FaultQueue } from './faults.ts';
import { sandboxLimits } from './limits.ts';
import { decideDispute, decideDisputeMove, decidePaymentIntent } from './payments.ts';
import type { Read } from './params.ts';
import { type CreatedRefundStatus, decideRefund, decideSettlement, type RefundRequest } from './refunds.ts';
import { renderDispute, renderPaymentIntent, renderRefund } from './render.ts';
import { RequestCounter } from './counts.ts';
import { chargeView, EXPAND_NOTHING, type ExpandMode } from './expand.ts';
import { RateLimiter, type RateLimitMode } from './rate-limits.ts';
import type { RestrictedKeyPermission } from './permissions.ts';
import { DEFAULT_SETTINGS, type KeyMode, type SandboxSettings, type SettleMode } from './settings.ts';
import { SandboxStore } from './store.ts';
import {
  type DemoPaymentOptions,
  type DisputeMove,
  type DisputeRecord,
  PAYMENT_METHODS,
  type PaymentIntentRecord,
  type RefundRecord,
  type SandboxRecord,
  type SettleOutcome,
  type StripeFailure,
  type WebhookConfig,
} from './types.ts';
import { buildChargeEvent, buildDisputeEvent, buildRefundEvent, type EventCause, WebhookSender } from './webhooks.ts';

/** What the engine is built from. */
export interface EngineOptions {
  file?: string;
  clockMs?: () => number;
  settle?: SettleMode;
  rateLimits?: RateLimitMode;
  expand?: ExpandMode;
  mode?: KeyMode;
  deniedPermissions?: RestrictedKeyPermission[];
  webhook?: WebhookConfig;
}

/**
 * The sandbox's state and the operations both the HTTP API and the programmatic API share:
 * the clock, the store, faults, settings, the rate limiter and its counts, settlement and
 * webhooks. Decisions come from the pure modules
 * (`refunds.ts`, `payments.ts`); this class loads, commits and emits.
 */
export class SandboxEngine {
  readonly store: SandboxStore;
  readonly faults = new FaultQueue();
  readonly webhooks: WebhookSender;
  readonly limiter: RateLimiter;
  readonly counts = new RequestCounter();
  private settleMode: SettleMode;
  private expandMode: ExpandMode;
  private keyMode: KeyMode;
  private deniedPermissions: RestrictedKeyPermission[];
  private readonly baseClockMs: () => number;
  private offsetMs: number;
  private closed = false;

  constructor(options: EngineOptions) {
    this.store = new SandboxStore(options.file);
    this.baseClockMs = options.clockMs ?? Date.now;
    this.offsetMs = this.store.clockOffsetMs();
    this.settleMode = options.settle ?? DEFAULT_SETTINGS.settle;
    this.limiter = new RateLimiter(options.rateLimits ?? DEFAULT_SETTINGS.rateLimits);
    this.expandMode = options.expand ?? DEFAULT_SETTINGS.expand;
    this.keyMode = options.mode ?? DEFAULT_SETTINGS.mode;
    this.deniedPermissions = [...(options.deniedPermissions ?? DEFAULT_SETTINGS.deniedPermissions)];
    this.webhooks = new WebhookSender(() => this.nowMs(), options.webhook ?? null, () => this.keyMode === 'live');
  }

  /** The settings in force. */
  settings(): SandboxSettings {
    return {
      rateLimits: this.limiter.current(),
      settle: this.settleMode,
      expand: this.expandMode,
      mode: this.keyMode,
      deniedPermissions: [...this.deniedPermissions],
    };
  }

  /** Change the settings given, from the next request on; the others stay as they are. */
  configure(settings: Partial<SandboxSettings>): SandboxSettings {
    if (settings.rateLimits !== undefined) this.limiter.setMode(settings.rateLimits);
    if (settings.settle !== undefined) this.settleMode = settings.settle;
    if (settings.expand !== undefined) this.expandMode = settings.expand;
    if (settings.mode !== undefined) this.keyMode = settings.mode;
    if (settings.deniedPermissions !== undefined) this.deniedPermissions = [...settings.deniedPermissions];
    return this.settings();
  }

  /** What a refund is created as: `succeeded` when settling at creation, `pending` otherwise. */
  createdRefundStatus(): CreatedRefundStatus {
    return this.settleMode === 'at_create' ? 'succeeded' : 'pending';
  }

  /** The sandbox clock: the base clock plus every advance so far. */
  nowMs(): number {
    return this.baseClockMs() + this.offsetMs;
  }

  /** Move the sandbox clock forward (keys age, `created` moves); the advance is stored. */
  advanceClock(ms: number): Read<number> {
    if (!Number.isInteger(ms) || ms < 0 || ms > sandboxLimits.clockAdvanceMsMax) {
      return refuse(
        invalidRequest(null, `Advance by a whole number of ms from 0 to ${sandboxLimits.clockAdvanceMsMax}.`, 'ms'),
      );
    }
    this.offsetMs += ms;
    this.store.setClockOffsetMs(this.offsetMs);
    return { ok: true, value: this.nowMs() };
  }

  /**
   * A confirmed demo payment in USD, made without going through HTTP (control routes, tests): for
   * a customer (a named test customer unless told otherwise, none for null), paid with the test
   * token's card or the one given, charged now or at `chargedAtMs`.
   */
  createPaymentIntent(
    amountCents: number,
    paymentMethod: string,
    options: DemoPaymentOptions = {},
  ): Read<Stripe.PaymentIntent> {
    const badAmount = checkAmountCents(amountCents);
    if (badAmount) return refuse(badAmount);
    const method = PAYMENT_METHODS.find((known) => known === paymentMethod);
    if (method === undefined) return refuse(missingInParam('payment_method', paymentMethod, 'payment_method'));
    const nowMs = this.nowMs();
    const badOptions = checkDemoOptions(options, nowMs);
    if (badOptions) return refuse(badOptions);
    const chargedAtMs = options.chargedAtMs ?? nowMs;
    const customerDetails = options.customer === undefined ? DEMO_CUSTOMER : options.customer;
    const customer = customerDetails === null ? null : decideCustomer(customerDetails, chargedAtMs);
    const request = {
      amountCents,
      currency: 'usd',
      paymentMethod: method,
      customerId: customer?.id ?? null,
      confirm: true,
      description: null,
      metadata: {},
    };
    const writes = decidePaymentIntent(request, chargedAtMs, options.card ?? null);
    if (!writes.ok) return writes;
    this.store.commit(customer === null ? writes.value : [customer, ...writes.value]);
    this.afterPaymentWrites(writes.value);
    const intent = writes.value.find((record): record is PaymentIntentRecord => record.kind === 'payment_intent');
    if (intent === undefined) throw new Error('a payment step must write its payment intent');
    return { ok: true, value: renderPaymentIntent(intent) };
  }

  /** After a payment step is durable: a dispute it opened (`pm_card_createDispute`) is told by webhook. */
  afterPaymentWrites(writes: readonly SandboxRecord[]): void {
    for (const record of writes) {
      if (record.kind === 'dispute') this.afterDisputeOpened(record);
    }
  }

  /** A refund made in the dashboard: no idempotency key, no metadata, same ledger rules. */
  handRefund(paymentIntentId: string, amountCents: number): Read<Stripe.Refund> {
    const badAmount = checkAmountCents(amountCents);
    if (badAmount) return refuse(badAmount);
    const request: RefundRequest = { paymentIntentId, chargeId: null, amountCents, metadata: {}, reason: null };
    const decision = decideRefund(this.store, request, 'dashboard', this.nowMs(), this.createdRefundStatus());
    if (!decision.ok) return decision;
    this.store.commit([decision.value]);
    const created = renderRefund(decision.value);
    this.afterRefundCreated(decision.value, null);
    return { ok: true, value: created };
  }

  /**
   * After a refund is durable and answered: tell webhooks (`refund.created`, and `charge.refunded`
   * with what it changed on the charge), and settle it when settling is immediate.
   */
  afterRefundCreated(refund: RefundRecord, cause: EventCause | null): void {
    const nowMs = this.nowMs();
    this.webhooks.emit(buildRefundEvent('refund.created', renderRefund(refund), cause, nowMs));
    const charge = this.store.charges.get(refund.chargeId);
    if (charge !== undefined) {
      const refunded = chargeView(this.store, charge, EXPAND_NOTHING);
      // A refund is never created failed, so before it the charge had its amount less this one.
      const before = refunded.amount_refunded - refund.amountCents;
      const previous = refunded.refunded ? { amount_refunded: before, refunded: false } : { amount_refunded: before };
      this.webhooks.emit(buildChargeEvent('charge.refunded', refunded, cause, nowMs, previous));
    }
    if (this.settleMode === 'immediate') this.settleOne(refund.id, 'succeeded');
  }

  /** Open a dispute on a payment intent's charge, as the cardholder's bank does: `charge.dispute.created` follows. */
  openDispute(paymentIntentId: string): Read<Stripe.Dispute> {
    const decision = decideDispute(this.store, paymentIntentId, this.nowMs());
    if (!decision.ok) return decision;
    this.store.commit([decision.value]);
    this.afterDisputeOpened(decision.value);
    return { ok: true, value: renderDispute(decision.value) };
  }

  /**
   * Move an open dispute: evidence submitted (`under_review`, then `charge.dispute.updated`) or
   * the bank's decision (`won` or `lost`, then `charge.dispute.closed`). The charge stays disputed.
   */
  moveDispute(disputeId: string, move: DisputeMove): Read<Stripe.Dispute> {
    const dispute = this.store.disputes.get(disputeId);
    if (dispute === undefined) return refuse(missingInParam('dispute', disputeId, 'dispute'));
    const decision = decideDisputeMove(dispute, move);
    if (!decision.ok) return decision;
    this.store.commit([decision.value]);
    const rendered = renderDispute(decision.value);
    const before = renderDispute(dispute);
    // As Stripe does, the event names what changed by its values before.
    if (move === 'under_review') {
      const previous = { status: before.status, evidence_details: before.evidence_details };
      this.webhooks.emit(buildDisputeEvent('charge.dispute.updated', rendered, null, this.nowMs(), previous));
    } else {
      this.webhooks.emit(buildDisputeEvent('charge.dispute.closed', rendered, null, this.nowMs(), { status: before.status }));
    }
    return { ok: true, value: rendered };
  }

  private afterDisputeOpened(dispute: DisputeRecord): void {
    this.webhooks.emit(buildDisputeEvent('charge.dispute.created', renderDispute(dispute), null, this.nowMs()));
  }

  /**
   * Settle refunds: a named one, or every pending one when no id is given. A failed refund no
   * longer counts against the charge.
   */
  settle(refundId: string | null, outcome: SettleOutcome, failureReason?: string): Read<Stripe.Refund[]> {
    if (refundId !== null) {
      const settled = this.settleOne(refundId, outcome, failureReason);
      return settled.ok ? { ok: true, value: [settled.value] } : settled;
    }
    const pending = [...this.store.refunds.values()].filter((refund) => refund.status === 'pending');
    const settled: Stripe.Refund[] = [];
    for (const refund of pending) {
      const one = this.settleOne(refund.id, outcome, failureReason);
      if (one.ok) settled.push(one.value);
    }
    return { ok: true, value: settled };
  }

  /** Every refund in creation order: the ground truth a test checks Interlock against. */
  ledger(paymentIntentId?: string): Stripe.Refund[] {
    return [...this.store.refunds.values()]
      .filter((refund) => paymentIntentId === undefined || refund.paymentIntentId === paymentIntentId)
      .map(renderRefund);
  }

  /** False once closed: a request still waiting (a delay fault) then stops without touching state. */
  isOpen(): boolean {
    return !this.closed;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.webhooks.close();
    this.store.close();
  }

  private settleOne(refundId: string, outcome: SettleOutcome, failureReason?: string): Read<Stripe.Refund> {
    const refund = this.store.refunds.get(refundId);
    if (refund === undefined) return refuse(missingInParam('refund', refundId, 'refund'));
    const decision = decideSettlement(refund, outcome, failureReason);
    if (!decision.ok) return decision;
    this.store.commit([decision.value]);
    const rendered = renderRefund(decision.value);
    const nowMs = this.nowMs();
    if (decision.value.status === 'failed') {
      this.webhooks.emit(buildRefundEvent('refund.failed', rendered, null, nowMs));
    }
    this.webhooks.emit(buildRefundEvent('refund.updated', rendered, null, nowMs, { status: refund.status }));
    return { ok: true, value: rendered };
  }
}

/** Unwrap a decision for the programmatic API: a refusal becomes a thrown SandboxError. */
export function orThrow<T>(read: Read<T>): T {
  if (!read.ok) throw new SandboxError(read.failure);
  return read.value;
}

/** An amount given by a test or a control route: whole cents, 1 to Stripe's ceiling. */
function checkAmountCents(amountCents: number): StripeFailure | null {
  if (Number.isInteger(amountCents) && amountCents >= 1 && amountCents <= sandboxLimits.amountCentsMax) return null;
  const message = `This value must be a whole number of cents from 1 to ${sandboxLimits.amountCentsMax}.`;
  return invalidRequest('parameter_invalid_integer', message, 'amount');
}

function refuse<T>(failure: StripeFailure): Read<T> {
  return { ok: false, failure };
}
