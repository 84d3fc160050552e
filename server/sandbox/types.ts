import type Stripe from 'stripe';

/** Stripe object shapes the sandbox answers with (the SDK's own types). */
export type Refund = Stripe.Refund;
export type PaymentIntent = Stripe.PaymentIntent;
export type Charge = Stripe.Charge;
export type Dispute = Stripe.Dispute;
export type Customer = Stripe.Customer;
export type PaymentMethod = Stripe.PaymentMethod;
export type StripeEvent = Stripe.Event;

/**
 * Test payment methods the sandbox knows, as in Stripe test mode: tokens that stand for a test
 * card. Confirming a payment with one makes a PaymentMethod object (`pm_...`) of that card.
 */
export const PAYMENT_METHODS = ['pm_card_visa', 'pm_card_mastercard', 'pm_card_amex', 'pm_card_createDispute'] as const;
/** One known test payment method. */
export type PaymentMethodId = (typeof PAYMENT_METHODS)[number];

/** Card brands, as Stripe names them in `card.brand`. */
export const CARD_BRANDS = ['amex', 'diners', 'discover', 'jcb', 'mastercard', 'unionpay', 'visa'] as const;
export type CardBrand = (typeof CARD_BRANDS)[number];

/** What a card payment method shows of its card. */
export interface CardDetails {
  brand: CardBrand;
  /** The last four digits of the card number. */
  last4: string;
}

/** Who paid, as a demo payment names them (`null` fields are left empty, as in Stripe). */
export interface CustomerDetails {
  name: string | null;
  email: string | null;
}

/**
 * What a demo payment (control route or `createPaymentIntent`) may set beyond its amount: the
 * customer (a named test customer when absent, none when null), the card (the payment method's
 * test card when absent) and when it was charged (now when absent; never in the future).
 */
export interface DemoPaymentOptions {
  customer?: CustomerDetails | null;
  card?: CardDetails;
  chargedAtMs?: number;
}

/** Payment intent statuses the sandbox reaches. */
export const PAYMENT_INTENT_STATUSES = ['requires_payment_method', 'requires_confirmation', 'succeeded'] as const;
export type PaymentIntentStatus = (typeof PAYMENT_INTENT_STATUSES)[number];

/** Refund statuses the sandbox reaches (Stripe also has requires_action and canceled). */
export const REFUND_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type RefundStatus = (typeof REFUND_STATUSES)[number];

/** Reasons a caller may give for a refund. */
export const REFUND_REASONS = ['duplicate', 'fraudulent', 'requested_by_customer'] as const;
export type RefundReason = (typeof REFUND_REASONS)[number];

/** Where a refund came from: the API (an agent, through Interlock) or the dashboard (by hand). */
export const REFUND_ORIGINS = ['api', 'dashboard'] as const;
export type RefundOrigin = (typeof REFUND_ORIGINS)[number];

/** Outcomes of a settlement. */
export const SETTLE_OUTCOMES = ['succeeded', 'failed'] as const;
export type SettleOutcome = (typeof SETTLE_OUTCOMES)[number];

/** Dispute statuses the sandbox reaches: open and waiting for evidence, evidence under review, and closed won or lost. */
export const DISPUTE_STATUSES = ['needs_response', 'under_review', 'won', 'lost'] as const;
export type DisputeStatus = (typeof DISPUTE_STATUSES)[number];
/** What a dispute can move to once open: evidence submitted, or the bank's decision (which closes it). */
export const DISPUTE_MOVES = ['under_review', 'won', 'lost'] as const;
export type DisputeMove = (typeof DISPUTE_MOVES)[number];

/** Refund event types the sandbox sends. */
export const REFUND_EVENT_TYPES = ['refund.created', 'refund.updated', 'refund.failed'] as const;
export type RefundEventType = (typeof REFUND_EVENT_TYPES)[number];
/** Dispute event types the sandbox sends: opened, moved (evidence), closed (won or lost). */
export const DISPUTE_EVENT_TYPES = ['charge.dispute.created', 'charge.dispute.updated', 'charge.dispute.closed'] as const;
export type DisputeEventType = (typeof DISPUTE_EVENT_TYPES)[number];
/** Charge event types the sandbox sends: a charge refunded, in part or in full, when a refund of it is created. */
export const CHARGE_EVENT_TYPES = ['charge.refunded'] as const;
export type ChargeEventType = (typeof CHARGE_EVENT_TYPES)[number];
/** Webhook event types the sandbox sends. */
export const EVENT_TYPES = [...REFUND_EVENT_TYPES, ...CHARGE_EVENT_TYPES, ...DISPUTE_EVENT_TYPES] as const;
export type EventType = (typeof EVENT_TYPES)[number];
/**
 * What an endpoint that names no events is sent: the refund and dispute events, what the sandbox
 * always sent and what Interlock's endpoint reads. A Stripe endpoint receives only the events it
 * enables; `charge.refunded` comes to one that enables it (or `*`).
 */
