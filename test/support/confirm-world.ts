import Fastify, { type FastifyInstance } from 'fastify';
import type { Entry } from '../../shared/entries.ts';
import type { JsonObject } from '../../shared/json.ts';
import { MemoryJournal } from '../../db/journal-store.ts';
import type { JournalStore } from '../../server/journal/store.ts';
import { signWebhook } from '../../server/confirm/signature.ts';
import { WEBHOOK_PATH, webhookRoutes } from '../../server/confirm/webhook-plugin.ts';
import { EFFECT_METADATA_KEY } from '../../server/targets/stripe-refunds.ts';
import { type Step, START_MS } from './entries.ts';

export const SECRET = 'whsec_test_local';
export const OTHER_SECRET = 'whsec_rotated_in';
export const EFFECT_ID = 'c0ffee000001';
export const PAYMENT_INTENT = 'pi_confirm_1';
export const REFUND_ID = 're_confirm_1';
export const AMOUNT = 2_000;
/** Signature time of every delivery unless a test moves it: unix seconds, and the same instant in ms. */
export const SIGNED_AT_S = 1_800_000_000;
export const NOW_MS = SIGNED_AT_S * 1000;

/** The refund payload the gate sends for the effect under test. */
export const SENT_EFFECT = { payment_intent: PAYMENT_INTENT, amount: AMOUNT };

/** A live lease, holding premises: what the gate records on a send. */
const checks = { lease_live: true, lease: null, violations: [] };
const premises = { payment_intent: PAYMENT_INTENT, currency: 'usd', amount_received: 10_000, refunded_by_others: 0, disputed: false };

/** PROPOSED, AUTHORIZED, DISPATCHED of a refund sent under lease L (the send not yet answered). */
export function sentSteps(effect: JsonObject = SENT_EFFECT): Step[] {
  return [
    ['PROPOSED', { agent: 'refund-bot', lease: 'L', premises, effect }],
    ['AUTHORIZED', { lease: 'L' }],
    ['DISPATCHED', { effect, lease: 'L', premises, checks }],
  ];
}

/** The sent refund, committed with the refund id Stripe answered. */
export function committedSteps(refundId = REFUND_ID, effect: JsonObject = SENT_EFFECT): Step[] {
  return [...sentSteps(effect), ['COMMITTED', { result: { status: 'ok', refund: refundId, amount: effect.amount ?? null } }]];
}

/**
 * A refund Stripe turned down, a person approving a resend, and the resend still in flight:
 * DISPATCHED, REFUSED target_error (resolving), ESCALATED, DECIDED approve, PROPOSED, AUTHORIZED,
 * DISPATCHED under the person's lease on the facts they saw.
 */
export function resendInFlightSteps(): Step[] {
  const lease = (sealed: readonly Entry[]) => ({
    by: 'ann',
    at_ms: START_MS + 60_000,
    group: 'refunds',
    escalation: sealed.findLast((e) => e.kind === 'ESCALATED')!.hash,
  });
  return [
    ...sentSteps(),
    ['REFUSED', { code: 'target_error', reason: 'target reported failure: 402 declined', resolves: true }],
    [
      'ESCALATED',
      {
        at_ms: START_MS,
        reason: 'target_error',
        why: 'Stripe reported an error and nothing was sent again',
        detail: '402 declined',
        facts: premises,
        changes: [],
        repairs: [],
        route: 'default',
        group: 'refunds',
        routed_to: ['ann'],
        level: 0,
        due_ms: null,
        breach: false,
      },
    ],
    [
      'DECIDED',
      (sealed) => ({
        at_ms: START_MS + 60_000,
        by: 'ann',
        decision: 'approve',
        escalation: sealed.findLast((e) => e.kind === 'ESCALATED')!.hash,
        group: 'refunds',
        members: ['ann'],
        repair: null,
      }),
    ],
    ['PROPOSED', (sealed) => ({ agent: 'refund-bot', lease: lease(sealed), premises, effect: SENT_EFFECT })],
    ['AUTHORIZED', (sealed) => ({ lease: lease(sealed) })],
    ['DISPATCHED', (sealed) => ({ effect: SENT_EFFECT, lease: lease(sealed), premises, checks })],
  ];
}

