import type { Services } from '../app/services.ts';
import { askForDemoRefund, type DemoOutcome, type DemoSandbox, tallyJournaledDemoRequests } from './ask.ts';
import { type DemoPlan, DemoPlanner, type DemoTally, demoLimits, demoRequestId, firstDelayMs, nextDelayMs } from './plan.ts';
import { markDemoTraffic } from './status.ts';

/** One timer at a time: `after` runs `run` once, later; what it returns cancels it. Tests inject their own. */
export interface DemoTimers {
  after(ms: number, run: () => void): () => void;
}

/** Real timers that never keep the process alive on their own. */
export const REAL_TIMERS: DemoTimers = {
  after(ms, run) {
    const timer = setTimeout(run, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};

/** Where demo traffic says what it does. */
export interface DemoLog {
  info(message: string): void;
  warn(fields: object, message: string): void;
}

/** What the runner is made of: the I/O (tally, ask) and the time and chance it runs on. */
export interface DemoRunnerOptions {
  /** The demo requests the journal holds now. */
  tally(): Promise<DemoTally>;
  ask(requestId: string, plan: DemoPlan): Promise<DemoOutcome>;
  /** False while nothing may be asked (a journal that failed a check): the beat is skipped quietly. */
  available(): boolean;
  /** Whether this server asks at this beat (default: always): among servers on one database, the one holding the work's lease. */
  mayAsk?: () => Promise<boolean>;
  timers: DemoTimers;
  random: () => number;
  log: DemoLog;
  /** Called once, when the limit is reached. */
  onFinished(): void;
}

/** Running demo traffic. */
export interface DemoTraffic {
  /** Cancel the next beat and wait for the one under way: no timer is left. */
  stop(): Promise<void>;
}

/** The announcement in the log at start. */
export const DEMO_ANNOUNCEMENT = `demo traffic: an agent named demo asks for a refund every ${demoLimits.intervalMsMin / 1000}–${demoLimits.intervalMsMax / 1000} s, at most ${demoLimits.requestsMax}; INTERLOCK_DEMO=0 turns it off`;

function dollars(cents: number): string {
  return `$${(cents / 100).toFixed(2)}`;
}

/** One line per request, so the log tells the same story as the inbox. */
function describeOutcome(requestId: string, plan: DemoPlan, outcome: DemoOutcome): string {
  const said = [plan.reason === null ? 'no reason given' : JSON.stringify(plan.reason), ...plan.flags].join(', ');
  const disputed = plan.dispute ? ' (payment disputed)' : '';
  const byHand = plan.handRefundCents !== null && outcome.status === 'QUEUED' ? `; then ${dollars(plan.handRefundCents)} refunded by hand in the sandbox, so the facts changed before a person decides` : '';
  return `demo traffic: ${requestId} asks ${dollars(plan.amountCents)} back of ${dollars(plan.paymentCents)} on ${outcome.paymentIntent}${disputed} (${said}): ${outcome.status}${byHand}`;
}

/**
 * Ask for one refund at each beat, the first soon after start and the next 10–30 s after each,
 * until the data folder holds `demoLimits.requestsMax` demo requests (counted from the journal at
 * the first beat, so a restart goes on where the last run stopped). A failed request is logged and
 * the next beat comes as usual; nothing here is awaited by start-up.
 */
export function runDemoTraffic(options: DemoRunnerOptions): DemoTraffic {
  const { log, random } = options;
  const planner = new DemoPlanner(random);
  let tally: DemoTally | null = null;
  let told = false;
  let cancel: (() => void) | null = null;
  let beating: Promise<void> | null = null;
  let stopped = false;

  const schedule = (ms: number) => {
    if (stopped) return;
    cancel = options.timers.after(ms, () => {
      cancel = null;
      beating = beat().finally(() => {
        beating = null;
      });
    });
  };

  const finished = (count: number) => {
    stopped = true;
    log.info(`demo traffic: this data folder holds ${count} demo requests, its limit; no more are asked`);
    options.onFinished();
  };

  // Returns false when the limit is reached and nothing more is to be asked.
  const askOnce = async (): Promise<boolean> => {
    const known = tally ?? (await options.tally());
    tally = known;
    if (!told && known.count > 0 && known.count < demoLimits.requestsMax) log.info(`demo traffic: ${known.count} demo requests already in this data folder; going on from ${demoRequestId(known.lastNumber + 1)}`);
    told = true;
    if (known.count >= demoLimits.requestsMax) return false;
    const n = known.lastNumber + 1;
    const requestId = demoRequestId(n);
    const plan = planner.plan(n);
    try {
      log.info(describeOutcome(requestId, plan, await options.ask(requestId, plan)));
      tally = { count: known.count + 1, lastNumber: n };
    } catch (error) {
      log.warn({ err: error, requestId }, `demo traffic: ${requestId} failed; the next one goes on`);
      // Whether anything of it was written is the journal's to say: read it again at the next beat.
      tally = null;
    }
    return tally === null || tally.count < demoLimits.requestsMax;
  };

  const beat = async () => {
    if (stopped) return;
    let more = true;
    try {
      if (options.available()) {
        if (options.mayAsk === undefined || (await options.mayAsk())) more = await askOnce();
        // Another server asks meanwhile: the tally is read from the journal again when this one asks next.
        else tally = null;
      }
    } catch (error) {
      log.warn({ err: error }, 'demo traffic: could not read the journal; trying again at the next beat');
    }
    if (!more) return finished(tally?.count ?? demoLimits.requestsMax);
    schedule(nextDelayMs(random));
  };

  schedule(firstDelayMs(random));
  return {
    async stop() {
      stopped = true;
      cancel?.();
      cancel = null;
      await beating;
    },
  };
}

/** What demo traffic needs from a running server. */
export interface DemoTrafficParts {
  services: Services;
  sandbox: DemoSandbox;
  log: DemoLog;
  timers?: DemoTimers;
  random?: () => number;
}

/** Start demo traffic over a server's services and its embedded sandbox; the session says it runs until it stops or is done. */
export function startDemoTraffic(parts: DemoTrafficParts): DemoTraffic {
  const { services, sandbox } = parts;
  parts.log.info(DEMO_ANNOUNCEMENT);
  markDemoTraffic(services, true);
  const traffic = runDemoTraffic({
    tally: () => tallyJournaledDemoRequests(services),
    ask: (requestId, plan) => askForDemoRefund(services, sandbox, requestId, plan),
    available: () => !services.views.unavailable,
    mayAsk: () => services.workLeases.hold('demo-traffic'),
    timers: parts.timers ?? REAL_TIMERS,
    random: parts.random ?? Math.random,
    log: parts.log,
    onFinished: () => markDemoTraffic(services, false),
  });
  return {
    async stop() {
      markDemoTraffic(services, false);
      await traffic.stop();
    },
  };
}
