import { STOP_ANSWER_MS } from '../http/graceful-stop.ts';

/** How one piece of work started with the app stops. */
export type Stop = () => Promise<void> | void;

/** What the stop keeps, after the background work, for closing the app, the last checkpoint and exiting. */
const STOP_CLOSE_MARGIN_MS = 2_000;

/**
 * Stop the background work, newest first, from a stop that began at `startMs` (performance
 * clock). Each is waited for only while the stop keeps within its bound: a call to Stripe with no
 * answer (its own timeout is 30 s) is left to end with the process, not waited for until systemd
 * kills it at TimeoutStopSec=30 with no last checkpoint.
 */
export async function stopWithinBound(stops: readonly Stop[], startMs: number, log: { warn(message: string): void }): Promise<void> {
  const stopByMs = startMs + STOP_ANSWER_MS - STOP_CLOSE_MARGIN_MS;
  for (const stop of [...stops].reverse()) {
    if (!(await finishedBy(stop(), stopByMs))) log.warn('background work did not stop in time; it ends with the process');
  }
}

/** True once `work` ended (however), false if `byMs` (performance clock) came first. */
async function finishedBy(work: Promise<unknown> | unknown, byMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, byMs - performance.now()));
  });
  try {
    return await Promise.race([Promise.resolve(work).then(() => true, () => true), late]);
  } finally {
    clearTimeout(timer);
  }
}
