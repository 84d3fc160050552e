import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { onTestFinished } from 'vitest';
import { MemoryJournal } from '../../db/journal-store.ts';
import { WEBHOOK_PATH, webhookRoutes } from '../../server/confirm/webhook-plugin.ts';
import { Gate, type Outcome } from '../../server/gate/gate.ts';
import { MemoryLeases } from '../../server/gate/leases.ts';
import { type PaymentIntent, type Sandbox, type SandboxOptions, startSandbox, type WebhookConfig } from '../../server/sandbox/index.ts';
import { StripeRefunds } from '../../server/targets/stripe-refunds.ts';

export const WEBHOOK_SECRET = 'whsec_confirm_e2e';
const LEASE = 'L-confirm';

/**
 * Refunds sent through the real gate and the real Stripe target to a local sandbox on a clock
 * near real time, with (optionally) a listening Fastify app that the sandbox posts signed
 * webhooks to. `answers` holds each webhook answer body in arrival order.
 */
export interface ConfirmWorld {
  sandbox: Sandbox;
  target: StripeRefunds;
  journal: MemoryJournal;
  gate: Gate;
  intent: PaymentIntent;
  /** What the endpoint answered to each delivery, parsed. */
  answers: Array<Record<string, unknown>>;
  /** Effect ids the endpoint reported confirmed. */
  confirmed: string[];
  /** Send a refund of the world's payment intent through the gate. */
  sendRefund(amountCents?: number, requestKey?: string): Promise<Outcome>;
}

/** Start the endpoint (when `webhook`), then the sandbox, both closed when the test finishes. */
export async function buildConfirmWorld(options: {
  webhook: boolean;
  settle?: SandboxOptions['settle'];
  /** The events the endpoint enables (the sandbox's default, refunds and disputes, when absent). */
  events?: WebhookConfig['events'];
}): Promise<ConfirmWorld> {
  const journal = new MemoryJournal({ wallClockMs: () => Date.now() });
  const answers: Array<Record<string, unknown>> = [];
  const confirmed: string[] = [];
  let webhook: SandboxOptions['webhook'];
  if (options.webhook) {
    const app = Fastify({ logger: false });
    app.addHook('onSend', async (_request, _reply, payload) => {
      answers.push(JSON.parse(String(payload)) as Record<string, unknown>);
      return payload;
    });
    await app.register(webhookRoutes, { journal, secrets: [WEBHOOK_SECRET], nowMs: () => Date.now(), onConfirmed: (id) => confirmed.push(id) });
    await app.listen({ port: 0, host: '127.0.0.1' });
    onTestFinished(() => app.close());
    const { port } = app.server.address() as AddressInfo;
    webhook = { url: `http://127.0.0.1:${port}${WEBHOOK_PATH}`, secret: WEBHOOK_SECRET, ...(options.events ? { events: options.events } : {}) };
  }
  const sandbox = await startSandbox({ settle: options.settle ?? 'manual', ...(webhook ? { webhook } : {}) });
  onTestFinished(() => sandbox.close());
  const target = new StripeRefunds(sandbox.stripe());
  const leases = new MemoryLeases();
  leases.grant(LEASE);
  const gate = new Gate({ journal, target, leases, wallClockMs: () => Date.now() });
  const intent = await sandbox.createPaymentIntent(5_000);
  const sendRefund: ConfirmWorld['sendRefund'] = async (amountCents = 700, requestKey = `case-${intent.id}`) =>
    gate.submit({
      agent: 'refund-bot',
      lease: LEASE,
      requestKey,
      premises: await target.capture(intent.id),
      effect: { payment_intent: intent.id, amount: amountCents },
    });
  return { sandbox, target, journal, gate, intent, answers, confirmed, sendRefund };
}
