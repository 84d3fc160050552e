// The production guards of live mode: with `stripe.mode: live` refunds move real money, so the
// start fails closed unless every guard holds. A pure decision over facts the runtime gathers.

/** The guards live mode needs, in the order a refusal names them. */
export const LIVE_GUARDS = ['demo_credentials_refused', 'https_public_url', 'receipt_key_outside_data_dir', 'no_test_mode', 'no_demo_traffic', 'no_sandbox'] as const;
/** One production guard. */
export type LiveGuard = (typeof LIVE_GUARDS)[number];

/** What the guards are judged on, gathered at start from the config and the environment. */
export interface LiveFacts {
  /** A person or agent still holds a secret the shipped interlock.yaml publishes. */
  publishedSecretHeld: boolean;
  /** The config's `public_url`, or null. */
  publicUrl: string | null;
  /** The receipt signing key is (or would be made) inside the data folder. */
  receiptKeyInDataDir: boolean;
  /** The config's `test_mode`: the clock-moving endpoint and the movable test clock. */
  testMode: boolean;
  /** `INTERLOCK_DEMO=1`: demo traffic asked for. */
  demoAsked: boolean;
  /** `STRIPE_SANDBOX_URL` is set: refunds would go to a sandbox. */
  sandboxUrlSet: boolean;
}

/** A guard that does not hold, and what to do about it. */
export interface FailedGuard {
  guard: LiveGuard;
  fix: string;
}

/** Why each guard exists and how to make it hold: the sentence a refusal prints. */
const FIXES: Readonly<Record<LiveGuard, string>> = {
  demo_credentials_refused: 'the demo passwords or agent token published in the shipped interlock.yaml are still in the config; replace them',
  https_public_url: 'public_url must be the https address people reach the inbox at',
  receipt_key_outside_data_dir: 'the receipt signing key must live outside the data folder: name it with RECEIPT_KEY_PATH or a systemd credential',
  no_test_mode: 'test_mode (its movable clock and clock-moving endpoint) must be off',
  no_demo_traffic: 'INTERLOCK_DEMO=1 asks for demo traffic; unset it',
  no_sandbox: 'STRIPE_SANDBOX_URL points refunds at a sandbox; unset it',
};

/** Whether each guard holds on these facts; a `Record`, so a new guard does not compile without its check. */
const HOLDS: Readonly<Record<LiveGuard, (facts: LiveFacts) => boolean>> = {
  demo_credentials_refused: (facts) => !facts.publishedSecretHeld,
  https_public_url: (facts) => facts.publicUrl !== null && URL.canParse(facts.publicUrl) && new URL(facts.publicUrl).protocol === 'https:',
  receipt_key_outside_data_dir: (facts) => !facts.receiptKeyInDataDir,
  no_test_mode: (facts) => !facts.testMode,
  no_demo_traffic: (facts) => !facts.demoAsked,
  no_sandbox: (facts) => !facts.sandboxUrlSet,
};

/** Every production guard that does not hold on these facts, in `LIVE_GUARDS` order; empty when live mode may start. */
export function decideLiveGuards(facts: LiveFacts): FailedGuard[] {
  return LIVE_GUARDS.filter((guard) => !HOLDS[guard](facts)).map((guard) => ({ guard, fix: FIXES[guard] }));
}

/** The one line a refused live start prints: every failed guard by name, with what to do. */
export function describeFailedGuards(failed: readonly FailedGuard[]): string {
  return `stripe.mode: live needs every production guard, and ${failed.length} failed: ${failed.map((f) => `${f.guard} (${f.fix})`).join('; ')}`;
}

/** Live mode refused at start: a guard failed, or the key lacks a permission. The message is the one line to print. */
export class LiveModeError extends Error {
  override readonly name = 'LiveModeError';
}
