import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type Stripe from 'stripe';
import { createStripeClient } from '../stripe/client.ts';
import { handleStripeApi } from './api.ts';
import { handleControl } from './control.ts';
import type { RequestCounts } from './counts.ts';
import { type EngineOptions, orThrow, SandboxEngine } from './engine.ts';
import { apiError, errorJson, unrecognizedUrl } from './errors.ts';
import { readFault } from './faults.ts';
import { sendJson } from './http.ts';
import type { ExpandMode } from './expand.ts';
import type { RateLimitMode } from './rate-limits.ts';
import type { RestrictedKeyPermission } from './permissions.ts';
import { type KeyMode, readSettings, type SandboxSettings, type SettleMode } from './settings.ts';
import type {
  DemoPaymentOptions,
  Delivery,
  Dispute,
  DisputeMove,
  Fault,
  PaymentIntent,
  PaymentMethodId,
  Refund,
  SettleOutcome,
  WebhookConfig,
  WebhookMode,
} from './types.ts';

/** How to start a sandbox; every field is optional. */
export interface SandboxOptions {
  /** 0 (the default) picks a free port. */
  port?: number;
  /** 127.0.0.1 by default. */
  host?: string;
  /** SQLite file for durable state; in memory when absent. */
  file?: string;
  /** The base clock in ms; `advanceClock` adds to it. Date.now by default. */
  clockMs?: () => number;
  /** `immediate` (default): a refund is answered pending and succeeds right after. `manual`: it waits for `settle`. */
  settle?: SettleMode;
  /** `off` (default): no limit. `test`, `live`: Stripe's published limits in that mode (25 or 100 a second, 25 per endpoint). */
  rateLimits?: RateLimitMode;
  /** `honour` (default): nested `expand[]` as Stripe honours it. `ignore`: every field answers as an id. */
  expand?: ExpandMode;
  /** `test` (default): test keys, `livemode: false`. `live`: live keys, objects and events `livemode: true`. */
  mode?: KeyMode;
  /** Permissions a restricted key lacks: the operations needing them answer 403 as Stripe does. */
  deniedPermissions?: RestrictedKeyPermission[];
  /** Where to send signed webhooks. */
  webhook?: WebhookConfig;
}

/** A running sandbox: its address, a real SDK client for it, and the switches tests use. */
export interface Sandbox {
  url: string;
  port: number;
  host: string;
  /** A test-mode key the sandbox accepts. */
  apiKey: string;
  /** A real `stripe` SDK client pointed at the sandbox (no automatic retries, no telemetry). */
  stripe(): Stripe;
  /**
   * A confirmed USD demo payment, as `POST /_sandbox/payment-intents` makes one: for a named test
   * customer and paid with the token's test card unless `options` say otherwise.
   */
  createPaymentIntent(amountCents: number, paymentMethod?: PaymentMethodId, options?: DemoPaymentOptions): Promise<PaymentIntent>;
  /** A refund made by hand in the dashboard: no idempotency key, no metadata. */
  handRefund(paymentIntent: string, amountCents: number): Refund;
  /** The cardholder's bank opens a dispute on the payment's charge (`charge.dispute.created` follows). */
  openDispute(paymentIntent: string): Dispute;
  /** Evidence submitted (`under_review`, then `charge.dispute.updated`), or the dispute won or lost (`charge.dispute.closed`). */
  moveDispute(dispute: string, status: DisputeMove): Dispute;
  /** The ground-truth ledger: every refund (of one payment intent), in creation order. */
  refunds(paymentIntent?: string): Refund[];
  setFault(fault: Fault): void;
  clearFaults(): void;
  /** Move the sandbox clock forward; returns the new time in ms. */
  advanceClock(ms: number): number;
  /** Settle one pending refund, or all of them; returns the refunds settled. */
  settle(refundId?: string, outcome?: SettleOutcome, failureReason?: string): Refund[];
  /** Send webhooks to this endpoint from now on, or stop with null. */
  configureWebhook(config: WebhookConfig | null): void;
  webhookMode(mode: WebhookMode): void;
  deliveries(): Delivery[];
  /** Resolves once no webhook is queued, in flight or waiting for a retry. */
  webhooksIdle(): Promise<void>;
  /** The sandbox clock now. */
  nowMs(): number;
  /** The settings in force. */
  settings(): SandboxSettings;
  /** Change some settings from the next request on; answers them all. */
  configure(settings: Partial<SandboxSettings>): SandboxSettings;
  /** What the sandbox answered to `/v1/...` since it started or was reset, per endpoint. */
  requestCounts(): RequestCounts;
  resetRequestCounts(): void;
  close(): Promise<void>;
}

