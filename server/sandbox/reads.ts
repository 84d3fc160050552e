import type Stripe from 'stripe';
import type { SandboxEngine } from './engine.ts';
import { resourceMissing, unrecognizedUrl } from './errors.ts';
import {
  chargeView,
  disputeView,
  type Expandable,
  type ExpandTree,
  EXPAND_NOTHING,
  intentView,
  paymentMethodView,
  readExpand,
  refundView,
} from './expand.ts';
import type { FormObject } from './form.ts';
import { matchPath } from './http.ts';
import { type Read, rejectUnknown } from './params.ts';
import { listRefunds, missingFilter, pageOf, readListQuery, readRefundListQuery, type RefundListQuery } from './refunds.ts';
import { renderList } from './render.ts';
import { renderCustomer } from './render-cards.ts';
import type { SandboxStore } from './store.ts';

/** One retrieve by id: its path, what Stripe calls the object, what kind it expands as, and how it reads. */
interface Retrieve {
  pattern: string;
  what: string;
  kind: Expandable;
  find(store: SandboxStore, id: string, expand: ExpandTree): unknown;
}

const RETRIEVES: readonly Retrieve[] = [
  {
    pattern: '/v1/refunds/:id',
    what: 'refund',
    kind: 'refund',
    find: (store, id, expand) => maybe(store.refunds.get(id), (refund) => refundView(store, refund, expand)),
  },
  {
    pattern: '/v1/payment_intents/:id',
    what: 'payment_intent',
    kind: 'payment_intent',
    find: (store, id, expand) => maybe(store.paymentIntents.get(id), (intent) => intentView(store, intent, expand)),
  },
  {
    pattern: '/v1/charges/:id',
    what: 'charge',
    kind: 'charge',
    find: (store, id, expand) => maybe(store.charges.get(id), (charge) => chargeView(store, charge, expand)),
  },
  {
    pattern: '/v1/disputes/:id',
    what: 'dispute',
    kind: 'dispute',
    find: (store, id, expand) => maybe(store.disputes.get(id), (dispute) => disputeView(store, dispute, expand)),
  },
  { pattern: '/v1/customers/:id', what: 'customer', kind: 'customer', find: (store, id) => maybe(store.customers.get(id), renderCustomer) },
  {
    pattern: '/v1/payment_methods/:id',
    what: 'payment_method',
    kind: 'payment_method',
    find: (store, id, expand) => maybe(store.paymentMethods.get(id), (method) => paymentMethodView(store, method, expand)),
  },
];

/** Answer a `GET /v1/...`: a retrieve by id or a list, never changing state. */
export function serveGet(engine: SandboxEngine, path: string, params: FormObject): Read<unknown> {
  const { store } = engine;
  const mode = engine.settings().expand;
  if (path === '/v1/refunds') {
    const { expand, ...filters } = params;
    const query = readRefundListQuery(filters);
    if (!query.ok) return query;
    const tree = readExpand({ expand: expand ?? '' }, 'refund_list', mode);
    if (!tree.ok) return tree;
    return refundList(store, '/v1/refunds', query.value, tree.value);
  }
  const chargeRefunds = matchPath('/v1/charges/:id/refunds', path);
  if (chargeRefunds !== null) return listChargeRefunds(engine, chargeRefunds['id']!, params);
  if (path === '/v1/disputes') return listDisputes(engine, params);
  if (path === '/v1/payment_intents') return listAll(params, [...store.paymentIntents.values()], 'payment_intent', '/v1/payment_intents', (intent) => intentView(store, intent, EXPAND_NOTHING));
  if (path === '/v1/charges') return listAll(params, [...store.charges.values()], 'charge', '/v1/charges', (charge) => chargeView(store, charge, EXPAND_NOTHING));
  if (path === '/v1/customers') return listAll(params, [...store.customers.values()], 'customer', '/v1/customers', renderCustomer);
  for (const retrieve of RETRIEVES) {
    const match = matchPath(retrieve.pattern, path);
    if (match === null) continue;
    const expand = readExpand(params, retrieve.kind, mode);
    if (!expand.ok) return expand;
    const found = retrieve.find(store, match['id']!, expand.value);
    if (found === undefined) return { ok: false, failure: resourceMissing(retrieve.what, match['id']!, 'id') };
    return { ok: true, value: found };
  }
  return { ok: false, failure: unrecognizedUrl('GET', path) };
}

/** One page of refunds as a Stripe list, each refund with what `data.…` expands. */
function refundList(store: SandboxStore, url: string, query: RefundListQuery, tree: ExpandTree): Read<Stripe.ApiList<Stripe.Refund>> {
  const page = listRefunds(store, query);
  if (!page.ok) return page;
  const items = tree.get('data') ?? EXPAND_NOTHING;
  return { ok: true, value: renderList(url, page.value.data.map((refund) => refundView(store, refund, items)), page.value.hasMore) };
}

/**
 * `GET /v1/charges/:id/refunds`, where an expanded `refunds` list says it pages on: the charge's
 * refunds, newest first, paged by `limit` and the cursors; a charge it does not know is the path's 404.
 */
function listChargeRefunds(engine: SandboxEngine, chargeId: string, params: FormObject): Read<Stripe.ApiList<Stripe.Refund>> {
  const { expand, ...paging } = params;
  const unknown = rejectUnknown(paging, ['limit', 'starting_after', 'ending_before']);
  if (unknown) return { ok: false, failure: unknown };
  const query = readListQuery(paging);
  if (!query.ok) return query;
  if (!engine.store.charges.has(chargeId)) return { ok: false, failure: resourceMissing('charge', chargeId, 'charge') };
  const tree = readExpand({ expand: expand ?? '' }, 'refund_list', engine.settings().expand);
  if (!tree.ok) return tree;
  const onCharge: RefundListQuery = { ...query.value, paymentIntentId: null, chargeId, created: {} };
  return refundList(engine.store, `/v1/charges/${chargeId}/refunds`, onCharge, tree.value);
}

function listDisputes(engine: SandboxEngine, params: FormObject): Read<Stripe.ApiList<Stripe.Dispute>> {
  const { expand, ...filters } = params;
  const query = readListQuery(filters);
  if (!query.ok) return query;
  const tree = readExpand({ expand: expand ?? '' }, 'dispute_list', engine.settings().expand);
  if (!tree.ok) return tree;
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
  const items = tree.value.get('data') ?? EXPAND_NOTHING;
  const data = page.value.data.map((dispute) => disputeView(engine.store, dispute, items));
  return { ok: true, value: renderList('/v1/disputes', data, page.value.hasMore) };
}

/**
 * `GET /v1/payment_intents`, `/v1/charges`, `/v1/customers`: every object of the kind, newest
 * first, paged by `limit` and the cursors; no filters, no expansions (Interlock lists them only
 * to check a key may read them).
 */
function listAll<T extends { id: string }, R>(params: FormObject, oldestFirst: T[], what: string, url: string, render: (item: T) => R): Read<Stripe.ApiList<R>> {
  const unknown = rejectUnknown(params, ['limit', 'starting_after', 'ending_before']);
  if (unknown) return { ok: false, failure: unknown };
  const query = readListQuery(params);
  if (!query.ok) return query;
  const page = pageOf(oldestFirst.reverse(), query.value, what);
  if (!page.ok) return page;
  return { ok: true, value: renderList(url, page.value.data.map(render), page.value.hasMore) };
}

function maybe<T, R>(value: T | undefined, render: (value: T) => R): R | undefined {
  return value === undefined ? undefined : render(value);
}
