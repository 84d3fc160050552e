import type Stripe from 'stripe';
import { limits } from '../../shared/limits.ts';
import { withStripeClass } from '../stripe/paced-client.ts';
import { EFFECT_METADATA_KEY } from '../targets/stripe-refunds.ts';
import { BackupError } from './manifest.ts';
import type { RefundAtStripe } from './restore-plan.ts';

const effectIdPattern = new RegExp(`^[0-9a-f]{${limits.effectIdHexChars}}$`);

/**
 * Every refund of the account made since `sinceMs` (`GET /v1/refunds` with `created[gte]`, paged
 * 100 at a time), and those whose metadata names an effect of ours. Served as recovery on the
 * process's Stripe budget, so a restore beside a running fleet takes its turn like any recovery.
 */
export async function refundsSince(stripe: Stripe, sinceMs: number): Promise<{ listed: number; ours: RefundAtStripe[] }> {
  return withStripeClass('recovery', async () => {
    let listed = 0;
    const ours: RefundAtStripe[] = [];
    const pages = stripe.refunds.list({ created: { gte: Math.floor(sinceMs / 1000) }, limit: limits.stripeListLimit });
    for await (const refund of pages) {
      listed += 1;
      if (listed > limits.restoreRefundsListedMax) {
        throw new BackupError(`Stripe holds more than ${limits.restoreRefundsListedMax} refunds since the backup point: restore from a newer backup`);
      }
      const seen = refundAtStripe(refund);
      if (seen !== null) ours.push(seen);
    }
    return { listed, ours };
  });
}

/** The refund as the restore records it, or null when its metadata names no effect of ours. */
export function refundAtStripe(refund: Stripe.Refund): RefundAtStripe | null {
  const effectId = refund.metadata?.[EFFECT_METADATA_KEY];
  if (typeof effectId !== 'string' || !effectIdPattern.test(effectId)) return null;
  const intent = refund.payment_intent;
  const paymentIntent = typeof intent === 'string' ? intent : (intent?.id ?? '');
  return {
    effect_id: effectId,
    refund: refund.id,
    amount: refund.amount,
    currency: refund.currency,
    payment_intent: paymentIntent,
    status: refund.status ?? 'unknown',
    created: refund.created,
  };
}
