import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import type { ErrorBody } from '../../shared/api.ts';
import { isJsonObject } from '../../shared/json.ts';
import { limits } from '../../shared/limits.ts';
import { responses } from '../../shared/schemas.ts';
import type { JournalStore } from '../journal/store.ts';
import { type ConfirmEventResult, confirmEvent, eventEffectId } from './record.ts';
import { assertWebhookConfig, type StripeEventLike, verifyWebhook, WebhookError } from './signature.ts';

/** What the webhook endpoint needs. */
export interface WebhookRoutesOptions {
  journal: JournalStore;
  /** Every live endpoint secret (`whsec_...`); two during a rotation. */
  secrets: readonly string[];
  /** True in live mode: only `livemode: true` events on the SDK's API version are taken; else only `livemode: false` ones. */
  livemode?: boolean;
  /** The clock signature timestamps are judged on: the wall clock, as Stripe's are. */
  nowMs: () => number;
  /** Told after a CONFIRMED is durable, e.g. to refresh live views. */
  onConfirmed?: (effectId: string) => void;
  /**
   * Told of every verified refund, charge or dispute event that names a payment intent, whoever
   * made it (a hand refund in the dashboard too), after it is recorded: what is shown of the
   * payment is read again. Display only: nothing it does changes the answer to Stripe.
   */
  onPaymentEvent?: (paymentIntent: string) => void;
}

/** The answer to a verified event, whatever came of it. */
export interface WebhookAnswer {
  received: true;
  result: ConfirmEventResult;
}

/** Where Stripe posts events (docs/agents/http-api.md). */
export const WEBHOOK_PATH = '/webhooks/stripe';

const SIGNATURE_HEADER = 'stripe-signature';

function refuse(reply: FastifyReply, code: 'signature_invalid' | 'payload_too_large', message: string): FastifyReply {
  const body: ErrorBody = { error: { code, message } };
  return reply.status(code === 'payload_too_large' ? 413 : 400).send(body);
}

/**
 * `POST /webhooks/stripe` (docs/agents/http-api.md), as an encapsulated plugin: its own body parser hands the
 * handler the raw bytes, so nothing parses (and re-serialises) the body before the signature is
 * checked. A verified event is answered 200 whatever came of it (recorded, a duplicate, ignored,
 * refused as a mismatch), so Stripe stops retrying it; anything unverifiable is 400
 * `signature_invalid`. The 200 is sent only once a CONFIRMED is durable.
 */
