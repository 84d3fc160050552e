import { describe, expect, it } from 'vitest';
import { describeFailedProbes, judgeProbe, KEY_PROBES, type ProbeAnswer, type ProbeExpects, type ProbeVerdict } from '../../server/stripe/key-probes.ts';

const refused = (statusCode: number, code: string | null): ProbeAnswer => ({ ok: false, statusCode, code, message: 'said' });

describe('a live key probe says whether the key holds a permission', () => {
  it.each<[string, ProbeExpects, ProbeAnswer, ProbeVerdict]>([
    ['a list read answered', 'answered', { ok: true }, 'allowed'],
    ['a list read refused 403', 'answered', refused(403, null), 'denied'],
    ['a list read refused 401 (a key Stripe does not know)', 'answered', refused(401, null), 'unknown'],
    ['a list read still 429 after its retries', 'answered', refused(429, 'rate_limit'), 'unknown'],
    ['a refund create on a missing payment intent, 400 resource_missing', 'missing', refused(400, 'resource_missing'), 'allowed'],
    ['a retrieve of a missing object, 404 resource_missing', 'missing', refused(404, 'resource_missing'), 'allowed'],
    ['a refund create refused 403', 'missing', refused(403, null), 'denied'],
    ['a refund create refused 400 for another reason', 'missing', refused(400, 'parameter_invalid_integer'), 'unknown'],
    ['a refund create that made a refund', 'missing', { ok: true }, 'unknown'],
    ['no answer at all', 'missing', { ok: false, statusCode: null, code: null, message: 'ECONNREFUSED' }, 'unknown'],
  ])('%s: %s', (_name, expects, answer, verdict) => {
    expect(judgeProbe(expects, answer)).toBe(verdict);
  });

  it('the probes cover each resource Interlock reads and the refund create, one permission each', () => {
    expect(KEY_PROBES.map((p) => p.permission)).toEqual([
      'rak_payment_intent_read',
      'rak_charge_read',
      'rak_refund_read',
      'rak_dispute_read',
      'rak_customer_read',
      'rak_payment_method_read',
      'rak_refund_write',
    ]);
  });

  it('a failed probe is named by its permission and call in one line', () => {
    const results = KEY_PROBES.map((probe) => {
      const answer: ProbeAnswer = probe.permission === 'rak_refund_write' ? refused(403, null) : probe.expects === 'answered' ? { ok: true } : refused(404, 'resource_missing');
      return { probe, answer, verdict: judgeProbe(probe.expects, answer) };
    });
    expect(describeFailedProbes(results)).toBe(
      'the live key failed 1 of 7 permission probes: rak_refund_write is missing (POST /v1/refunds payment_intent=pi_interlock_probe_does_not_exist answered 403); ' +
        'give the restricted key the permissions docs/operators/going-live.md names',
    );
    expect(describeFailedProbes(results.map((r) => ({ ...r, verdict: 'allowed' as const })))).toBeNull();
  });
});
