import Stripe from 'stripe';
import { withStripeClass } from './paced-client.ts';

// Side-effect-free checks of a live restricted key at start: one list read (limit 1) for each
// resource Interlock reads, and one refund create on a payment intent that does not exist. Stripe
// checks a restricted key's permission before anything else, so the create's answer says whether
// the key may create refunds (400 or 404 resource_missing: it may; 403: it may not) and nothing is
// refunded. A key lacking a permission would otherwise be found out at the first refund a person
// approved.

/** A payment intent id no account holds: what the refund-create probe names. */
export const PROBE_PAYMENT_INTENT = 'pi_interlock_probe_does_not_exist';
/** A payment method id no account holds: what the payment-method probe retrieves. */
export const PROBE_PAYMENT_METHOD = 'pm_interlock_probe_does_not_exist';

/** What a probe's answer must be for the permission to be there: the read succeeds, or the object is missing. */
export type ProbeExpects = 'answered' | 'missing';

/** One probe: the call, the permission it shows (as Stripe's refusals name it), and what answer means allowed. */
export interface KeyProbe {
  call: string;
  permission: string;
  expects: ProbeExpects;
  run(stripe: Stripe): Promise<unknown>;
}

/** The probes, one per permission Interlock uses (docs/operators/going-live.md). */
export const KEY_PROBES: readonly KeyProbe[] = [
  { call: 'GET /v1/payment_intents?limit=1', permission: 'rak_payment_intent_read', expects: 'answered', run: (s) => s.paymentIntents.list({ limit: 1 }) },
  { call: 'GET /v1/charges?limit=1', permission: 'rak_charge_read', expects: 'answered', run: (s) => s.charges.list({ limit: 1 }) },
  { call: 'GET /v1/refunds?limit=1', permission: 'rak_refund_read', expects: 'answered', run: (s) => s.refunds.list({ limit: 1 }) },
  { call: 'GET /v1/disputes?limit=1', permission: 'rak_dispute_read', expects: 'answered', run: (s) => s.disputes.list({ limit: 1 }) },
  { call: 'GET /v1/customers?limit=1', permission: 'rak_customer_read', expects: 'answered', run: (s) => s.customers.list({ limit: 1 }) },
  {
    call: `GET /v1/payment_methods/${PROBE_PAYMENT_METHOD}`,
    permission: 'rak_payment_method_read',
    expects: 'missing',
    run: (s) => s.paymentMethods.retrieve(PROBE_PAYMENT_METHOD),
  },
  {
    call: `POST /v1/refunds payment_intent=${PROBE_PAYMENT_INTENT}`,
    permission: 'rak_refund_write',
    expects: 'missing',
    run: (s) => s.refunds.create({ payment_intent: PROBE_PAYMENT_INTENT, amount: 1 }),
  },
];

/** What a probe's call came to: answered, or refused with a status and Stripe's error code. */
export type ProbeAnswer = { ok: true } | { ok: false; statusCode: number | null; code: string | null; message: string };

/** What a probe says of its permission. */
export type ProbeVerdict = 'allowed' | 'denied' | 'unknown';

/**
 * The verdict on one probe's answer: `403` is the permission missing, whatever the probe; a read
 * that answers, or a create refused because its object is missing (`400`/`404`), is allowed;
 * anything else (a refused key, a 429 past the retries, a refund made) is unknown and fails too.
 */
export function judgeProbe(expects: ProbeExpects, answer: ProbeAnswer): ProbeVerdict {
  if (answer.ok) return expects === 'answered' ? 'allowed' : 'unknown';
  if (answer.statusCode === 403) return 'denied';
  const missing = (answer.statusCode === 400 || answer.statusCode === 404) && answer.code === 'resource_missing';
  return expects === 'missing' && missing ? 'allowed' : 'unknown';
}

/** One probe's result, for the start's log line or refusal. */
export interface ProbeResult {
  probe: KeyProbe;
  verdict: ProbeVerdict;
  answer: ProbeAnswer;
}

/** Run every probe at once, through the paced client (each counts against the Stripe budget). */
export async function probeKey(stripe: Stripe): Promise<ProbeResult[]> {
  return withStripeClass('recovery', () =>
    Promise.all(
      KEY_PROBES.map(async (probe): Promise<ProbeResult> => {
        const answer = await answerOf(() => probe.run(stripe));
        return { probe, verdict: judgeProbe(probe.expects, answer), answer };
      }),
    ),
  );
}

async function answerOf(call: () => Promise<unknown>): Promise<ProbeAnswer> {
  try {
    await call();
    return { ok: true };
  } catch (error) {
    if (!(error instanceof Stripe.errors.StripeError)) return { ok: false, statusCode: null, code: null, message: error instanceof Error ? error.message : String(error) };
    return { ok: false, statusCode: error.statusCode ?? null, code: error.code ?? null, message: error.message };
  }
}

/** The one line a key that failed its probes prints: each permission missing or unknown, by name. */
export function describeFailedProbes(results: readonly ProbeResult[]): string | null {
  const failed = results.filter((r) => r.verdict !== 'allowed');
  if (failed.length === 0) return null;
  const each = failed.map((r) => {
    if (r.verdict === 'denied') return `${r.probe.permission} is missing (${r.probe.call} answered 403)`;
    const said = r.answer.ok ? 'answered 200' : `answered ${r.answer.statusCode ?? 'no status'} ${r.answer.code ?? ''}`.trim();
    return `${r.probe.permission} could not be checked (${r.probe.call} ${said})`;
  });
  return `the live key failed ${failed.length} of ${results.length} permission probes: ${each.join('; ')}; give the restricted key the permissions docs/operators/going-live.md names`;
}