export async function webhookRoutes(app: FastifyInstance, opts: WebhookRoutesOptions): Promise<void> {
  // A bad secret is our misconfiguration: refuse to start rather than refuse every delivery.
  assertWebhookConfig(opts.secrets);
  const secrets = [...opts.secrets];
  const rawBody = { parseAs: 'buffer', bodyLimit: limits.webhookBodyBytesMax } as const;
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', rawBody, (_request, body, done) => done(null, body));
  app.addContentTypeParser('*', rawBody, (_request, body, done) => done(null, body));

  // Fastify's own refusals of the request (too large, malformed framing) in this scope's shape;
  // anything else is ours and goes on to the app's handler (a 500 makes Stripe retry).
  app.setErrorHandler((error: FastifyError, _request, reply) => {
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || error.statusCode === 413) {
      return refuse(reply, 'payload_too_large', `a webhook body is at most ${limits.webhookBodyBytesMax} bytes`);
    }
    if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
      return refuse(reply, 'signature_invalid', 'the request could not be read as a signed webhook');
    }
    throw error;
  });

  const schema = {
    tags: ['stripe'],
    operationId: 'receiveStripeWebhook',
    security: [{ stripeSignature: [] }],
    summary: 'Stripe posts signed refund and dispute events here',
    description:
      'The raw body is checked against the Stripe-Signature header (HMAC-SHA256, 300 s tolerance, every live secret) before it is read. ' +
      'Refund events are recorded as confirmations of refunds Interlock sent; refund, charge and dispute events (charge.dispute.created, ' +
      'charge.dispute.updated, charge.dispute.closed) also make the open items of their payment read Stripe again, for display only. ' +
      'A verified event is answered 200 whatever came of it (recorded, a duplicate, ignored, an unknown type); anything unverifiable is 400 signature_invalid.',
    // For the document only: the raw bytes are never validated or parsed before the signature is checked.
    body: {
      type: 'object',
      additionalProperties: true,
      description: 'a Stripe event (refund.created, refund.updated, refund.failed, charge.dispute.created, charge.dispute.closed, …), as Stripe sent it',
    },
    response: responses(
      {
        200: {
          type: 'object',
          required: ['received', 'result'],
          properties: { received: { type: 'boolean', enum: [true] }, result: { type: 'string', description: 'what came of the event' } },
        },
      },
      ['signature_invalid', 'payload_too_large', 'internal_error', 'journal_unavailable'],
    ),
  };
  app.post(WEBHOOK_PATH, { bodyLimit: limits.webhookBodyBytesMax, schema, validatorCompiler: () => () => true }, async (request, reply) => {
    const header = request.headers[SIGNATURE_HEADER];
    // This scope's parsers hand over the raw Buffer; an empty body arrives as undefined: that is
    // zero bytes, and the signature decides.
    const payload = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    let event: ReturnType<typeof verifyWebhook>;
    try {
      event = verifyWebhook(payload, typeof header === 'string' ? header : undefined, secrets, opts.nowMs(), undefined, opts.livemode === true);
    } catch (error) {
      if (!(error instanceof WebhookError)) throw error;
      // The reason is logged for operators; the answer never echoes the header, body or secret.
      // An event of the other mode or API version is our endpoint's misconfiguration: said loudly.
      if (error.reason === 'api_version' || error.reason === 'test_mode') request.log.error({ reason: error.reason }, `webhook refused: ${error.message}`);
      else request.log.warn({ reason: error.reason }, 'webhook refused');
      return refuse(reply, 'signature_invalid', error.message);
    }
    const result = await confirmEvent(opts.journal, event);
    if (result === 'CONFIRMED') notifyConfirmed(opts, eventEffectId(event), request.log);
    notifyPaymentEvent(opts, event, request.log);
    const answer: WebhookAnswer = { received: true, result };
    return reply.status(200).send(answer);
  });
}

/**
 * Event types about a payment: refunds, charges and disputes (`charge.dispute.created`, `.updated`
 * and `.closed`, `charge.refund.updated` included). A dispute is a display fact: its event is
 * answered `IGNORED:type` (it confirms no refund) and only makes the payment be read again.
 */
const PAYMENT_EVENT_PREFIXES = ['refund.', 'charge.'] as const;

/** The payment intent a verified refund, charge or dispute event names (`data.object.payment_intent`, an id or expanded), or null. */
export function eventPaymentIntent(event: StripeEventLike): string | null {
  const type = event.type;
  if (typeof type !== 'string' || !PAYMENT_EVENT_PREFIXES.some((prefix) => type.startsWith(prefix))) return null;
  const object = isJsonObject(event.data) ? event.data.object : undefined;
  if (!isJsonObject(object)) return null;
  const intent = isJsonObject(object.payment_intent) ? object.payment_intent.id : object.payment_intent;
  return typeof intent === 'string' && intent.startsWith('pi_') ? intent : null;
}

function notifyPaymentEvent(opts: WebhookRoutesOptions, event: StripeEventLike, log: { error: (o: object, m: string) => void }): void {
  const paymentIntent = eventPaymentIntent(event);
  if (paymentIntent === null || opts.onPaymentEvent === undefined) return;
  try {
    opts.onPaymentEvent(paymentIntent);
  } catch (error) {
    // What is shown is display only: its failure must not make Stripe deliver the event again.
    log.error({ err: error, paymentIntent }, 'onPaymentEvent failed');
  }
}

function notifyConfirmed(opts: WebhookRoutesOptions, effectId: string | null, log: { error: (o: object, m: string) => void }): void {
  if (effectId === null || opts.onConfirmed === undefined) return;
  try {
    opts.onConfirmed(effectId);
  } catch (error) {
    // The CONFIRMED is durable; a listener's failure must not make Stripe deliver it again.
    log.error({ err: error, effectId }, 'onConfirmed failed');
  }
}
