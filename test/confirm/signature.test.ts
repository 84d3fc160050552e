import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  signWebhook,
  verifyWebhook,
  WEBHOOK_REFUSALS,
  WebhookConfigError,
  WebhookError,
  type WebhookRefusal,
} from '../../server/confirm/signature.ts';
import { buildRefundEvent, deliver, NOW_MS, OTHER_SECRET, REFUND_ID, SECRET, SIGNED_AT_S } from '../support/confirm-world.ts';

const VECTOR_PAYLOAD = '{"id":"evt_1","livemode":false}';
const VECTOR_V1 = '5ce6ab2a6c3f9cc407402683b0f4d0b74a0f10c9f8f6cb4cc3ef7b089b33e488';

function hmacHex(secret: string, signed: string): string {
  return createHmac('sha256', secret).update(signed, 'utf8').digest('hex');
}

/** The reason verifyWebhook refuses with, failing the test when it does not refuse with a WebhookError. */
function refusal(run: () => unknown): WebhookRefusal {
  try {
    run();
  } catch (error) {
    if (error instanceof WebhookError) return error.reason;
    throw error;
  }
  throw new Error('expected a WebhookError, but the webhook verified');
}

const { body, header } = deliver(buildRefundEvent());

describe('verifyWebhook: core §8.1', () => {
  // seed: tests/test_confirmations.py Signature test_valid_signature_returns_event
  it('a valid signature returns the parsed event', () => {
    const event = verifyWebhook(body, header, [SECRET], NOW_MS);
    expect(event).toEqual(buildRefundEvent());
  });

  it('Appendix A: whsec_test_local, t=1800000000 over {"id":"evt_1","livemode":false} signs v1=5ce6ab2a...e488', () => {
    const payload = Buffer.from(VECTOR_PAYLOAD, 'utf8');
    expect(signWebhook(payload, 'whsec_test_local', 1_800_000_000)).toBe(`t=1800000000,v1=${VECTOR_V1}`);
    expect(verifyWebhook(payload, `t=1800000000,v1=${VECTOR_V1}`, ['whsec_test_local'], 1_800_000_000_000)).toEqual({
      id: 'evt_1',
      livemode: false,
    });
  });

  it('the raw body may come as any Uint8Array view, not only a Buffer', () => {
    const view = new Uint8Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength));
    expect(verifyWebhook(view as Buffer, header, [SECRET], NOW_MS).id).toBe('evt_confirm_1');
  });

  // seed: tests/test_confirmations.py Signature test_bad_signature_missing_header_or_v1_rejected
  it.each<[string, string | undefined, WebhookRefusal]>([
    ['no header', undefined, 'unsigned'],
    ['an empty header', '', 'unsigned'],
    ['a header without t', `v1=${hmacHex(SECRET, `${SIGNED_AT_S}.${body}`)}`, 'unsigned'],
    ['a header without v1', `t=${SIGNED_AT_S}`, 'unsigned'],
    ['a t that is not an integer', `t=18e8,v1=${'0'.repeat(64)}`, 'unsigned'],
    ['a t with a fraction', `t=1800000000.5,v1=${'0'.repeat(64)}`, 'unsigned'],
    ['parts without =', 'garbage,more garbage', 'unsigned'],
    ['a v1 over another body', signWebhook('{"id":"evt_other","livemode":false}', SECRET, SIGNED_AT_S), 'bad_signature'],
    ['a v1 from another secret', signWebhook(body, 'whsec_someone_else', SIGNED_AT_S), 'bad_signature'],
    ['a v1 that is not hex', `t=${SIGNED_AT_S},v1=${'z'.repeat(64)}`, 'bad_signature'],
    ['a v1 in upper-case hex', header.toUpperCase().replace('T=', 't=').replace('V1=', 'v1='), 'bad_signature'],
    ['a v1 cut short', header.slice(0, -2), 'bad_signature'],
    ['a v1 of non-ASCII characters', `t=${SIGNED_AT_S},v1=${'é'.repeat(32)}`, 'bad_signature'],
  ])('refused: %s', (_name, badHeader, reason) => {
    expect(refusal(() => verifyWebhook(body, badHeader, [SECRET], NOW_MS))).toBe(reason);
  });

  it('the last t wins, and parts are trimmed of spaces', () => {
    const v1 = hmacHex(SECRET, `${SIGNED_AT_S}.${body}`);
    expect(verifyWebhook(body, `t=1, v1=${v1} , t=${SIGNED_AT_S}`, [SECRET], NOW_MS).id).toBe('evt_confirm_1');
  });

  it('t is re-printed from the parsed integer before signing: t=01800000000 signs "1800000000."', () => {
    const v1 = hmacHex(SECRET, `${SIGNED_AT_S}.${body}`);
    expect(verifyWebhook(body, `t=0${SIGNED_AT_S},v1=${v1}`, [SECRET], NOW_MS).id).toBe('evt_confirm_1');
    const signedWithZero = hmacHex(SECRET, `0${SIGNED_AT_S}.${body}`);
    expect(refusal(() => verifyWebhook(body, `t=0${SIGNED_AT_S},v1=${signedWithZero}`, [SECRET], NOW_MS))).toBe('bad_signature');
  });

  // seed: tests/test_confirmations.py Signature test_old_and_future_timestamps_rejected
  it.each<[string, number, WebhookRefusal | null]>([
    ['exactly 300 s old', NOW_MS + 300_000, null],
    ['301 s old', NOW_MS + 301_000, 'stale_timestamp'],
    ['300.001 s old', NOW_MS + 300_001, 'stale_timestamp'],
    ['exactly 300 s in the future', NOW_MS - 300_000, null],
    ['301 s in the future', NOW_MS - 301_000, 'stale_timestamp'],
    ['a day old', NOW_MS + 86_400_000, 'stale_timestamp'],
    ['a day in the future', NOW_MS - 86_400_000, 'stale_timestamp'],
  ])('tolerance 300 s in both directions: a signature %s', (_name, nowMs, reason) => {
    if (reason === null) expect(verifyWebhook(body, header, [SECRET], nowMs).id).toBe('evt_confirm_1');
    else expect(refusal(() => verifyWebhook(body, header, [SECRET], nowMs))).toBe(reason);
  });

  it('a wider tolerance accepts what the default refuses, in both directions', () => {
    expect(verifyWebhook(body, header, [SECRET], NOW_MS + 301_000, 600_000).id).toBe('evt_confirm_1');
    expect(verifyWebhook(body, header, [SECRET], NOW_MS - 599_000, 600_000).id).toBe('evt_confirm_1');
    expect(refusal(() => verifyWebhook(body, header, [SECRET], NOW_MS + 601_000, 600_000))).toBe('stale_timestamp');
  });

  it('a stale timestamp is refused even when the signature is right for it', () => {
    const old = deliver(buildRefundEvent(), { atS: SIGNED_AT_S - 3_600 });
    expect(refusal(() => verifyWebhook(old.body, old.header, [SECRET], NOW_MS))).toBe('stale_timestamp');
  });

  // seed: tests/test_confirmations.py Signature test_rotated_secret_any_v1_accepted_and_v0_ignored
  describe('secret rotation: every v1 against every secret', () => {
    const oldV1 = hmacHex(SECRET, `${SIGNED_AT_S}.${body}`);
    const newV1 = hmacHex(OTHER_SECRET, `${SIGNED_AT_S}.${body}`);

    it('two v1s (one per secret) verify against either secret alone, and against both', () => {
      const rotating = `t=${SIGNED_AT_S},v1=${oldV1},v1=${newV1}`;
      expect(verifyWebhook(body, rotating, [SECRET], NOW_MS).id).toBe('evt_confirm_1');
      expect(verifyWebhook(body, rotating, [OTHER_SECRET], NOW_MS).id).toBe('evt_confirm_1');
      expect(verifyWebhook(body, rotating, [SECRET, OTHER_SECRET], NOW_MS).id).toBe('evt_confirm_1');
    });

    it('a v1 from the second configured secret verifies; the first v1 being garbage does not matter', () => {
      expect(verifyWebhook(body, `t=${SIGNED_AT_S},v1=${'0'.repeat(64)},v1=${newV1}`, [SECRET, OTHER_SECRET], NOW_MS).id).toBe(
        'evt_confirm_1',
      );
    });

    it('a v1 from a secret no longer configured is refused', () => {
      expect(refusal(() => verifyWebhook(body, `t=${SIGNED_AT_S},v1=${oldV1}`, [OTHER_SECRET], NOW_MS))).toBe('bad_signature');
    });

    it('a correct v0 alone never verifies (no downgrade), and other schemes are ignored beside a v1', () => {
      expect(refusal(() => verifyWebhook(body, `t=${SIGNED_AT_S},v0=${oldV1}`, [SECRET], NOW_MS))).toBe('unsigned');
      expect(refusal(() => verifyWebhook(body, `t=${SIGNED_AT_S},v0=${oldV1},v2=${oldV1}`, [SECRET], NOW_MS))).toBe('unsigned');
      expect(verifyWebhook(body, `t=${SIGNED_AT_S},v0=${'f'.repeat(64)},v1=${oldV1}`, [SECRET], NOW_MS).id).toBe('evt_confirm_1');
    });
  });

  // seed: tests/test_confirmations.py Signature test_reserialized_body_fails
  it('a body re-serialised by a JSON parser no longer matches its signature', () => {
    const reserialised = Buffer.from(JSON.stringify(JSON.parse(body.toString('utf8'))), 'utf8');
    expect(reserialised.equals(body)).toBe(false);
    expect(refusal(() => verifyWebhook(reserialised, header, [SECRET], NOW_MS))).toBe('bad_signature');
  });

  it('a decoded string instead of the raw bytes is refused as not_raw_bytes', () => {
    const decoded = body.toString('utf8') as unknown as Buffer;
    expect(refusal(() => verifyWebhook(decoded, header, [SECRET], NOW_MS))).toBe('not_raw_bytes');
    expect(refusal(() => verifyWebhook(JSON.parse(decoded as unknown as string) as Buffer, header, [SECRET], NOW_MS))).toBe(
      'not_raw_bytes',
    );
  });

  // seed: tests/test_confirmations.py Signature test_livemode_event_rejected
  it.each<[string, boolean | null]>([
    ['true', true],
    ['null', null],
  ])('livemode %s is refused even when signed', (_name, livemode) => {
    const live = deliver(buildRefundEvent({ livemode }));
    expect(refusal(() => verifyWebhook(live.body, live.header, [SECRET], NOW_MS))).toBe('live_mode');
  });

  it('an event without livemode is refused as live_mode', () => {
    const { livemode: _dropped, ...rest } = buildRefundEvent();
    const missing = deliver(rest);
    expect(refusal(() => verifyWebhook(missing.body, missing.header, [SECRET], NOW_MS))).toBe('live_mode');
  });

  it.each([
    ['invalid JSON', '{"id":"evt_1",'],
    ['a JSON array', '[{"livemode":false}]'],
    ['a JSON string', '"livemode"'],
    ['no bytes at all', ''],
  ])('a signed body that is %s is refused as bad_json', (_name, text) => {
    const raw = Buffer.from(text, 'utf8');
    expect(refusal(() => verifyWebhook(raw, signWebhook(raw, SECRET, SIGNED_AT_S), [SECRET], NOW_MS))).toBe('bad_json');
  });

  // seed: tests/test_confirmations.py Signature test_non_whsec_secret_and_non_positive_tolerance_refused
  it.each<[string, readonly string[], number]>([
    ['a secret without whsec_', ['sk_test_not_a_webhook_secret'], 300_000],
    ['an empty secret', [''], 300_000],
    ['the bare prefix', ['whsec_'], 300_000],
    ['no secret at all', [], 300_000],
    ['a good secret beside a bad one', [SECRET, 'secret'], 300_000],
    ['tolerance 0 (replay protection off)', [SECRET], 0],
    ['a negative tolerance', [SECRET], -1],
    ['a NaN tolerance', [SECRET], Number.NaN],
  ])('%s is a configuration error, not a webhook error', (_name, secrets, toleranceMs) => {
    const run = () => verifyWebhook(body, header, secrets, NOW_MS, toleranceMs);
    expect(run).toThrow(WebhookConfigError);
    try {
      run();
    } catch (error) {
      expect(error).not.toBeInstanceOf(WebhookError);
    }
  });

  it('the configuration is checked before the request: a bad secret with no header is still a configuration error', () => {
    expect(() => verifyWebhook(body, undefined, ['nope'], NOW_MS)).toThrow(WebhookConfigError);
  });

  // seed: tests/test_confirmations.py Signature test_secret_header_and_payload_never_in_error_text
  it('no error text carries the secret, the header, the payload, the refund id or the timestamp', () => {
    const live = deliver(buildRefundEvent({ livemode: true }));
    const badJson = Buffer.from('{"id":', 'utf8');
    const otherVersion = deliver({ ...buildRefundEvent({ livemode: true }), api_version: '2020-08-27' });
    const attempts: Array<[Buffer, string | undefined, number, boolean?]> = [
      [body, undefined, NOW_MS],
      [body, `t=${SIGNED_AT_S}`, NOW_MS],
      [body, header, NOW_MS + 3_600_000],
      [body, signWebhook(body, OTHER_SECRET, SIGNED_AT_S), NOW_MS],
      [live.body, live.header, NOW_MS],
      [badJson, signWebhook(badJson, SECRET, SIGNED_AT_S), NOW_MS],
      [body.toString('utf8') as unknown as Buffer, header, NOW_MS],
      // In live mode: a test-mode event, and a live one from an endpoint on another API version.
      [body, header, NOW_MS, true],
      [otherVersion.body, otherVersion.header, NOW_MS, true],
    ];
    const reasons = new Set<WebhookRefusal>();
    for (const [payload, sent, nowMs, livemode] of attempts) {
      try {
        verifyWebhook(payload, sent, [SECRET], nowMs, undefined, livemode === true);
        throw new Error('expected a refusal');
      } catch (error) {
        expect(error).toBeInstanceOf(WebhookError);
        const text = `${(error as Error).message} ${String(error)} ${(error as Error).stack ?? ''}`;
        for (const secret of [SECRET, 'test_local']) expect(text).not.toContain(secret);
        if (sent) expect(text).not.toContain(sent);
        expect(text).not.toContain(REFUND_ID);
        expect(text).not.toContain(String(SIGNED_AT_S));
        expect(text).not.toContain('evt_confirm_1');
        expect(text).not.toContain('"livemode"');
        reasons.add((error as WebhookError).reason);
      }
    }
    expect([...reasons].sort()).toEqual([...WEBHOOK_REFUSALS].sort());
  });

  it('a WebhookError carries the stable code signature_invalid and a reason from the closed list', () => {
    const error = new WebhookError('bad_signature');
    expect(error.code).toBe('signature_invalid');
    expect(WEBHOOK_REFUSALS).toContain(error.reason);
  });
});
