import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SandboxEngine } from './engine.ts';
import { errorJson, invalidRequest, unrecognizedUrl } from './errors.ts';
import { readFault } from './faults.ts';
import { readBody, sendJson } from './http.ts';
import { sandboxLimits } from './limits.ts';
import { isRecord, isWholeNumber, type Read } from './params.ts';
import { readSettings } from './settings.ts';
import {
  CARD_BRANDS,
  type DemoPaymentOptions,
  DISPUTE_MOVES,
  EVENT_TYPES,
  SETTLE_OUTCOMES,
  type StripeFailure,
  type WebhookConfig,
  type WebhookMode,
} from './types.ts';

/** Paths of the control routes, for tests and other processes (no Stripe auth). */
export const CONTROL_ROUTES = {
  health: 'GET /_sandbox/health',
  ledger: 'GET /_sandbox/ledger',
  paymentIntents: 'POST /_sandbox/payment-intents',
  handRefunds: 'POST /_sandbox/hand-refunds',
  disputes: 'POST /_sandbox/disputes',
  moveDispute: 'POST /_sandbox/disputes/move',
  faults: 'POST /_sandbox/faults',
  clearFaults: 'POST /_sandbox/faults/clear',
  advanceClock: 'POST /_sandbox/clock/advance',
  settle: 'POST /_sandbox/settle',
  webhook: 'POST /_sandbox/webhook',
  webhookMode: 'POST /_sandbox/webhook/mode',
  deliveries: 'GET /_sandbox/webhook/deliveries',
  webhooksIdle: 'POST /_sandbox/webhook/idle',
  settings: 'GET /_sandbox/settings',
  configure: 'POST /_sandbox/settings',
  requestCounts: 'GET /_sandbox/requests',
  resetRequestCounts: 'POST /_sandbox/requests/reset',
} as const;

type JsonBody = Record<string, unknown>;
type ControlHandler = (engine: SandboxEngine, body: JsonBody, url: URL) => Read<unknown> | Promise<Read<unknown>>;

const HANDLERS: Record<string, ControlHandler> = {
  [CONTROL_ROUTES.health]: (engine) => ok({ ok: true, nowMs: engine.nowMs(), settings: engine.settings() }),
  [CONTROL_ROUTES.ledger]: (engine, _body, url) =>
    ok({ data: engine.ledger(url.searchParams.get('payment_intent') ?? undefined) }),
  [CONTROL_ROUTES.paymentIntents]: (engine, body) => {
    const options = readDemoPayment(body);
    if (!options.ok) return options;
    return engine.createPaymentIntent(numberIn(body, 'amountCents'), String(body['paymentMethod'] ?? 'pm_card_visa'), options.value);
  },
  [CONTROL_ROUTES.handRefunds]: (engine, body) =>
    engine.handRefund(String(body['paymentIntent'] ?? ''), numberIn(body, 'amountCents')),
  [CONTROL_ROUTES.disputes]: (engine, body) => engine.openDispute(String(body['paymentIntent'] ?? '')),
  [CONTROL_ROUTES.moveDispute]: (engine, body) => {
    const move = DISPUTE_MOVES.find((known) => known === body['status']);
    if (move === undefined) return refuse(`status must be one of ${DISPUTE_MOVES.join(', ')}.`, 'status');
    return engine.moveDispute(String(body['dispute'] ?? ''), move);
  },
  [CONTROL_ROUTES.faults]: (engine, body) => {
    const fault = readFault(body);
    if (!fault.ok) return fault;
    if (!engine.faults.add(fault.value)) return refuse(`At most ${sandboxLimits.faultsMax} faults may wait.`, 'fault');
    return ok({ pending: engine.faults.pending() });
  },
  [CONTROL_ROUTES.clearFaults]: (engine) => {
    engine.faults.clear();
    return ok({ pending: [] });
  },
  [CONTROL_ROUTES.advanceClock]: (engine, body) => {
    const advanced = engine.advanceClock(numberIn(body, 'ms'));
    return advanced.ok ? ok({ nowMs: advanced.value }) : advanced;
  },
  [CONTROL_ROUTES.settle]: (engine, body) => {
    const outcome = SETTLE_OUTCOMES.find((known) => known === (body['outcome'] ?? 'succeeded'));
    if (outcome === undefined) return refuse(`outcome must be one of ${SETTLE_OUTCOMES.join(', ')}.`, 'outcome');
    const refundId = typeof body['refundId'] === 'string' ? body['refundId'] : null;
    const failureReason = typeof body['failureReason'] === 'string' ? body['failureReason'] : undefined;
    const settled = engine.settle(refundId, outcome, failureReason);
    return settled.ok ? ok({ data: settled.value }) : settled;
  },
  [CONTROL_ROUTES.webhook]: (engine, body) => {
    const config = readWebhookConfig(body);
    if (!config.ok) return config;
    engine.webhooks.configure(config.value);
    return ok({ configured: config.value !== null });
  },
  [CONTROL_ROUTES.webhookMode]: (engine, body) => {
    const mode = readWebhookMode(body);
    if (!mode.ok) return mode;
    engine.webhooks.setMode(mode.value);
    return ok({ mode: mode.value });
  },
  [CONTROL_ROUTES.deliveries]: (engine) => ok({ data: engine.webhooks.deliveries() }),
  [CONTROL_ROUTES.webhooksIdle]: async (engine) => {
    await engine.webhooks.idle();
    return ok({ idle: true });
  },
  [CONTROL_ROUTES.settings]: (engine) => ok(engine.settings()),
  [CONTROL_ROUTES.configure]: (engine, body) => {
    const settings = readSettings(body);
    return settings.ok ? ok(engine.configure(settings.value)) : settings;
  },
  [CONTROL_ROUTES.requestCounts]: (engine) => ok(engine.counts.view()),
  [CONTROL_ROUTES.resetRequestCounts]: (engine) => {
    engine.counts.reset();
    return ok(engine.counts.view());
  },
};

