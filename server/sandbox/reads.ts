import type { SandboxEngine } from './engine.ts';
import { resourceMissing, unrecognizedUrl } from './errors.ts';
import type { FormObject } from './form.ts';
import { matchPath } from './http.ts';
import type { Read } from './params.ts';
import { listRefunds, pageOf, readListQuery } from './refunds.ts';
import { renderCharge, renderDispute, renderList, renderPaymentIntent, renderRefund } from './render.ts';

/** Answer a `GET /v1/...`: a retrieve by id or a list, never changing state. */
export function serveGet(engine: SandboxEngine, path: string, params: FormObject): Read<unknown> {
  const { store } = engine;
  if (path === '/v1/refunds') {
    const query = readListQuery(params);
    if (!query.ok) return query;
    const page = listRefunds(store, query.value);
    if (!page.ok) return page;
    return { ok: true, value: renderList('/v1/refunds', page.value.data.map(renderRefund), page.value.hasMore) };
  }
  if (path === '/v1/disputes') return listDisputes(engine, params);
  const routes: Array<[string, string, (id: string) => unknown]> = [
    ['/v1/refunds/:id', 'refund', (id) => maybe(store.refunds.get(id), renderRefund)],
    ['/v1/payment_intents/:id', 'payment_intent', (id) => maybe(store.paymentIntents.get(id), renderPaymentIntent)],
    [
      '/v1/charges/:id',
      'charge',
      (id) => maybe(store.charges.get(id), (c) => renderCharge(c, store.refundsOfCharge(c.id), store.disputes.values())),
    ],
    ['/v1/disputes/:id', 'dispute', (id) => maybe(store.disputes.get(id), renderDispute)],
  ];
  for (const [pattern, what, find] of routes) {
    const match = matchPath(pattern, path);
    if (match === null) continue;
    const found = find(match['id']!);
    if (found === undefined) return { ok: false, failure: resourceMissing(what, match['id']!, 'id') };
    return { ok: true, value: found };
  }
  return { ok: false, failure: unrecognizedUrl('GET', path) };
}

function listDisputes(engine: SandboxEngine, params: FormObject): Read<unknown> {
  const query = readListQuery(params);
  if (!query.ok) return query;
  const newestFirst = [...engine.store.disputes.values()]
    .filter(
      (dispute) => query.value.paymentIntentId === null || dispute.paymentIntentId === query.value.paymentIntentId,
    )
    .filter((dispute) => query.value.chargeId === null || dispute.chargeId === query.value.chargeId)
    .reverse();
  const page = pageOf(newestFirst, query.value);
  if (!page.ok) return page;
  return { ok: true, value: renderList('/v1/disputes', page.value.data.map(renderDispute), page.value.hasMore) };
}

function maybe<T, R>(value: T | undefined, render: (value: T) => R): R | undefined {
  return value === undefined ? undefined : render(value);
}
