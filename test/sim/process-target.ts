import type Stripe from 'stripe';
import type { Dispatched } from '../../shared/entries.ts';
import type { Json, JsonObject } from '../../shared/json.ts';
import { type ExplainOptions, type Explained, SimulatedCrash, type Target, TargetBusyError, TargetRejectedError } from '../../server/gate/target.ts';
import type { PaymentFacts } from '../../server/targets/stripe-refunds.ts';
import { EFFECT_METADATA_KEY } from '../../server/targets/stripe-refunds.ts';
import type { MemoryRefunds } from '../../server/targets/memory-payments.ts';
import { judgeApply } from './oracle.ts';
import { busyAnswer, readWaitMs } from './rate-limits.ts';
import type { Life } from './sim-journal.ts';
import type { World } from './world.ts';

/** A fault the simulator injects into a call to the payments service: never a crash, an error the process lives through. */
export class InjectedFault extends Error {
  override readonly name = 'InjectedFault';
}

/**
 * One process's connection to the shared payments service. A dead process reaches nothing; a
 * live one meets injected faults (a send that times out before or after Stripe acted, a read or a
 * lookup that fails, a send answered 429, a read slowed by 429s), and every send is judged by the
 * oracle as it arrives. Four of the planted bugs live here: a facts check that always passes, a
 * lookup that never finds anything (so recovery resends instead of finding the refund that
 * landed), and a 429 taken for an unknown outcome or for a definite failure.
 */
export class ProcessTarget implements Target {
  readonly tier;
  readonly queryable;
  readonly dedupWindowMs;
  readonly #inner: MemoryRefunds;

  constructor(
    private readonly world: World,
    private readonly life: Life,
  ) {
    this.#inner = world.target;
    this.tier = this.#inner.tier;
    this.queryable = this.#inner.queryable;
    this.dedupWindowMs = this.#inner.dedupWindowMs;
  }

  private alive(): void {
    if (this.life.dead) throw new SimulatedCrash('the process is dead');
  }

  invalidEffect(effect: JsonObject): string | null {
    return this.#inner.invalidEffect(effect);
  }

  reservationKey(effect: JsonObject): string | null {
    return this.#inner.reservationKey(effect);
  }

  /** The request's way to Stripe: time passes, and the process may have died meanwhile. */
  private async travel(): Promise<void> {
    this.alive();
    await this.world.sleep(this.world.latencyMs());
    this.alive();
  }

  /** A read's way to Stripe and back, as long again as the paced transport waits out the 429s Stripe answers it. */
  private async read(): Promise<void> {
    await this.travel();
    const waitMs = readWaitMs(this.world);
    if (waitMs === 0) return;
    await this.world.sleep(waitMs);
    this.alive();
  }

  async apply(effectId: string, effect: JsonObject): Promise<Json> {
    const paymentIntent = String(effect.payment_intent);
    const out = this.world.sendsOut;
    out.set(paymentIntent, (out.get(paymentIntent) ?? 0) + 1);
    try {
      return await this.send(effectId, effect, paymentIntent);
    } finally {
      out.set(paymentIntent, out.get(paymentIntent)! - 1);
    }
  }

  private async send(effectId: string, effect: JsonObject, paymentIntent: string): Promise<Json> {
    await this.travel();
    if (this.world.fault('send_timeout_before')) {
      this.world.trouble(effectId, 'send_timeout');
      throw new InjectedFault('the send timed out before Stripe got it');
    }
    const busy = busyAnswer(this.world, paymentIntent);
    if (busy !== null) {
      this.world.rateLimited.add(effectId);
      await this.travel();
      throw this.busyError(busy);
    }
    judgeApply(this.world, effectId, effect);
    const result = await this.#inner.apply(effectId, effect);
    // The answer's way back: a process that died meanwhile never hears it.
    await this.travel();
    if (this.world.fault('send_timeout_after')) {
      this.world.trouble(effectId, 'send_timeout');
      throw new InjectedFault('the send timed out after Stripe refunded');
    }
    return result;
  }

  /** What the target throws for Stripe's 429, as stripe-refunds.ts does, unless a planted bug takes it for something else. */
  private busyError(said: string): Error {
    if (this.world.options.plant === 'busy_as_unknown') return new InjectedFault(said);
    if (this.world.options.plant === 'busy_as_rejected') return new TargetRejectedError(said);
    return new TargetBusyError(said);
  }

  async query(effectId: string, _effect: JsonObject): Promise<Json> {
    await this.read();
    if (this.world.fault('lookup_error')) {
      this.world.trouble(effectId, 'lookup_error');
      throw new InjectedFault('the lookup failed');
    }
    if (this.world.options.plant === 'skip_lookup' && this.queryable) return null;
    return this.#inner.query(effectId);
  }

  async explain(premises: Json, effectId: string, effect: JsonObject, options?: ExplainOptions): Promise<Explained> {
    await this.read();
    if (this.world.fault('read_error')) {
      this.world.trouble(effectId, 'read_error');
      throw new InjectedFault('reading the payment failed');
    }
    if (this.world.options.plant === 'skip_facts_check') return { violations: [], changes: [], repairs: [] };
    return this.#inner.explain(premises, effectId, effect, options);
  }

  /** The facts a rule or a person reads, open dispatches counted as refunded (as services.ts captures). */
  async capture(paymentIntent: string, reserved: readonly Dispatched[]): Promise<PaymentFacts> {
    await this.read();
    if (this.world.fault('read_error')) throw new InjectedFault('reading the payment failed');
    return this.#inner.capture(paymentIntent, undefined, reserved);
  }
}

/** The memory ledger as Stripe lists a payment's refunds, for the lookup reconciler. */
export function refundLister(world: World, life: Life) {
  return {
    async listRefunds(paymentIntent: string): Promise<Stripe.Refund[]> {
      if (life.dead) throw new SimulatedCrash('the process is dead');
      await world.sleep(world.latencyMs() + readWaitMs(world));
      if (life.dead) throw new SimulatedCrash('the process is dead');
      if (world.fault('lookup_error')) throw new InjectedFault('listing refunds failed');
      return world.target.refunds
        .filter((r) => r.paymentIntent === paymentIntent)
        .map((r) => refundObject(r, world.target.payments.get(r.paymentIntent)?.currency ?? 'usd') as unknown as Stripe.Refund);
    },
  };
}

/** A refund as Stripe's API shows it (the fields confirmations read). */
export function refundObject(refund: MemoryRefunds['refunds'][number], currency: string): JsonObject {
  return {
    id: refund.id,
    object: 'refund',
    amount: refund.amountCents,
    currency,
    payment_intent: refund.paymentIntent,
    status: refund.status,
    created: Math.floor(refund.createdMs / 1000),
    metadata: refund.effectId === null ? {} : { [EFFECT_METADATA_KEY]: refund.effectId },
    livemode: false,
  };
}
