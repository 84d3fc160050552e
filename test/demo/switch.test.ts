import { describe, expect, it } from 'vitest';
import { type DemoSettings, decideDemoTraffic } from '../../server/demo/switch.ts';

// Whether `npm start` runs demo traffic, in precedence order; the last column is the outcome.

const npmStart: DemoSettings = { demo: null, sandboxDemo: true, testMode: false, stripeMode: 'sandbox', embeddedSandbox: true };

describe('decideDemoTraffic', () => {
  it.each<[string, Partial<DemoSettings>, string]>([
    ['npm start on the embedded sandbox', {}, 'on'],
    ['INTERLOCK_DEMO=1 on the embedded sandbox', { demo: true }, 'on'],
    ['INTERLOCK_DEMO=0', { demo: false }, 'off: INTERLOCK_DEMO=0'],
    ['INTERLOCK_DEMO=0 with Stripe test mode', { demo: false, stripeMode: 'test', embeddedSandbox: false }, 'off: INTERLOCK_DEMO=0'],
    ['SANDBOX_DEMO=0 (every test server)', { sandboxDemo: false }, 'off: SANDBOX_DEMO=0'],
    ['SANDBOX_DEMO=0 even with INTERLOCK_DEMO=1', { demo: true, sandboxDemo: false }, 'off: SANDBOX_DEMO=0'],
    ['test_mode: true', { testMode: true }, 'off: the config says test_mode: true'],
    ['test_mode: true even with INTERLOCK_DEMO=1', { demo: true, testMode: true }, 'off: the config says test_mode: true'],
    ['Stripe test mode, INTERLOCK_DEMO unset', { stripeMode: 'test', embeddedSandbox: false }, 'off: refunds go to Stripe test mode'],
    ['Stripe test mode with INTERLOCK_DEMO=1', { demo: true, stripeMode: 'test', embeddedSandbox: false }, 'refused'],
    ['Stripe live mode, INTERLOCK_DEMO unset', { stripeMode: 'live', embeddedSandbox: false }, 'off: refunds go to Stripe live mode'],
    ['Stripe live mode with INTERLOCK_DEMO=1', { demo: true, stripeMode: 'live', embeddedSandbox: false }, 'refused'],
    ['a sandbox at STRIPE_SANDBOX_URL', { embeddedSandbox: false }, 'off: refunds go to a sandbox at STRIPE_SANDBOX_URL, not the embedded one'],
  ])('%s: %o', (_name, overrides, expected) => {
    const decided = decideDemoTraffic({ ...npmStart, ...overrides });
    expect(decided.run === 'off' ? `off: ${decided.why}` : decided.run).toBe(expected);
  });

  it('the refusal names INTERLOCK_DEMO and says how to start', () => {
    const decided = decideDemoTraffic({ ...npmStart, demo: true, stripeMode: 'test', embeddedSandbox: false });
    expect(decided).toEqual({
      run: 'refused',
      message:
        'INTERLOCK_DEMO=1 asks for demo traffic, which needs the embedded Stripe sandbox, but the config says stripe.mode: test; set INTERLOCK_DEMO=0 (or leave it unset)',
    });
  });
});