/** Append steps to a journal in order, resolving fields that cite earlier entries. */
export async function appendSteps(journal: JournalStore, effectId: string, steps: readonly Step[]): Promise<Entry[]> {
  const sealed = await journal.entries(effectId);
  for (const [kind, fields = {}] of steps) {
    sealed.push(await journal.append(kind, effectId, typeof fields === 'function' ? fields(sealed) : fields));
  }
  return sealed;
}

/** A memory journal on a fixed wall clock holding the given chain for EFFECT_ID. */
export async function journalWith(steps: readonly Step[], effectId = EFFECT_ID): Promise<MemoryJournal> {
  const journal = new MemoryJournal({ wallClockMs: () => NOW_MS });
  await appendSteps(journal, effectId, steps);
  return journal;
}

/** A Stripe refund object as events and lists carry it; `metadata` names the effect unless overridden. */
export function buildRefund(overrides: JsonObject = {}): JsonObject {
  return {
    id: REFUND_ID,
    object: 'refund',
    amount: AMOUNT,
    currency: 'usd',
    created: SIGNED_AT_S - 5,
    metadata: { [EFFECT_METADATA_KEY]: EFFECT_ID },
    payment_intent: PAYMENT_INTENT,
    status: 'pending',
    ...overrides,
  };
}

/** A test-mode Stripe event about a refund. */
export function buildRefundEvent(overrides: { id?: string; type?: string; refund?: JsonObject; livemode?: boolean | null } = {}): JsonObject {
  return {
    id: overrides.id ?? 'evt_confirm_1',
    object: 'event',
    api_version: '2026-10-28.endive',
    created: SIGNED_AT_S,
    data: { object: buildRefund(overrides.refund) },
    livemode: overrides.livemode === undefined ? false : overrides.livemode,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type: overrides.type ?? 'refund.created',
  };
}

/** A delivery as Stripe sends it: a pretty-printed body and its signature header. */
export interface Delivery {
  body: Buffer;
  header: string;
}

/** Sign an event like Stripe: the body pretty-printed (so re-serialising it changes the bytes). */
export function deliver(event: JsonObject, options: { secret?: string; atS?: number } = {}): Delivery {
  const body = Buffer.from(JSON.stringify(event, null, 2), 'utf8');
  return { body, header: signWebhook(body, options.secret ?? SECRET, options.atS ?? SIGNED_AT_S) };
}

/** The statuses of an effect's CONFIRMED entries, in order. */
export async function confirmedStatuses(journal: JournalStore, effectId = EFFECT_ID): Promise<string[]> {
  return (await journal.entries(effectId)).filter((e) => e.kind === 'CONFIRMED').map((e) => String(e.status));
}

/** A bare Fastify app with only the webhook plugin, as a test builds it; the effects it confirmed are in `confirmed`. */
export async function buildWebhookApp(
  journal: JournalStore,
  options: { secrets?: readonly string[]; nowMs?: () => number } = {},
): Promise<{ app: FastifyInstance; confirmed: string[] }> {
  const confirmed: string[] = [];
  const app = Fastify({ logger: false });
  await app.register(webhookRoutes, {
    journal,
    secrets: options.secrets ?? [SECRET],
    nowMs: options.nowMs ?? (() => NOW_MS),
    onConfirmed: (effectId) => confirmed.push(effectId),
  });
  await app.ready();
  return { app, confirmed };
}

/** POST a delivery to the webhook endpoint through `inject`. */
export function post(app: FastifyInstance, body: Buffer | string, header: string | undefined, contentType: string | null = 'application/json; charset=utf-8') {
  const headers: Record<string, string> = {};
  if (contentType !== null) headers['content-type'] = contentType;
  if (header !== undefined) headers['stripe-signature'] = header;
  return app.inject({ method: 'POST', url: WEBHOOK_PATH, payload: body, headers });
}
