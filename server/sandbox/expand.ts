import type Stripe from 'stripe';
import { invalidRequest } from './errors.ts';
import type { FormObject } from './form.ts';
import { sandboxLimits } from './limits.ts';
import type { Read } from './params.ts';
import { renderCharge, renderDispute, renderList, renderPaymentIntent, renderRefund } from './render.ts';
import { renderCustomer, renderPaymentMethod } from './render-cards.ts';
import type { SandboxStore } from './store.ts';
import type { ChargeRecord, DisputeRecord, PaymentIntentRecord, PaymentMethodRecord, RefundRecord } from './types.ts';

// Stripe's `expand[]`: each path names fields to put whole objects in place of their ids, dotted
// to go deeper (`latest_charge.refunds` expands the charge, then its refunds), at most four
// levels; on a list every path starts with `data`. What may be expanded is what the SDK's types
// allow to be an object (`Stripe.PaymentIntent.latest_charge: string | Stripe.Charge`), and
// `Stripe.Charge.refunds`, a list Stripe leaves out unless it is expanded.

/** What an expandable field holds once expanded: an object, or a list of them. */
export type Expandable = 'payment_intent' | 'charge' | 'refund' | 'dispute' | 'customer' | 'payment_method' | 'refund_list' | 'dispute_list';

/** Every field each object can expand, and what it then holds. */
const EXPANDABLE_FIELDS: Record<Expandable, Readonly<Record<string, Expandable>>> = {
  payment_intent: { customer: 'customer', latest_charge: 'charge', payment_method: 'payment_method' },
  charge: { customer: 'customer', payment_intent: 'payment_intent', refunds: 'refund_list' },
  refund: { charge: 'charge', payment_intent: 'payment_intent' },
  dispute: { charge: 'charge', payment_intent: 'payment_intent' },
  customer: {},
  payment_method: { customer: 'customer' },
  refund_list: { data: 'refund' },
  dispute_list: { data: 'dispute' },
};

/** The expansions asked for: each field to expand, with what to expand inside it. */
export type ExpandTree = ReadonlyMap<string, ExpandTree>;

/** An expand tree while it is read. */
type Branches = Map<string, Branches>;

/** Nothing expanded: every field an id. */
export const EXPAND_NOTHING: ExpandTree = new Map();

/** Whether `expand[]` is honoured, or ignored as a Stripe that ignored it would (every field an id, any path accepted). */
export const EXPAND_MODES = ['honour', 'ignore'] as const;
export type ExpandMode = (typeof EXPAND_MODES)[number];

/**
 * Read `expand[]` for an object (or list) of kind `root`: every path must name fields that can
 * be expanded, each on what the one before holds, at most `expandDepthMax` of them; a refusal is
 * Stripe's 400. Ignored, it is nothing expanded.
 */
export function readExpand(params: FormObject, root: Expandable, mode: ExpandMode): Read<ExpandTree> {
  const value = params['expand'];
  if (mode === 'ignore' || value === undefined || value === '') return { ok: true, value: EXPAND_NOTHING };
  const paths = typeof value === 'string' ? [value] : Array.isArray(value) ? value : null;
  if (paths === null) return refuse('Invalid array: expand must be a list of strings.');
  const tree: Branches = new Map();
  for (const path of paths) {
    if (typeof path !== 'string') return refuse('Invalid array: expand must be a list of strings.');
    const fields = path.split('.');
    if (fields.length > sandboxLimits.expandDepthMax) {
      return refuse(`You cannot expand more than ${sandboxLimits.expandDepthMax} levels of a property. Property: ${path}`);
    }
    let kind = root;
    let node: Branches = tree;
    for (const field of fields) {
      const next = Object.hasOwn(EXPANDABLE_FIELDS[kind], field) ? EXPANDABLE_FIELDS[kind][field] : undefined;
      if (next === undefined) return refuse(`This property cannot be expanded (${path}).`);
      kind = next;
      const child: Branches = node.get(field) ?? new Map();
      node.set(field, child);
      node = child;
    }
  }
  return { ok: true, value: tree };
}