/** The key `sandbox.stripe()` uses; any `sk_test_` or `rk_test_` key is accepted. */
export const SANDBOX_API_KEY = 'sk_test_interlock_sandbox';

/** A real SDK client for a sandbox at host:port, on the paced transport as Interlock's clients are. */
export function sandboxStripe(host: string, port: number, apiKey = SANDBOX_API_KEY): Stripe {
  return createStripeClient(apiKey, { host, port, protocol: 'http' });
}

/** Start a sandbox listening on host:port. */
export async function startSandbox(opts: SandboxOptions = {}): Promise<Sandbox> {
  const engineOptions: EngineOptions = {};
  if (opts.file !== undefined) engineOptions.file = opts.file;
  if (opts.clockMs !== undefined) engineOptions.clockMs = opts.clockMs;
  if (opts.settle !== undefined) engineOptions.settle = opts.settle;
  if (opts.rateLimits !== undefined) engineOptions.rateLimits = opts.rateLimits;
  if (opts.expand !== undefined) engineOptions.expand = opts.expand;
  if (opts.mode !== undefined) engineOptions.mode = opts.mode;
  if (opts.deniedPermissions !== undefined) engineOptions.deniedPermissions = opts.deniedPermissions;
  if (opts.webhook !== undefined) engineOptions.webhook = opts.webhook;
  const engine = new SandboxEngine(engineOptions);
  const inFlightKeys = new Set<string>();
  const server = createServer((req, res) => {
    void route(engine, inFlightKeys, req, res);
  });
  const listenHost = opts.host ?? '127.0.0.1';
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port ?? 0, listenHost, () => resolve());
    });
  } catch (error) {
    engine.close();
    throw error;
  }
  const address = server.address();
  // Listening on a host and port always gives an address with a port; anything else is our bug.
  if (address === null || typeof address === 'string') throw new Error(`sandbox: listening gave no TCP port (${String(address)})`);
  const { port } = address;
  const host = listenHost === '0.0.0.0' || listenHost === '::' ? '127.0.0.1' : listenHost;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  let client: Stripe | null = null;
  const stripe = () => {
    client ??= sandboxStripe(host, port);
    return client;
  };
  return {
    url,
    port,
    host,
    apiKey: SANDBOX_API_KEY,
    stripe,
    createPaymentIntent: async (amountCents, paymentMethod = 'pm_card_visa', options = {}) =>
      orThrow(engine.createPaymentIntent(amountCents, paymentMethod, options)),
    handRefund: (paymentIntent, amountCents) => orThrow(engine.handRefund(paymentIntent, amountCents)),
    openDispute: (paymentIntent) => orThrow(engine.openDispute(paymentIntent)),
    moveDispute: (dispute, status) => orThrow(engine.moveDispute(dispute, status)),
    refunds: (paymentIntent) => engine.ledger(paymentIntent),
    setFault: (fault) => {
      const checked = orThrow(readFault(fault));
      if (!engine.faults.add(checked)) throw new Error('too many faults are waiting');
    },
    clearFaults: () => engine.faults.clear(),
    advanceClock: (ms) => orThrow(engine.advanceClock(ms)),
    settle: (refundId, outcome = 'succeeded', failureReason) =>
      orThrow(engine.settle(refundId ?? null, outcome, failureReason)),
    configureWebhook: (config) => engine.webhooks.configure(config),
    webhookMode: (mode) => engine.webhooks.setMode(mode),
    deliveries: () => engine.webhooks.deliveries(),
    webhooksIdle: () => engine.webhooks.idle(),
    nowMs: () => engine.nowMs(),
    settings: () => engine.settings(),
    configure: (settings) => engine.configure(orThrow(readSettings({ ...settings }))),
    requestCounts: () => engine.counts.view(),
    resetRequestCounts: () => engine.counts.reset(),
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      engine.close();
    },
  };
}

async function route(
  engine: SandboxEngine,
  inFlightKeys: Set<string>,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://sandbox');
  try {
    if (url.pathname.startsWith('/v1/')) return await handleStripeApi(engine, inFlightKeys, req, res, url);
    if (url.pathname.startsWith('/_sandbox/')) return await handleControl(engine, req, res, url);
    sendJson(res, 404, errorJson(unrecognizedUrl(req.method ?? '?', url.pathname)));
  } catch (error) {
    if (!engine.isOpen()) return void res.destroy();
    // A bug of ours: log it with its request, answer like Stripe's 500, never with the details.
    console.error(`sandbox: ${req.method} ${url.pathname} failed`, error);
    sendJson(res, 500, errorJson(apiError()));
  }
}
