import { onTestFinished } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { Gate, type Proposal } from '../../server/gate/gate.ts';
import { MemoryLeases } from '../../server/gate/leases.ts';
import { type PaymentIntent, type Sandbox, type SandboxOptions, startSandbox } from '../../server/sandbox/index.ts';
import { StripeRefunds } from '../../server/targets/stripe-refunds.ts';
import { cleanUpDatabases, fakeClock, type FakeClock, openTempDatabase } from '../support/db-journals.ts';

/** A sandbox for one test, closed when the test finishes. */
export async function openStripeSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const sandbox = await startSandbox(options);
  onTestFinished(() => sandbox.close());
  return sandbox;
}

/** The lease every world grants. */
export const LEASE = 'L-stripe-refunds';

/**
 * The whole gate over Stripe for one test: the real SDK against an in-process sandbox, the
 * journal on a temp SQLite file, and a wall clock the test moves by hand (journal claims and the
 * gate's key window both read it). One payment intent of `amountCents`, paid with `paymentMethod`.
 */
export interface StripeWorld {
  sandbox: Sandbox;
  target: StripeRefunds;
  journal: SqliteJournal;
  leases: MemoryLeases;
  clock: FakeClock;
  intent: PaymentIntent;
  gate: Gate;
  /** Another gate on the same journal, as a restarted process would be. */
  newGate(): Gate;
  /** A refund proposal for the world's payment intent, on the facts read from Stripe now. */
  proposal(overrides?: Partial<Proposal> & { amountCents?: number }): Promise<Proposal>;
}

export async function buildStripeWorld(options: { amountCents?: number; claimTtlMs?: number; sandbox?: SandboxOptions } = {}): Promise<StripeWorld> {
  const sandbox = await openStripeSandbox(options.sandbox);
  const target = new StripeRefunds(sandbox.stripe());
  const clock = fakeClock(Date.now());
  const journal = new SqliteJournal({ db: openTempDatabase().db, wallClockMs: clock.wallClockMs });
  onTestFinished(cleanUpDatabases);
  const leases = new MemoryLeases();
  leases.grant(LEASE);
  const intent = await sandbox.createPaymentIntent(options.amountCents ?? 5_000);
  const newGate = () =>
    new Gate({ journal, target, leases, wallClockMs: clock.wallClockMs, claimTtlMs: options.claimTtlMs ?? 120_000 });
  const proposal: StripeWorld['proposal'] = async (overrides = {}) => {
    const { amountCents = 2_000, ...rest } = overrides;
    return {
      agent: 'refund-bot',
      lease: LEASE,
      requestKey: `case-${intent.id}`,
      premises: await target.capture(intent.id),
      effect: { payment_intent: intent.id, amount: amountCents },
      ...rest,
    };
  };
  return { sandbox, target, journal, leases, clock, intent, gate: newGate(), newGate, proposal };
}