/** A payment intent, with what `tree` names expanded. */
export function intentView(store: SandboxStore, intent: PaymentIntentRecord, tree: ExpandTree): Stripe.PaymentIntent {
  const customer = store.customers.get(intent.customerId ?? '');
  const charge = store.charges.get(intent.latestChargeId ?? '');
  const method = store.paymentMethods.get(intent.paymentMethodId ?? '');
  const at = (field: string) => tree.get(field);
  return {
    ...renderPaymentIntent(intent),
    ...(at('customer') && customer ? { customer: renderCustomer(customer) } : {}),
    ...(at('latest_charge') && charge ? { latest_charge: chargeView(store, charge, at('latest_charge')!) } : {}),
    ...(at('payment_method') && method ? { payment_method: paymentMethodView(store, method, at('payment_method')!) } : {}),
  };
}

/** A charge, with what `tree` names expanded; its refunds only when asked, as Stripe leaves them out. */
export function chargeView(store: SandboxStore, charge: ChargeRecord, tree: ExpandTree): Stripe.Charge {
  const customer = store.customers.get(charge.customerId ?? '');
  const card = store.paymentMethods.get(charge.paymentMethodId ?? '');
  const intent = store.paymentIntents.get(charge.paymentIntentId);
  const at = (field: string) => tree.get(field);
  return {
    ...renderCharge(charge, store.refundsOfCharge(charge.id), store.disputes.values(), { card, customer }),
    ...(at('customer') && customer ? { customer: renderCustomer(customer) } : {}),
    ...(at('payment_intent') && intent ? { payment_intent: intentView(store, intent, at('payment_intent')!) } : {}),
    ...(at('refunds') ? { refunds: chargeRefundsView(store, charge, at('refunds')!) } : {}),
  };
}

/**
 * A charge's refunds as an expanded list holds them: the newest `expandedListItemsMax`, with
 * `has_more` when there are more, and the url that pages on (`GET /v1/refunds?charge=` does too).
 */
export function chargeRefundsView(store: SandboxStore, charge: ChargeRecord, tree: ExpandTree): Stripe.ApiList<Stripe.Refund> {
  const newestFirst = store.refundsOfCharge(charge.id).reverse();
  const first = newestFirst.slice(0, sandboxLimits.expandedListItemsMax);
  const items = tree.get('data') ?? EXPAND_NOTHING;
  const data = first.map((refund) => refundView(store, refund, items));
  return renderList(`/v1/charges/${charge.id}/refunds`, data, newestFirst.length > first.length);
}

/** A refund, with what `tree` names expanded. */
export function refundView(store: SandboxStore, refund: RefundRecord, tree: ExpandTree): Stripe.Refund {
  const charge = store.charges.get(refund.chargeId);
  const intent = store.paymentIntents.get(refund.paymentIntentId);
  const at = (field: string) => tree.get(field);
  return {
    ...renderRefund(refund),
    ...(at('charge') && charge ? { charge: chargeView(store, charge, at('charge')!) } : {}),
    ...(at('payment_intent') && intent ? { payment_intent: intentView(store, intent, at('payment_intent')!) } : {}),
  };
}

/** A dispute, with what `tree` names expanded. */
export function disputeView(store: SandboxStore, dispute: DisputeRecord, tree: ExpandTree): Stripe.Dispute {
  const charge = store.charges.get(dispute.chargeId);
  const intent = store.paymentIntents.get(dispute.paymentIntentId);
  const at = (field: string) => tree.get(field);
  return {
    ...renderDispute(dispute),
    ...(at('charge') && charge ? { charge: chargeView(store, charge, at('charge')!) } : {}),
    ...(at('payment_intent') && intent ? { payment_intent: intentView(store, intent, at('payment_intent')!) } : {}),
  };
}

/** A card payment method, with its customer expanded when asked. */
export function paymentMethodView(store: SandboxStore, method: PaymentMethodRecord, tree: ExpandTree): Stripe.PaymentMethod {
  const customer = method.customerId === null ? undefined : store.customers.get(method.customerId);
  const rendered = renderPaymentMethod(method, customer);
  return tree.has('customer') && customer ? { ...rendered, customer: renderCustomer(customer) } : rendered;
}

function refuse<T>(message: string): Read<T> {
  return { ok: false, failure: invalidRequest(null, message, 'expand') };
}