export const DEFAULT_WEBHOOK_EVENTS: readonly EventType[] = [...REFUND_EVENT_TYPES, ...DISPUTE_EVENT_TYPES];
/** The refund events the sandbox sends, as the SDK types them: one per type in REFUND_EVENT_TYPES. */
export type RefundEvent = Stripe.RefundCreatedEvent | Stripe.RefundUpdatedEvent | Stripe.RefundFailedEvent;
/** The dispute events the sandbox sends, as the SDK types them: one per type in DISPUTE_EVENT_TYPES. */
export type DisputeEvent = Stripe.ChargeDisputeCreatedEvent | Stripe.ChargeDisputeUpdatedEvent | Stripe.ChargeDisputeClosedEvent;
/** The charge events the sandbox sends, as the SDK types them: one per type in CHARGE_EVENT_TYPES. */
export type ChargeEvent = Stripe.ChargeRefundedEvent;
/** Every event the sandbox sends. */
export type SandboxEvent = RefundEvent | ChargeEvent | DisputeEvent;

/** Endpoints a fault can be attached to. */
export const FAULT_TARGETS = ['refund_create'] as const;
export type FaultTarget = (typeof FAULT_TARGETS)[number];

/**
 * What a fault does to the request it catches.
 * - `drop_after_commit`: commit the refund, then destroy the socket with no answer. A replay of
 *   a saved answer is dropped too (the network between is what fails).
 * - `error_500`: the endpoint starts, does nothing and answers 500; the 500 is saved for the key.
 * - `error_500_after_commit`: commit the refund, then answer 500; the 500 is saved for the key.
 * - `error_429`: the rate limiter refuses before the endpoint runs; nothing is saved.
 * - `delay`: wait `delayMs` with the key in use, then run normally.
 * - `lock_timeout`: the write meets its payment's lock held elsewhere (429 `lock_timeout`) once its
 *   parameters are read and before the endpoint decides; nothing is made or saved. It may name the
 *   `paymentIntent` whose creates it catches and the `share` of them it catches.
 */
export const FAULT_ACTIONS = [
  'drop_after_commit',
  'error_500',
  'error_500_after_commit',
  'error_429',
  'delay',
  'lock_timeout',
] as const;
export type FaultAction = (typeof FAULT_ACTIONS)[number];

/** A fault to inject into the next request(s) of an endpoint. */
export interface Fault {
  on: FaultTarget;
  action: FaultAction;
  delayMs?: number;
  /** How many requests it catches; 1 when absent. */
  times?: number;
  /** `lock_timeout` only: it catches refund creates on this payment intent (by it or its charge) only. */
  paymentIntent?: string;
  /**
   * `lock_timeout` only: the share of the matching requests it catches, from above 0 to 1 (1 when
   * absent), spread evenly: with 0.5 every second one, until `times` are caught.
   */
  share?: number;
}

/** Test switches for webhook delivery. */
export interface WebhookMode {
  /** Deliver every event twice. */
  duplicate?: boolean;
  /** Deliver each batch of events (those raised together) in reverse order. */
  reverse?: boolean;
  /** Wait this long before delivering a batch. */
  delayMs?: number;
  /** Send no Stripe-Signature header. */
  unsigned?: boolean;
  /** Sign with a secret other than the configured one. */
  wrongSecret?: boolean;
}

/** Where webhooks go, the endpoint secret they are signed with, and the events it enables. */
export interface WebhookConfig {
  url: string;
  /** `whsec_...` */
  secret: string;
  /** The event types sent, as a Stripe endpoint's `enabled_events` (`*` for all); DEFAULT_WEBHOOK_EVENTS when absent. */
  events?: readonly (EventType | '*')[];
}