/** Serve one request to `/_sandbox/...`: JSON in, JSON out, Stripe's error shape on refusal. */
export async function handleControl(
  engine: SandboxEngine,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  const handler = HANDLERS[`${req.method} ${url.pathname}`];
  if (handler === undefined) return sendFailure(res, unrecognizedUrl(req.method ?? '?', url.pathname));
  const text = await readBody(req, sandboxLimits.requestBodyBytesMax);
  if (text === null) return sendFailure(res, invalidRequest(null, 'The request body is too large.'));
  let body: unknown = {};
  if (text.trim() !== '') {
    try {
      body = JSON.parse(text);
    } catch {
      return sendFailure(res, invalidRequest(null, 'The request body is not JSON.'));
    }
  }
  if (!isRecord(body) || Array.isArray(body)) {
    return sendFailure(res, invalidRequest(null, 'The request body must be a JSON object.'));
  }
  const result = await handler(engine, body, url);
  if (!result.ok) return sendFailure(res, result.failure);
  sendJson(res, 200, result.value);
}

/** Check a webhook endpoint: `{url, secret, events?}` to send (the events it enables, `*` for all), `{url: null}` to stop. */
export function readWebhookConfig(body: JsonBody): Read<WebhookConfig | null> {
  if (body['url'] === null) return ok(null);
  const url = body['url'];
  const secret = body['secret'];
  if (typeof url !== 'string' || !/^https?:\/\//.test(url)) return refuse('url must be an http(s) URL or null.', 'url');
  if (typeof secret !== 'string' || !secret.startsWith('whsec_'))
    return refuse('secret must start with whsec_.', 'secret');
  const events = body['events'];
  if (events === undefined) return ok({ url, secret });
  const choices = ['*', ...EVENT_TYPES] as const;
  const enabled = Array.isArray(events) ? events.flatMap((event) => choices.filter((choice) => choice === event)) : [];
  if (!Array.isArray(events) || enabled.length !== events.length || enabled.length === 0) {
    return refuse(`events must be a list of ${choices.join(', ')}.`, 'events');
  }
  return ok({ url, secret, events: enabled });
}

/**
 * The optional parts of a demo payment: `customer` `{name?, email?}` or null for none, `card`
 * `{brand, last4}`, `chargedAtMs`. Their values are the engine's to check; only their types are read here.
 */
export function readDemoPayment(body: JsonBody): Read<DemoPaymentOptions> {
  const options: DemoPaymentOptions = {};
  const customer = body['customer'];
  if (customer === null) options.customer = null;
  else if (customer !== undefined) {
    if (!isRecord(customer) || Array.isArray(customer)) return refuse('customer must be an object {name, email} or null.', 'customer');
    const name = customer['name'] ?? null;
    const email = customer['email'] ?? null;
    if (name !== null && typeof name !== 'string') return refuse('customer.name must be a string.', 'customer[name]');
    if (email !== null && typeof email !== 'string') return refuse('customer.email must be a string.', 'customer[email]');
    options.customer = { name, email };
  }
  const card = body['card'];
  if (card !== undefined) {
    const brand = isRecord(card) ? CARD_BRANDS.find((known) => known === card['brand']) : undefined;
    if (!isRecord(card) || brand === undefined || typeof card['last4'] !== 'string') {
      return refuse(`card must be {brand, last4} with brand one of ${CARD_BRANDS.join(', ')}.`, 'card');
    }
    options.card = { brand, last4: card['last4'] };
  }
  if (body['chargedAtMs'] !== undefined) options.chargedAtMs = numberIn(body, 'chargedAtMs');
  return ok(options);
}

/** Check the webhook test switches. */
export function readWebhookMode(body: JsonBody): Read<WebhookMode> {
  const mode: WebhookMode = {};
  for (const flag of ['duplicate', 'reverse', 'unsigned', 'wrongSecret'] as const) {
    const value = body[flag];
    if (value === undefined) continue;
    if (typeof value !== 'boolean') return refuse(`${flag} must be a boolean.`, flag);
    mode[flag] = value;
  }
  const delayMs = body['delayMs'];
  if (delayMs !== undefined) {
    if (!isWholeNumber(delayMs, 0, sandboxLimits.webhookDelayMsMax)) {
      return refuse(`delayMs must be a whole number from 0 to ${sandboxLimits.webhookDelayMsMax}.`, 'delayMs');
    }
    mode.delayMs = delayMs;
  }
  return ok(mode);
}

/**
 * A number the engine checks (an amount, a clock step), or NaN when the body holds none: the
 * engine refuses NaN as it refuses any number out of range, with the same message.
 */
function numberIn(body: JsonBody, name: string): number {
  const value = body[name];
  return typeof value === 'number' ? value : Number.NaN;
}

function ok<T>(value: T): Read<T> {
  return { ok: true, value };
}

function refuse<T>(message: string, param: string): Read<T> {
  return { ok: false, failure: invalidRequest(null, message, param) };
}

function sendFailure(res: ServerResponse, failure: StripeFailure): void {
  sendJson(res, failure.statusCode, errorJson(failure));
}
