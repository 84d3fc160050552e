import type { StripeMode } from '../config/schema.ts';

/** What decides whether demo traffic runs: the environment, the config and where refunds go. */
export interface DemoSettings {
  /** `INTERLOCK_DEMO`: null when unset. */
  demo: boolean | null;
  /** `SANDBOX_DEMO`. */
  sandboxDemo: boolean;
  /** The config's `test_mode`. */
  testMode: boolean;
  /** The config's `stripe.mode`. */
  stripeMode: StripeMode;
  /** True when refunds go to the sandbox this process embeds (not one at `STRIPE_SANDBOX_URL`). */
  embeddedSandbox: boolean;
}

/** Demo traffic runs, stays off (and why, for the log), or the server must not start. */
export type DemoSwitch = { run: 'on' } | { run: 'off'; why: string } | { run: 'refused'; message: string };

/**
 * Whether demo traffic runs, in precedence order: an explicit `INTERLOCK_DEMO=0` first, then the
 * switches that keep demo things out of tests (`SANDBOX_DEMO=0`, `test_mode`), then Stripe test
 * mode, where an explicit `INTERLOCK_DEMO=1` is refused rather than quietly ignored: demo traffic
 * makes payments, refunds by hand and disputes, which only the sandbox can. Unset, it runs
 * wherever the embedded sandbox does.
 */
export function decideDemoTraffic(settings: DemoSettings): DemoSwitch {
  if (settings.demo === false) return { run: 'off', why: 'INTERLOCK_DEMO=0' };
  if (!settings.sandboxDemo) return { run: 'off', why: 'SANDBOX_DEMO=0' };
  if (settings.testMode) return { run: 'off', why: 'the config says test_mode: true' };
  if (settings.stripeMode !== 'sandbox') {
    if (settings.demo === true) {
      return {
        run: 'refused',
        message: `INTERLOCK_DEMO=1 asks for demo traffic, which needs the embedded Stripe sandbox, but the config says stripe.mode: ${settings.stripeMode}; set INTERLOCK_DEMO=0 (or leave it unset)`,
      };
    }
    return { run: 'off', why: `refunds go to Stripe ${settings.stripeMode} mode` };
  }
  if (!settings.embeddedSandbox) return { run: 'off', why: 'refunds go to a sandbox at STRIPE_SANDBOX_URL, not the embedded one' };
  return { run: 'on' };
}
