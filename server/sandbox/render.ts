import type Stripe from 'stripe';
import { refundedCents } from './refunds.ts';
import { billingDetails, chargeCardDetails } from './render-cards.ts';
import type {
  ChargeRecord,
  CustomerRecord,
  DisputeRecord,
  PaymentIntentRecord,
  PaymentMethodRecord,
  RefundRecord,
} from './types.ts';

/** Unix seconds, as every Stripe `created` field. */
export function unixSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}

/** A refund in Stripe's shape. */
export function renderRefund(refund: RefundRecord): Stripe.Refund {
  const rendered: Stripe.Refund = {
    id: refund.id,
    object: 'refund',
    amount: refund.amountCents,
    balance_transaction: null,
    charge: refund.chargeId,
    created: unixSeconds(refund.createdMs),
    currency: refund.currency,
    customer: null,
    customer_account: null,
    destination_details: { type: 'card', card: { type: 'refund' } },
    metadata: { ...refund.metadata },
    payment_intent: refund.paymentIntentId,
    payment_method: null,
    reason: refund.reason,
    receipt_number: null,
    source_transfer_reversal: null,
    status: refund.status,
    transfer_reversal: null,
  };
  if (refund.failureReason !== null) rendered.failure_reason = refund.failureReason;
  return rendered;
}

/** A payment intent in Stripe's shape. */
export function renderPaymentIntent(intent: PaymentIntentRecord): Stripe.PaymentIntent {
  const succeeded = intent.status === 'succeeded';
  return {
    id: intent.id,
    object: 'payment_intent',
    allowed_payment_method_types: null,
    amount: intent.amountCents,
    amount_capturable: 0,
    amount_received: succeeded ? intent.amountCents : 0,
    application: null,
    application_fee_amount: null,
    automatic_payment_methods: null,
    canceled_at: null,
    cancellation_reason: null,
    capture_method: 'automatic',
    client_secret: intent.clientSecret,
    confirmation_method: 'automatic',
    created: unixSeconds(intent.createdMs),
    currency: intent.currency,
    customer: intent.customerId ?? null,
    customer_account: null,
    description: intent.description,
    excluded_payment_method_types: null,
    last_payment_error: null,
    latest_charge: intent.latestChargeId,
    livemode: false,
    managed_payments: null,
    metadata: { ...intent.metadata },
    next_action: null,
    on_behalf_of: null,
    // Once confirmed, the PaymentMethod object made of the test token, as Stripe names it.
    payment_method: intent.paymentMethodId ?? intent.paymentMethod,
    payment_method_configuration_details: null,
    payment_method_options: null,
    payment_method_types: ['card'],
    payment_record: null,
    processing: null,
    receipt_email: null,
    review: null,
    setup_future_usage: null,
    shipping: null,
    source: null,
    statement_descriptor: null,
    statement_descriptor_suffix: null,
    status: intent.status,
    transfer_group: null,
  };
}

/** The objects a charge names besides its refunds and disputes: its card and its customer, when it has them. */
export interface ChargeParts {
  card?: PaymentMethodRecord | undefined;
  customer?: CustomerRecord | undefined;
}

