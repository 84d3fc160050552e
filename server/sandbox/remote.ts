import type Stripe from 'stripe';
import { CONTROL_ROUTES } from './control.ts';
import type { RequestCounts } from './counts.ts';
import { SandboxError } from './errors.ts';
import { SANDBOX_API_KEY, sandboxStripe } from './sandbox.ts';
import type { SandboxSettings } from './settings.ts';
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
  StripeErrorBody,
  WebhookConfig,
  WebhookMode,
} from './types.ts';

/**
 * A sandbox running in another process (`server/sandbox/main.ts`), driven over its control
 * routes: the same switches as `Sandbox`, asynchronous. Crash tests use it, since that sandbox
 * outlives the server they kill.
 */
export interface RemoteSandbox {
  url: string;
  apiKey: string;
  stripe(): Stripe;
  health(): Promise<{ ok: boolean; nowMs: number; settings: SandboxSettings }>;
  createPaymentIntent(amountCents: number, paymentMethod?: PaymentMethodId, options?: DemoPaymentOptions): Promise<PaymentIntent>;
  handRefund(paymentIntent: string, amountCents: number): Promise<Refund>;
  openDispute(paymentIntent: string): Promise<Dispute>;
  moveDispute(dispute: string, status: DisputeMove): Promise<Dispute>;
  refunds(paymentIntent?: string): Promise<Refund[]>;
  setFault(fault: Fault): Promise<void>;
  clearFaults(): Promise<void>;
  advanceClock(ms: number): Promise<number>;
  settle(refundId?: string, outcome?: SettleOutcome, failureReason?: string): Promise<Refund[]>;
  configureWebhook(config: WebhookConfig | null): Promise<void>;
  webhookMode(mode: WebhookMode): Promise<void>;
  deliveries(): Promise<Delivery[]>;
  webhooksIdle(): Promise<void>;
  settings(): Promise<SandboxSettings>;
  configure(settings: Partial<SandboxSettings>): Promise<SandboxSettings>;
  requestCounts(): Promise<RequestCounts>;
  resetRequestCounts(): Promise<void>;
}

/** Drive the sandbox at `url` (as printed by main.ts). */
export function connectSandbox(url: string): RemoteSandbox {
  const base = new URL(url);
  let client: Stripe | null = null;
  const call = async <T>(route: string, body?: unknown, query = ''): Promise<T> => {
    const space = route.indexOf(' ');
    const method = route.slice(0, space);
    const path = route.slice(space + 1);
    const init: RequestInit = { method };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers = { 'content-type': 'application/json' };
    }
    const response = await fetch(new URL(path + query, base), init);
    const parsed = (await response.json()) as T & { error?: StripeErrorBody };
    if (!response.ok) {
      const error = parsed.error ?? { type: 'api_error' as const, message: `sandbox answered ${response.status}` };
      throw new SandboxError({ statusCode: response.status, error });
    }
    return parsed;
  };
  return {
    url,
    apiKey: SANDBOX_API_KEY,
    stripe: () => {
      client ??= sandboxStripe(base.hostname.replace(/^\[|\]$/g, ''), Number(base.port));
      return client;
    },
    health: () => call(CONTROL_ROUTES.health),
    createPaymentIntent: (amountCents, paymentMethod = 'pm_card_visa', options = {}) =>
      call(CONTROL_ROUTES.paymentIntents, { amountCents, paymentMethod, ...options }),
    handRefund: (paymentIntent, amountCents) => call(CONTROL_ROUTES.handRefunds, { paymentIntent, amountCents }),
    openDispute: (paymentIntent) => call(CONTROL_ROUTES.disputes, { paymentIntent }),
    moveDispute: (dispute, status) => call(CONTROL_ROUTES.moveDispute, { dispute, status }),
    refunds: async (paymentIntent) => {
      const query = paymentIntent === undefined ? '' : `?payment_intent=${encodeURIComponent(paymentIntent)}`;
      return (await call<{ data: Refund[] }>(CONTROL_ROUTES.ledger, undefined, query)).data;
    },
    setFault: async (fault) => {
      await call(CONTROL_ROUTES.faults, fault);
    },
    clearFaults: async () => {
      await call(CONTROL_ROUTES.clearFaults, {});
    },
    advanceClock: async (ms) => (await call<{ nowMs: number }>(CONTROL_ROUTES.advanceClock, { ms })).nowMs,
    settle: async (refundId, outcome = 'succeeded', failureReason) =>
      (await call<{ data: Refund[] }>(CONTROL_ROUTES.settle, { refundId, outcome, failureReason })).data,
    configureWebhook: async (config) => {
      await call(CONTROL_ROUTES.webhook, config ?? { url: null });
    },
    webhookMode: async (mode) => {
      await call(CONTROL_ROUTES.webhookMode, mode);
    },
    deliveries: async () => (await call<{ data: Delivery[] }>(CONTROL_ROUTES.deliveries)).data,
    webhooksIdle: async () => {
      await call(CONTROL_ROUTES.webhooksIdle, {});
    },
    settings: () => call(CONTROL_ROUTES.settings),
    configure: (settings) => call(CONTROL_ROUTES.configure, settings),
    requestCounts: () => call(CONTROL_ROUTES.requestCounts),
    resetRequestCounts: async () => {
      await call(CONTROL_ROUTES.resetRequestCounts, {});
    },
  };
}