/** One delivery attempt of one event. */
export interface Delivery {
  eventId: string;
  type: EventType;
  /** 1 for the first attempt. */
  attempt: number;
  /** The endpoint's HTTP status, or 0 when it could not be reached or timed out. */
  status: number;
  /** The Stripe-Signature header sent, or null when unsigned. */
  signature: string | null;
  error?: string;
  atMs: number;
  /** The raw body sent, exactly as signed. */
  body: string;
}

/**
 * A payment intent as the sandbox keeps it. `paymentMethod` is the test token it was given;
 * `paymentMethodId` the PaymentMethod object confirming made of it. The customer and that object
 * are optional: files written before the sandbox knew them lack both, and read as none.
 */
export interface PaymentIntentRecord {
  kind: 'payment_intent';
  id: string;
  amountCents: number;
  currency: string;
  paymentMethod: PaymentMethodId | null;
  paymentMethodId?: string | null;
  customerId?: string | null;
  status: PaymentIntentStatus;
  latestChargeId: string | null;
  clientSecret: string;
  description: string | null;
  metadata: Record<string, string>;
  createdMs: number;
}

/** A charge as the sandbox keeps it; refunded amounts and disputes are derived, never stored. */
export interface ChargeRecord {
  kind: 'charge';
  id: string;
  paymentIntentId: string;
  amountCents: number;
  currency: string;
  paymentMethod: PaymentMethodId;
  paymentMethodId?: string | null;
  customerId?: string | null;
  createdMs: number;
}

/** A customer as the sandbox keeps it. */
export interface CustomerRecord {
  kind: 'customer';
  id: string;
  name: string | null;
  email: string | null;
  createdMs: number;
}

/** A card payment method, made when a payment is confirmed with a test token. */
export interface PaymentMethodRecord {
  kind: 'payment_method';
  id: string;
  brand: CardBrand;
  last4: string;
  expMonth: number;
  expYear: number;
  customerId: string | null;
  createdMs: number;
}

/** A refund as the sandbox keeps it. */
export interface RefundRecord {
  kind: 'refund';
  id: string;
  amountCents: number;
  currency: string;
  chargeId: string;
  paymentIntentId: string;
  status: RefundStatus;
  reason: RefundReason | null;
  failureReason: string | null;
  metadata: Record<string, string>;
  origin: RefundOrigin;
  createdMs: number;
}

/**
 * A dispute as the sandbox keeps it. Files written before disputes moved lack `status` and
 * `evidenceSubmitted`: such a dispute is open and waiting for evidence.
 */
export interface DisputeRecord {
  kind: 'dispute';
  id: string;
  chargeId: string;
  paymentIntentId: string;
  amountCents: number;
  currency: string;
  reason: string;
  status?: DisputeStatus | null;
  evidenceSubmitted?: boolean | null;
  createdMs: number;
}

/** Any object the sandbox stores. */
export type SandboxRecord =
  | PaymentIntentRecord
  | ChargeRecord
  | RefundRecord
  | DisputeRecord
  | CustomerRecord
  | PaymentMethodRecord;

/** Stripe's error types (the `type` field of an error answer). */
export const STRIPE_ERROR_TYPES = ['api_error', 'idempotency_error', 'invalid_request_error'] as const;
export type StripeErrorType = (typeof STRIPE_ERROR_TYPES)[number];

/** Error codes the sandbox answers with, all of them Stripe's own. */
export const STRIPE_ERROR_CODES = [
  'amount_too_large',
  'charge_already_refunded',
  'charge_disputed',
  'email_invalid',
  'idempotency_key_in_use',
  'lock_timeout',
  'parameter_invalid_empty',
  'parameter_invalid_integer',
  'parameter_invalid_string_blank',
  'parameter_missing',
  'parameter_unknown',
  'parameters_exclusive',
  'payment_intent_unexpected_state',
  'rate_limit',
  'resource_missing',
] as const;
export type StripeErrorCode = (typeof STRIPE_ERROR_CODES)[number];

/** The `error` member of a Stripe error answer. */
export interface StripeErrorBody {
  type: StripeErrorType;
  code?: StripeErrorCode;
  /** The page documenting `code`; set when the error is answered (`errorJson`). */
  doc_url?: string;
  message: string;
  param?: string;
}

/** A refusal or failure with the HTTP status it is answered with. */
export interface StripeFailure {
  statusCode: number;
  error: StripeErrorBody;
}