/** A charge in Stripe's shape; refunded amounts and the dispute flag come from the ledger. */
export function renderCharge(
  charge: ChargeRecord,
  refunds: Iterable<RefundRecord>,
  disputes: Iterable<DisputeRecord>,
  parts: ChargeParts = {},
): Stripe.Charge {
  const amountRefunded = refundedCents(refunds, charge.id);
  const disputed = [...disputes].some((dispute) => dispute.chargeId === charge.id);
  return {
    id: charge.id,
    object: 'charge',
    amount: charge.amountCents,
    amount_captured: charge.amountCents,
    amount_refunded: amountRefunded,
    application: null,
    application_fee: null,
    application_fee_amount: null,
    balance_transaction: null,
    billing_details: billingDetails(parts.customer),
    calculated_statement_descriptor: 'INTERLOCK SANDBOX',
    captured: true,
    created: unixSeconds(charge.createdMs),
    currency: charge.currency,
    customer: charge.customerId ?? null,
    description: null,
    disputed,
    failure_balance_transaction: null,
    failure_code: null,
    failure_message: null,
    fraud_details: {},
    livemode: false,
    metadata: {},
    on_behalf_of: null,
    outcome: {
      advice_code: null,
      network_advice_code: null,
      network_decline_code: null,
      network_status: 'approved_by_network',
      reason: null,
      risk_level: 'normal',
      seller_message: 'Payment complete.',
      type: 'authorized',
    },
    paid: true,
    payment_intent: charge.paymentIntentId,
    payment_method: charge.paymentMethodId ?? charge.paymentMethod,
    payment_method_details: parts.card === undefined ? null : chargeCardDetails(parts.card, charge.amountCents),
    receipt_email: null,
    receipt_number: null,
    receipt_url: null,
    refunded: amountRefunded === charge.amountCents,
    review: null,
    shipping: null,
    source: null,
    source_transfer: null,
    statement_descriptor: null,
    statement_descriptor_suffix: null,
    status: 'succeeded',
    transfer_data: null,
    transfer_group: null,
  };
}

/** A dispute in Stripe's shape: open and waiting for evidence until it moves (one from an older file always is). */
export function renderDispute(dispute: DisputeRecord): Stripe.Dispute {
  const submitted = dispute.evidenceSubmitted ?? false;
  return {
    id: dispute.id,
    object: 'dispute',
    amount: dispute.amountCents,
    balance_transactions: [],
    charge: dispute.chargeId,
    created: unixSeconds(dispute.createdMs),
    currency: dispute.currency,
    enhanced_eligibility_types: [],
    evidence: emptyEvidence(),
    evidence_details: {
      due_by: unixSeconds(dispute.createdMs) + 7 * 86_400,
      enhanced_eligibility: {},
      has_evidence: submitted,
      past_due: false,
      submission_count: submitted ? 1 : 0,
      submission_method: submitted ? 'manual' : 'not_submitted',
    },
    intended_submission_method: null,
    is_charge_refundable: false,
    livemode: false,
    metadata: {},
    payment_intent: dispute.paymentIntentId,
    reason: dispute.reason,
    status: dispute.status ?? 'needs_response',
  };
}

/** Stripe's `{object:'list'}` page. */
export function renderList<T>(url: string, data: T[], hasMore: boolean): Stripe.ApiList<T> {
  return { object: 'list', data, has_more: hasMore, url };
}

function emptyEvidence(): Stripe.Dispute.Evidence {
  return {
    access_activity_log: null,
    billing_address: null,
    cancellation_policy: null,
    cancellation_policy_disclosure: null,
    cancellation_rebuttal: null,
    customer_communication: null,
    customer_email_address: null,
    customer_name: null,
    customer_purchase_ip: null,
    customer_signature: null,
    duplicate_charge_documentation: null,
    duplicate_charge_explanation: null,
    duplicate_charge_id: null,
    enhanced_evidence: {},
    product_description: null,
    receipt: null,
    refund_policy: null,
    refund_policy_disclosure: null,
    refund_refusal_explanation: null,
    service_date: null,
    service_documentation: null,
    shipping_address: null,
    shipping_carrier: null,
    shipping_date: null,
    shipping_documentation: null,
    shipping_tracking_number: null,
    uncategorized_file: null,
    uncategorized_text: null,
  };
}

/**
 * An answer's JSON text in the mode the sandbox answers as: every object is rendered test-mode
 * (`livemode: false`, typed by the SDK), and in live mode each `livemode` in it, nested and
 * expanded objects included, reads true, as a live key's answers and events do.
 */
export function stringifyInMode(value: unknown, live: boolean): string {
  return JSON.stringify(value, (key, item: unknown) => (key === 'livemode' && live ? true : item), 2);
}
