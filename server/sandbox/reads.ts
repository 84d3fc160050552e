import type Stripe from 'stripe';
import type { SandboxEngine } from './engine.ts';
import { invalidRequest, resourceMissing, unrecognizedUrl } from './errors.ts';
import type { FormObject } from './form.ts';
import { matchPath } from './http.ts';
import type { Read } from './params.ts';
import { listRefunds, missingFilter, pageOf, readListQuery, readRefundListQuery } from './refunds.ts';
import { renderCharge, renderDispute, renderList, renderPaymentIntent, renderRefund } from './render.ts';
import { renderCustomer, renderPaymentMethod } from './render-cards.ts';
import type { SandboxStore } from './store.ts';
import type { ChargeRecord, PaymentIntentRecord, RefundRecord } from './types.ts';

/** One retrieve by id: its path, what Stripe calls the object, what it may expand, and how it reads. */
interface Retrieve {
  pattern: string;
  what: string;
  /** Fields `expand[]` may name on it, one level deep (Stripe allows deeper paths; the sandbox does not). */
  expandable: readonly string[];
  find(store: SandboxStore, id: string, expand: ReadonlySet<string>): unknown;
}

const RETRIEVES: readonly Retrieve[] = [
  {
    pattern: '/v1/refunds/:id',
    what: 'refund',
    expandable: ['charge', 'payment_intent'],
    find: (store, id, expand) => maybe(store.refunds.get(id), (refund) => refundView(store, refund, expand)),
  },
  {
    pattern: '/v1/payment_intents/:id',
    what: 'payment_intent',
    expandable: ['customer', 'latest_charge', 'payment_method'],
    find: (store, id, expand) => maybe(store.paymentIntents.get(id), (intent) => intentView(store, intent, expand)),
  },
  {
    pattern: '/v1/charges/:id',
    what: 'charge',
    expandable: ['customer', 'payment_intent'],
    find: (store, id, expand) => maybe(store.charges.get(id), (charge) => chargeView(store, charge, expand)),
  },
  { pattern: '/v1/disputes/:id', what: 'dispute', expandable: [], find: (store, id) => maybe(store.disputes.get(id), renderDispute) },
  { pattern: '/v1/customers/:id', what: 'customer', expandable: [], find: (store, id) => maybe(store.customers.get(id), renderCustomer) },
  {
    pattern: '/v1/payment_methods/:id',
    what: 'payment_method',
    expandable: ['customer'],
    find: (store, id, expand) =>
      maybe(store.paymentMethods.get(id), (method) => {
        const customer = method.customerId === null ? undefined : store.customers.get(method.customerId);
        const rendered = renderPaymentMethod(method, customer);
        return expand.has('customer') && customer ? { ...rendered, customer: renderCustomer(customer) } : rendered;
      }),
  },
];

/** Answer a `GET /v1/...`: a retrieve by id or a list, never changing state. */
export function serveGet(engine: SandboxEngine, path: string, params: FormObject): Read<unknown> {
  const { store } = engine;
  if (path === '/v1/refunds') {
    const query = readRefundListQuery(params);
    if (!query.ok) return query;
    const page = listRefunds(store, query.value);
    if (!page.ok) return page;
    return { ok: true, value: renderList('/v1/refunds', page.value.data.map(renderRefund), page.value.hasMore) satisfies Stripe.ApiList<Stripe.Refund> };
  }
  if (path === '/v1/disputes') return listDisputes(engine, params);
  for (const retrieve of RETRIEVES) {
    const match = matchPath(retrieve.pattern, path);
    if (match === null) continue;
    const expand = readExpand(params, retrieve.expandable);
    if (!expand.ok) return expand;
    const found = retrieve.find(store, match['id']!, expand.value);
    if (found === undefined) return { ok: false, failure: resourceMissing(retrieve.what, match['id']!, 'id') };
    return { ok: true, value: found };
  }
  return { ok: false, failure: unrecognizedUrl('GET', path) };
}

