import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildRefundEvent, buildWebhookApp, committedSteps, deliver, EFFECT_ID, journalWith, post, SECRET } from '../support/confirm-world.ts';

// Property tests: whatever an attacker or a broken proxy sends that is not the exact bytes Stripe
// signed, under a header Stripe made for them, the endpoint answers 400 and the journal is unchanged.

const RUNS = 300;
const original = deliver(buildRefundEvent({ refund: { status: 'succeeded' } }));
const originalText = original.body.toString('utf8');

/** A body that parses to the same event but is written differently: what a JSON parser in front would send on. */
const reserialisedBody = fc
  .record({ indent: fc.constantFrom(undefined, 0, 1, 4, '\t'), reverseKeys: fc.boolean(), trailing: fc.constantFrom('', ' ', '\n', '\r\n') })
  .map(({ indent, reverseKeys, trailing }) => {
    const event = JSON.parse(originalText) as Record<string, unknown>;
    const ordered = reverseKeys ? Object.fromEntries(Object.entries(event).reverse()) : event;
    return Buffer.from(JSON.stringify(ordered, null, indent) + trailing, 'utf8');
  })
  .filter((body) => !body.equals(original.body));

/** The signature header with one character replaced by another. */
const garbledHeader = fc
  .record({ at: fc.nat({ max: original.header.length - 1 }), char: fc.string({ minLength: 1, maxLength: 1, unit: 'binary' }) })
  .filter(({ at, char }) => original.header[at] !== char)
  .map(({ at, char }) => original.header.slice(0, at) + char + original.header.slice(at + 1));

/** The signature header cut short anywhere. */
const truncatedHeader = fc.nat({ max: original.header.length - 1 }).map((length) => original.header.slice(0, length));

describe('POST /webhooks/stripe under random input: nothing unsigned is ever recorded', () => {
  it('random bytes under the real header, truncated or garbled headers, random headers and re-serialised bodies: 400, journal unchanged', async () => {
    const journal = await journalWith(committedSteps());
    const before = await journal.entries(EFFECT_ID);
    const { app, confirmed } = await buildWebhookApp(journal);
    const attempt = fc.oneof(
      fc.record({ body: fc.uint8Array({ maxLength: 4096 }).map((bytes) => Buffer.from(bytes)), header: fc.constant(original.header) }),
      fc.record({ body: fc.constant(original.body), header: truncatedHeader }),
      fc.record({ body: fc.constant(original.body), header: garbledHeader }),
      fc.record({ body: fc.constant(original.body), header: fc.string({ maxLength: 200 }) }),
      fc.record({ body: reserialisedBody, header: fc.constant(original.header) }),
      fc.record({ body: fc.string({ maxLength: 512 }).map((text) => Buffer.from(text, 'utf8')), header: fc.string({ maxLength: 200 }) }),
    );
    await fc.assert(
      fc.asyncProperty(attempt, fc.constantFrom<string | null>(null, 'application/json', 'text/plain'), async ({ body, header }, contentType) => {
        fc.pre(!(body.equals(original.body) && header === original.header));
        // A header value with bytes HTTP forbids (newlines, NUL) never reaches the endpoint at all.
        fc.pre(!/[\r\n\0]/.test(header) && !/[^\t\x20-\x7e\x80-\xff]/.test(header));
        const response = await post(app, body, header === '' ? undefined : header, contentType);
        expect(response.statusCode).toBe(400);
        expect((response.json() as { error: { code: string } }).error.code).toBe('signature_invalid');
        expect(response.body).not.toContain(SECRET);
      }),
      { numRuns: RUNS },
    );
    expect(await journal.entries(EFFECT_ID)).toEqual(before);
    expect(confirmed).toEqual([]);
    // The unaltered delivery still works: the property held because the input was bad, not the endpoint.
    expect((await post(app, original.body, original.header)).json()).toEqual({ received: true, result: 'CONFIRMED' });
  }, 60_000);
});
