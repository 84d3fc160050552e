import { invalidRequest } from './errors.ts';
import { sandboxLimits } from './limits.ts';
import { isRecord, isWholeNumber, type Read } from './params.ts';
import { FAULT_ACTIONS, FAULT_TARGETS, type Fault, type FaultAction, type FaultTarget } from './types.ts';

/**
 * Where in a request's life a fault can strike:
 * - `arrival`: before the idempotency layer, as Stripe's rate limiter does;
 * - `started`: the key (if any) is in use and the endpoint is about to run;
 * - `executing`: parameters passed validation and the endpoint runs (its result is saved);
 * - `replaying`: a saved answer is about to be sent again.
 */
export const FAULT_STAGES = ['arrival', 'started', 'executing', 'replaying'] as const;
export type FaultStage = (typeof FAULT_STAGES)[number];

const STAGES_OF: Record<FaultAction, readonly FaultStage[]> = {
  error_429: ['arrival'],
  delay: ['started'],
  error_500: ['executing'],
  error_500_after_commit: ['executing'],
  drop_after_commit: ['executing', 'replaying'],
};

interface QueuedFault {
  fault: Fault;
  timesLeft: number;
}

/** Faults waiting for requests, taken in the order they were set. */
export class FaultQueue {
  private queue: QueuedFault[] = [];

  /** Queue a fault; false when the queue is full. */
  add(fault: Fault): boolean {
    if (this.queue.length >= sandboxLimits.faultsMax) return false;
    this.queue.push({ fault, timesLeft: fault.times ?? 1 });
    return true;
  }

  clear(): void {
    this.queue = [];
  }

  /** The first queued fault for this endpoint that strikes at this stage, counted as used. */
  take(on: FaultTarget, stage: FaultStage): Fault | null {
    const index = this.queue.findIndex((item) => item.fault.on === on && STAGES_OF[item.fault.action].includes(stage));
    if (index === -1) return null;
    const item = this.queue[index]!;
    item.timesLeft -= 1;
    if (item.timesLeft <= 0) this.queue.splice(index, 1);
    return item.fault;
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
  return { ok: true, value: fault };
}

function refuse(message: string, param: string): Read<Fault> {
  return { ok: false, failure: invalidRequest(null, message, param) };
}