/** The fields `expand[]` names, each one this object may expand; anything else is refused as Stripe does. */
function readExpand(params: FormObject, expandable: readonly string[]): Read<ReadonlySet<string>> {
  const value = params['expand'];
  if (value === undefined || value === '') return { ok: true, value: new Set() };
  const paths = typeof value === 'string' ? [value] : Array.isArray(value) ? value : null;
  if (paths === null) return { ok: false, failure: invalidRequest(null, 'Invalid array: expand must be a list of strings.', 'expand') };
  const expand = new Set<string>();
  for (const path of paths) {
    if (typeof path !== 'string' || !expandable.includes(path)) {
      return { ok: false, failure: invalidRequest(null, `This property cannot be expanded (${String(path)}).`, 'expand') };
    }
    expand.add(path);
  }
  return { ok: true, value: expand };
}

/** A payment intent, with its customer, latest charge and payment method in place of their ids when asked. */
function intentView(store: SandboxStore, intent: PaymentIntentRecord, expand: ReadonlySet<string>): Stripe.PaymentIntent {
  const rendered = renderPaymentIntent(intent);
  const customer = store.customers.get(intent.customerId ?? '');
  const charge = store.charges.get(intent.latestChargeId ?? '');
  const method = store.paymentMethods.get(intent.paymentMethodId ?? '');
  return {
    ...rendered,
    ...(expand.has('customer') && customer ? { customer: renderCustomer(customer) } : {}),
    ...(expand.has('latest_charge') && charge ? { latest_charge: chargeView(store, charge, new Set()) } : {}),
    ...(expand.has('payment_method') && method ? { payment_method: renderPaymentMethod(method, customer) } : {}),
  };
}

/** A charge, with its customer and payment intent in place of their ids when asked. */
function chargeView(store: SandboxStore, charge: ChargeRecord, expand: ReadonlySet<string>): Stripe.Charge {
  const customer = store.customers.get(charge.customerId ?? '');
  const card = store.paymentMethods.get(charge.paymentMethodId ?? '');
  const rendered = renderCharge(charge, store.refundsOfCharge(charge.id), store.disputes.values(), { card, customer });
  const intent = store.paymentIntents.get(charge.paymentIntentId);
  return {
    ...rendered,
    ...(expand.has('customer') && customer ? { customer: renderCustomer(customer) } : {}),
    ...(expand.has('payment_intent') && intent ? { payment_intent: renderPaymentIntent(intent) } : {}),
  };
}

/** A refund, with its charge and payment intent in place of their ids when asked. */
function refundView(store: SandboxStore, refund: RefundRecord, expand: ReadonlySet<string>): Stripe.Refund {
  const rendered = renderRefund(refund);
  const charge = store.charges.get(refund.chargeId);
  const intent = store.paymentIntents.get(refund.paymentIntentId);
  return {
    ...rendered,
    ...(expand.has('charge') && charge ? { charge: chargeView(store, charge, new Set()) } : {}),
    ...(expand.has('payment_intent') && intent ? { payment_intent: renderPaymentIntent(intent) } : {}),
  };
}

function listDisputes(engine: SandboxEngine, params: FormObject): Read<unknown> {
  const query = readListQuery(params);
  if (!query.ok) return query;
  const missing = missingFilter(engine.store, query.value);
  if (missing) return { ok: false, failure: missing };
  const newestFirst = [...engine.store.disputes.values()]
    .filter(
      (dispute) => query.value.paymentIntentId === null || dispute.paymentIntentId === query.value.paymentIntentId,
    )
    .filter((dispute) => query.value.chargeId === null || dispute.chargeId === query.value.chargeId)
    .reverse();
  const page = pageOf(newestFirst, query.value, 'dispute');
  if (!page.ok) return page;
  return { ok: true, value: renderList('/v1/disputes', page.value.data.map(renderDispute), page.value.hasMore) };
}

function maybe<T, R>(value: T | undefined, render: (value: T) => R): R | undefined {
  return value === undefined ? undefined : render(value);
}
