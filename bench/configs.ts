import fs from 'node:fs';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { configLimits } from '../server/config/schema.ts';
import { CONFIG_PATH } from './stages.ts';

/** The `stripe` section of interlock.yaml, as an operator writes it. */
export interface StripeConfigText {
  mode: 'sandbox';
  rate_limits?: { share?: number; global_per_second?: number; endpoint_per_second?: number };
}

/**
 * Interlock's own Stripe budget far above anything the bench sends (the most the config accepts,
 * as test/support/app-world.ts UNPACED_STRIPE in the tests): the figures of Interlock against a
 * sandbox without limits measure Interlock, not the pace it keeps for Stripe.
 */
export const UNPACED_STRIPE_CONFIG: StripeConfigText = {
  mode: 'sandbox',
  rate_limits: { share: 1, global_per_second: configLimits.stripeOpsPerSecondMax, endpoint_per_second: configLimits.stripeOpsPerSecondMax },
};

/** interlock.yaml with its `stripe` section replaced, written to `dir/interlock.<name>.yaml`; returns the file. */
export function writeStripeConfig(dir: string, name: string, stripe: StripeConfigText): string {
  const config = parse(fs.readFileSync(CONFIG_PATH, 'utf8')) as Record<string, unknown>;
  config.stripe = stripe;
  const file = path.join(dir, `interlock.${name}.yaml`);
  fs.writeFileSync(file, stringify(config));
  return file;
}
