import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { limits } from '../../shared/limits.ts';
import { MemoryJournal } from '../../db/journal-store.ts';
import { signWebhook, WebhookConfigError } from '../../server/confirm/signature.ts';
import { WEBHOOK_PATH, webhookRoutes } from '../../server/confirm/webhook-plugin.ts';
import {
  buildRefundEvent,
  buildWebhookApp,
  committedSteps,
  confirmedStatuses,
  deliver,
  EFFECT_ID,
  journalWith,
  NOW_MS,
  OTHER_SECRET,
  post,
  REFUND_ID,
  SECRET,
  SIGNED_AT_S,
} from '../support/confirm-world.ts';

describe('POST /webhooks/stripe (docs/agents/http-api.md), a bare Fastify app with the plugin', () => {
  it('a verified refund event is answered 200 {received, result: CONFIRMED}, recorded, and announced once', async () => {
    const journal = await journalWith(committedSteps());
    const { app, confirmed } = await buildWebhookApp(journal);
    const { body, header } = deliver(buildRefundEvent());
    const response = await post(app, body, header);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ received: true, result: 'CONFIRMED' });
    expect(await confirmedStatuses(journal)).toEqual(['pending']);
    expect(confirmed).toEqual([EFFECT_ID]);

    const again = await post(app, body, header);
    expect([again.statusCode, again.json()]).toEqual([200, { received: true, result: 'DUPLICATE_IGNORED' }]);
    expect(confirmed).toEqual([EFFECT_ID]);
  });

  it.each<[string, Parameters<typeof buildRefundEvent>[0], string]>([
    ['an event type that does not confirm', { type: 'charge.refunded' }, 'IGNORED:type'],
    ['an effect we do not know', { refund: { metadata: { interlock_effect_id: 'aaaaaaaaaaaa' } } }, 'IGNORED:unknown_effect'],
    ['a refund that does not match the send', { refund: { amount: 1 } }, 'REFUSED:mismatch'],
  ])('a verified event is answered 200 even when nothing is recorded: %s', async (_name, overrides, result) => {
    const journal = await journalWith(committedSteps());
    const { app, confirmed } = await buildWebhookApp(journal);
    const { body, header } = deliver(buildRefundEvent(overrides));
    const response = await post(app, body, header);
    expect([response.statusCode, response.json()]).toEqual([200, { received: true, result }]);
    expect(await confirmedStatuses(journal)).toEqual([]);
    expect(confirmed).toEqual([]);
  });

  it.each<[string, () => { body: Buffer | string; header: string | undefined }]>([
    ['a signature from another secret', () => deliver(buildRefundEvent(), { secret: OTHER_SECRET })],
    ['no Stripe-Signature header', () => ({ body: deliver(buildRefundEvent()).body, header: undefined })],
    ['a header with no v1', () => ({ body: deliver(buildRefundEvent()).body, header: `t=${SIGNED_AT_S}` })],
    ['a signature an hour old', () => deliver(buildRefundEvent(), { atS: SIGNED_AT_S - 3_600 })],
    ['a live-mode event', () => deliver(buildRefundEvent({ livemode: true }))],
    [
      'a body re-serialised by a JSON parser',
      () => {
        const { body, header } = deliver(buildRefundEvent());
        return { body: JSON.stringify(JSON.parse(body.toString('utf8'))), header };
      },
    ],
    ['an empty body', () => ({ body: '', header: deliver(buildRefundEvent()).header })],
  ])('refused with 400 signature_invalid, nothing recorded, nothing echoed: %s', async (_name, make) => {
    const journal = await journalWith(committedSteps());
    const before = await journal.entries(EFFECT_ID);
    const { app, confirmed } = await buildWebhookApp(journal);
    const { body, header } = make();
    const response = await post(app, body, header);
    expect(response.statusCode).toBe(400);
    const answer = response.json() as { error: { code: string; message: string } };
    expect(Object.keys(answer)).toEqual(['error']);
    expect(Object.keys(answer.error).sort()).toEqual(['code', 'message']);
    expect(answer.error.code).toBe('signature_invalid');
    for (const secret of [SECRET, OTHER_SECRET]) expect(response.body).not.toContain(secret);
    if (header) expect(response.body).not.toContain(header);
    expect(response.body).not.toContain(REFUND_ID);
    expect(response.body).not.toContain(String(SIGNED_AT_S));
    expect(await journal.entries(EFFECT_ID)).toEqual(before);
    expect(confirmed).toEqual([]);
  });

  it(`a body over ${limits.webhookBodyBytesMax} bytes is 413 payload_too_large; exactly the limit is read and verified`, async () => {
    const journal = await journalWith(committedSteps());
    const { app } = await buildWebhookApp(journal);
    const event = Buffer.from(JSON.stringify(buildRefundEvent(), null, 2), 'utf8');
    // Trailing spaces keep it valid JSON; the signature covers them, as it covers every byte.
    const atLimit = Buffer.concat([event, Buffer.alloc(limits.webhookBodyBytesMax - event.length, ' ')]);
    const overLimit = Buffer.concat([atLimit, Buffer.from(' ')]);
    const sign = (bytes: Buffer) => signWebhook(bytes, SECRET, SIGNED_AT_S);
    const tooLarge = await post(app, overLimit, sign(overLimit));
    expect(tooLarge.statusCode).toBe(413);
    expect(tooLarge.json()).toEqual({ error: { code: 'payload_too_large', message: expect.any(String) } });
    expect(await confirmedStatuses(journal)).toEqual([]);
    const fits = await post(app, atLimit, sign(atLimit));
    expect([fits.statusCode, fits.json()]).toEqual([200, { received: true, result: 'CONFIRMED' }]);
  });

  it(`the app's smaller default body limit (${limits.bodyBytesMax} bytes) does not cut webhooks short`, async () => {
    const journal = await journalWith(committedSteps());
    const app = Fastify({ logger: false, bodyLimit: limits.bodyBytesMax });
    await app.register(webhookRoutes, { journal, secrets: [SECRET], nowMs: () => NOW_MS });
    const event = Buffer.from(JSON.stringify(buildRefundEvent(), null, 2), 'utf8');
    const large = Buffer.concat([event, Buffer.alloc(4 * limits.bodyBytesMax, ' ')]);
    const response = await post(app, large, signWebhook(large, SECRET, SIGNED_AT_S));
    expect([response.statusCode, response.json()]).toEqual([200, { received: true, result: 'CONFIRMED' }]);
  });

  it.each([null, 'application/json', 'text/plain', 'application/x-www-form-urlencoded', 'application/octet-stream'])(
    'content type %s: the body still reaches the signature check as raw bytes',
    async (contentType) => {
      const journal = await journalWith(committedSteps());
      const { app } = await buildWebhookApp(journal);
      const { body, header } = deliver(buildRefundEvent());
      const response = await post(app, body, header, contentType);
      expect([response.statusCode, response.json()]).toEqual([200, { received: true, result: 'CONFIRMED' }]);
    },
  );

  it('during a secret rotation both secrets verify', async () => {
    const journal = await journalWith(committedSteps());
    const { app } = await buildWebhookApp(journal, { secrets: [SECRET, OTHER_SECRET] });
    const first = deliver(buildRefundEvent(), { secret: OTHER_SECRET });
    expect((await post(app, first.body, first.header)).json()).toEqual({ received: true, result: 'CONFIRMED' });
    const second = deliver(buildRefundEvent({ id: 'evt_2', refund: { status: 'succeeded' } }), { secret: SECRET });
    expect((await post(app, second.body, second.header)).json()).toEqual({ received: true, result: 'CONFIRMED' });
  });

  it('the signature time is judged on the injected clock, in both directions', async () => {
    const journal = await journalWith(committedSteps());
    let nowMs = NOW_MS + 301_000;
    const { app } = await buildWebhookApp(journal, { nowMs: () => nowMs });
    const { body, header } = deliver(buildRefundEvent());
    expect((await post(app, body, header)).statusCode).toBe(400);
    nowMs = NOW_MS - 301_000;
    expect((await post(app, body, header)).statusCode).toBe(400);
    nowMs = NOW_MS + 300_000;
    expect((await post(app, body, header)).statusCode).toBe(200);
  });

  it('a secret without whsec_ refuses to register: a configuration error at start, not a refusal per delivery', async () => {
    const app = Fastify({ logger: false });
    const journal = new MemoryJournal({ wallClockMs: () => NOW_MS });
    await expect(app.register(webhookRoutes, { journal, secrets: ['sk_test_wrong'], nowMs: () => NOW_MS })).rejects.toThrow(
      WebhookConfigError,
    );
  });

  it('when the journal cannot record, the answer is a 5xx so Stripe delivers again', async () => {
    const journal = await journalWith(committedSteps());
    journal.appendIf = async () => {
      throw new Error('disk I/O error');
    };
    const { app } = await buildWebhookApp(journal);
    const { body, header } = deliver(buildRefundEvent());
    const response = await post(app, body, header);
    expect(response.statusCode).toBe(500);
    expect(response.body).not.toContain('received');
  });

  it('a failing onConfirmed listener does not turn a durable CONFIRMED into a retry', async () => {
    const journal = await journalWith(committedSteps());
    const app = Fastify({ logger: false });
    await app.register(webhookRoutes, {
      journal,
      secrets: [SECRET],
      nowMs: () => NOW_MS,
      onConfirmed: () => {
        throw new Error('listener bug');
      },
    });
    const { body, header } = deliver(buildRefundEvent());
    const response = await post(app, body, header);
    expect([response.statusCode, response.json()]).toEqual([200, { received: true, result: 'CONFIRMED' }]);
  });

  it('the plugin is encapsulated: its raw-body parser does not leak to routes registered beside it', async () => {
    const journal = await journalWith(committedSteps());
    const app = Fastify({ logger: false });
    await app.register(webhookRoutes, { journal, secrets: [SECRET], nowMs: () => NOW_MS });
    app.post('/other', async (request) => ({ parsed: request.body }));
    const response = await app.inject({ method: 'POST', url: '/other', payload: { a: 1 } });
    expect(response.json()).toEqual({ parsed: { a: 1 } });
    expect(WEBHOOK_PATH).toBe('/webhooks/stripe');
  });
});
