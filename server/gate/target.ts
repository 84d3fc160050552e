import type { Change, Repair } from '../../shared/entries.ts';
import type { Dispatched } from '../../shared/entries.ts';
import type { Json, JsonObject } from '../../shared/json.ts';

/** What a target says about recorded premises, from one read of the world. */
export interface Explained {
  violations: string[];
  changes: Change[];
  repairs: Repair[];
}

/** How a target judges recorded premises. */
export interface ExplainOptions {
  /**
   * The rules decided it, not a person: other refunds Interlock itself makes or reserves on the
   * same payment may move the facts as long as this refund still fits. A person's approval, and
   * any change made outside Interlock, are always judged on the exact facts.
   */
  headroom?: boolean;
  /**
   * The open dispatches of other effects that reserve what this one does, read from the journal
   * before the world is: they count as already done.
   */
  reserved?: readonly Dispatched[];
}

/** Cooperation tiers: 1 dedupes on the effect id, 2 can look an effect up, 3 neither. */
export type Tier = 1 | 2 | 3;

/** What the gate acts on. Every method may throw; the gate decides what a throw means. */
export interface Target {
  readonly tier: Tier;
  /** Whether `query` can find an effect by its id. */
  readonly queryable: boolean;
  /** How long the provider remembers an idempotency key; null for forever. */
  readonly dedupWindowMs: number | null;
  /** A reason the payload can never be sent (bad amount, wrong shape), or null. Checked before anything is written. */
  invalidEffect(effect: JsonObject): string | null;
  /** Perform the effect under its id. Throws TargetRejectedError for a definite "no"; any other throw is an unknown outcome. */
  apply(effectId: string, effect: JsonObject): Promise<Json>;
  /** Evidence that the effect landed (truthy), or null. */
  query(effectId: string, effect: JsonObject): Promise<Json>;
  /** Compare recorded premises with the world now. */
  explain(premises: Json, effectId: string, effect: JsonObject, options?: ExplainOptions): Promise<Explained>;
  /** What an open dispatch of this effect reserves (a refund: its payment), or null for nothing. */
  reservationKey?(effect: JsonObject): string | null;
  /**
   * Judge recorded premises against facts already read (`now`), with no read of the world: the
   * gate's check before a send, when the facts a rule ran on are fresh enough to be that read.
   */
  judgeOn?(premises: Json, now: JsonObject, effect: JsonObject, options?: ExplainOptions): Explained;
  /**
   * A send's place in the target's rate budget: its fresh read and its create taken together, so
   * the send goes out as soon as its DISPATCHED is written. Absent, sends are not paced.
   */
  sendTurn?(): Promise<SendTurn>;
  /** Give back what the caller holds of the rate budget and has not used, before it waits for something else. */
  yieldHeld?(): void;
  /** Run recovery's reads and resends as recovery in the target's rate budget. */
  recoveryTurn?<T>(work: () => Promise<T>): Promise<T>;
}

/** Places taken in a target's rate budget: work run with them uses them, and `release` gives back the rest. */
export interface SendTurn {
  run<T>(work: () => Promise<T>): Promise<T>;
  release(): void;
}

/** Facts read just before a send, with the journal position read before them, so the send can reuse the read. */
export interface FreshFacts {
  facts: JsonObject;
  /** What the facts' open dispatches were read under (the payment), and the journal position then. */
  key: string;
  seq: number;
  /** When they were read, on the wall clock. */
  readAtWallMs: number;
}

/** The target answered and definitely did not do it (Stripe 400/402/404, a declined card). */
export class TargetRejectedError extends Error {
  override readonly name = 'TargetRejectedError';
}

/**
 * The target answered that it is too busy and did nothing (Stripe's 429: `rate_limit`,
 * `lock_timeout`), and kept nothing under the idempotency key: the same send may go again.
 */
export class TargetBusyError extends Error {
  override readonly name = 'TargetBusyError';
}

/**
 * The target asked for the send to be tried again (`Stripe-Should-Retry: true`) but may have done
 * it: worth the same send under the same key, and an unknown outcome if the tries run out.
 */
export class TargetRetryableError extends Error {
  override readonly name = 'TargetRetryableError';
}

/** Test hook: stands for the process dying at this point. */
export class SimulatedCrash extends Error {
  override readonly name = 'SimulatedCrash';
}

/** The payload can never be sent; nothing was written. */
export class InvalidEffectError extends Error {
  override readonly name = 'InvalidEffectError';
  readonly code = 'invalid_effect';
}
