import { invalidRequest } from './errors.ts';
import { sandboxLimits } from './limits.ts';
import { isRecord, isWholeNumber, type Read } from './params.ts';
import { FAULT_ACTIONS, FAULT_TARGETS, type Fault, type FaultAction, type FaultTarget } from './types.ts';

/**
 * Where in a request's life a fault can strike:
 * - `arrival`: before the idempotency layer, as Stripe's rate limiter does;
 * - `started`: the key (if any) is in use and the endpoint is about to run;
 * - `executing`: parameters passed validation and the endpoint runs (its result is saved);
 * - `locking`: the parameters are read and the endpoint takes its object's lock before it decides;
 * - `replaying`: a saved answer is about to be sent again.
 */
export const FAULT_STAGES = ['arrival', 'started', 'locking', 'executing', 'replaying'] as const;
export type FaultStage = (typeof FAULT_STAGES)[number];

const STAGES_OF: Record<FaultAction, readonly FaultStage[]> = {
  error_429: ['arrival'],
  delay: ['started'],
  error_500: ['executing'],
  error_500_after_commit: ['executing'],
  drop_after_commit: ['executing', 'replaying'],
  lock_timeout: ['locking'],
};

interface QueuedFault {
  fault: Fault;
  timesLeft: number;
  /** Requests it matched and requests it caught, so that a share is caught evenly and exactly. */
  matched: number;
  caught: number;
}

/** Faults waiting for requests, taken in the order they were set. */
export class FaultQueue {
  private queue: QueuedFault[] = [];

  /** Queue a fault; false when the queue is full. */
  add(fault: Fault): boolean {
    if (this.queue.length >= sandboxLimits.faultsMax) return false;
    this.queue.push({ fault, timesLeft: fault.times ?? 1, matched: 0, caught: 0 });
    return true;
  }

  clear(): void {
    this.queue = [];
  }

  /**
   * The first queued fault for this endpoint that strikes at this stage (on this payment intent,
   * when it names one, and when its share says this request is one it catches), counted as used.
   */
  take(on: FaultTarget, stage: FaultStage, paymentIntent: string | null = null): Fault | null {
    for (const [index, item] of this.queue.entries()) {
      const { fault } = item;
      if (fault.on !== on || !STAGES_OF[fault.action].includes(stage)) continue;
      if (fault.paymentIntent !== undefined && fault.paymentIntent !== paymentIntent) continue;
      item.matched += 1;
      // Caught when the share of the requests matched so far reaches one more (the small term
      // keeps 0.1 × 10 from falling short of 1 in floating point).
      if (Math.floor(item.matched * (fault.share ?? 1) + 1e-9) <= item.caught) continue;
      item.caught += 1;
      item.timesLeft -= 1;
      if (item.timesLeft <= 0) this.queue.splice(index, 1);
      return fault;
    }
    return null;
  }

  /** Faults still waiting, with what is left of their counts. */
  pending(): Fault[] {
    return this.queue.map((item) => ({ ...item.fault, times: item.timesLeft }));
  }
}

/** Check a fault given by a test or over the control route. */
export function readFault(value: unknown): Read<Fault> {
  if (!isRecord(value)) return refuse('A fault must be an object.', 'fault');
  const on = FAULT_TARGETS.find((target) => target === value['on']);
  if (on === undefined) return refuse(`Fault 'on' must be one of ${FAULT_TARGETS.join(', ')}.`, 'on');
  const action = FAULT_ACTIONS.find((known) => known === value['action']);
  if (action === undefined) return refuse(`Fault 'action' must be one of ${FAULT_ACTIONS.join(', ')}.`, 'action');
  const fault: Fault = { on, action };
  const times = value['times'];
  if (times !== undefined) {
    if (!isWholeNumber(times, 1, sandboxLimits.faultTimesMax)) {
      return refuse(`Fault 'times' must be a whole number from 1 to ${sandboxLimits.faultTimesMax}.`, 'times');
    }
    fault.times = times;
  }
  const delayMs = value['delayMs'];
  if (action === 'delay') {
    if (!isWholeNumber(delayMs, 0, sandboxLimits.faultDelayMsMax)) {
      return refuse(`A delay fault needs 'delayMs' from 0 to ${sandboxLimits.faultDelayMsMax}.`, 'delayMs');
    }
    fault.delayMs = delayMs;
  } else if (delayMs !== undefined) {
    return refuse(`Only a delay fault takes 'delayMs'.`, 'delayMs');
  }
  const lockOnly = readLockOptions(value, action);
  if (!lockOnly.ok) return lockOnly;
  return { ok: true, value: { ...fault, ...lockOnly.value } };
}

/** A `lock_timeout` fault's `paymentIntent` and `share`; any other fault takes neither. */
function readLockOptions(value: Record<string, unknown>, action: FaultAction): Read<Pick<Fault, 'paymentIntent' | 'share'>> {
  const { paymentIntent, share } = value;
  const options: Pick<Fault, 'paymentIntent' | 'share'> = {};
  if (paymentIntent !== undefined) {
    if (action !== 'lock_timeout') return refuse(`Only a lock_timeout fault takes 'paymentIntent'.`, 'paymentIntent');
    if (typeof paymentIntent !== 'string' || !paymentIntent.startsWith('pi_')) {
      return refuse(`A lock_timeout fault's 'paymentIntent' must be a payment intent id (pi_...).`, 'paymentIntent');
    }
    options.paymentIntent = paymentIntent;
  }
  if (share !== undefined) {
    if (action !== 'lock_timeout') return refuse(`Only a lock_timeout fault takes 'share'.`, 'share');
    if (typeof share !== 'number' || !(share > 0 && share <= 1)) {
      return refuse(`A lock_timeout fault's 'share' must be a number above 0 and at most 1.`, 'share');
    }
    options.share = share;
  }
  return { ok: true, value: options };
}

function refuse<T>(message: string, param: string): Read<T> {
  return { ok: false, failure: invalidRequest(null, message, param) };
}
