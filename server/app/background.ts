import type { FastifyBaseLogger } from 'fastify';
import type { InterlockConfig } from '../config/schema.ts';
import { Reconciler } from '../confirm/reconciler.ts';
import type { Checkpointer } from '../integrity/checkpoints.ts';
import { WholeJournalPass, viewsPassParts, type WholePassCounts, type WholePassParts } from '../integrity/whole-pass.ts';
import { limits } from '../../shared/limits.ts';
import type { Views } from '../views/views.ts';
import type { AppClock } from './clock.ts';
import { queueWaiting, recoverInFlight, type Services } from './services.ts';
import { startJournalWakeUps } from './journal-wakeups.ts';
import { logListenOutages } from './listen-log.ts';
import type { Stop } from './stop.ts';

/** How often the outbox looks for retries that came due. */
const OUTBOX_PASS_MS = 1_000;
/** How often refunds whose webhook never came are looked up, unless told otherwise. */
const RECONCILE_MS_DEFAULT = 60_000;

/** What the background work runs on. */
export interface BackgroundParts {
  services: Services;
  config: InterlockConfig;
  clock: AppClock;
  checkpointer: Checkpointer;
  log: FastifyBaseLogger;
  reconcileMs?: number | undefined;
}

/**
 * Start the background work of a started Interlock: the ticker, the journal's wake-ups and poll,
 * the signed checkpoints, the pass over the whole journal, the reconciler and the outbox. Each
 * one's stop is pushed to `stops`, in the order they started.
 */
export async function startBackground(parts: BackgroundParts, stops: Stop[]): Promise<void> {
  const { services, config, clock, checkpointer, log } = parts;
  const { views } = services;
  // A corrupt journal met by background work is the views' to log (once); anything else is logged here.
  const failed = (level: 'error' | 'warn', what: string) => (effectId: string | null, error: unknown) => {
    if (!views.report(error)) log[level]({ err: error, effectId }, what);
  };
  // Stopped last (stops run newest first): the leases are given back once the work under them stopped.
  const { workLeases } = services;
  workLeases.start(['sla-ticker', 'checkpoint-signing', 'pull-reconciler']);
  stops.push(() => workLeases.stop());
  stops.push(startTicker(services, (error) => failed('error', 'ticker pass failed')(null, error)));
  // Told before the first subscription below, so a listening connection that cannot be opened at the start is logged.
  stops.push(logListenOutages(services.storage.signals, log));
  // Other servers' entries: told by their wake-ups where the storage carries them, else polled for.
  const onError = (error: unknown) => log.warn({ err: error }, "the journal's wake-ups could not be listened for; the views poll the journal instead");
  const onReconnect = () => log.info("listening for the other servers' wake-ups again: the views read the journal from where they stand");
  stops.push(await startJournalWakeUps({ storage: services.storage, views, onError, onReconnect }));
  checkpointer.start();
  stops.push(() => checkpointer.stop());
  if (config.integrity.wholePassMs !== null) stops.push(startWholePass(views, checkpointer, services.wholePass, config.integrity.wholePassMs, log));
  // Refunds whose webhook never came are looked up, a few at a time, well under Stripe's rate limit.
  const reconciler = new Reconciler({
    journal: services.journal,
    target: services.target,
    candidates: async () => (await views.current()).inbox.unconfirmedSent(),
    nowMs: () => clock.wallMs(),
    onConfirmed: () => views.refresh(),
    onError: failed('warn', 'confirmation lookup failed; tried again later'),
    // One server of those on the database looks refunds up.
    mayRun: () => workLeases.hold('pull-reconciler'),
  });
  reconciler.start(parts.reconcileMs ?? RECONCILE_MS_DEFAULT);
  stops.push(() => reconciler.stop());
  // The outbox works beside everything else: after each catch-up that saw new entries (a new
  // escalation is told within the poll), and on a timer for retries that come due.
  const { outbox } = services;
  let seenSeq = -1;
  views.onCaughtUp((seq) => {
    if (seq === seenSeq) return;
    seenSeq = seq;
    void outbox.kick();
  });
  outbox.start(OUTBOX_PASS_MS);
  stops.push(async () => {
    outbox.stop();
    await outbox.idle();
  });
}

/** The background pass over the whole journal (server/integrity/whole-pass.ts), from now on; the answer stops it. */
function startWholePass(views: Views, checkpointer: Checkpointer, counts: WholePassCounts, periodMs: number, log: WholePassParts['log']): () => Promise<void> {
  const pass = new WholeJournalPass({
    ...viewsPassParts(views),
    checkpointProblem: () => checkpointer.checkpointProblem(),
    derivedCheck: () => views.derivedCheck(),
    counts,
    periodMs,
    log,
  });
  pass.start();
  return async () => {
    pass.stop();
    await pass.idle();
  };
}

/**
 * The background pass, on the application clock: move overdue items up their chain, settle what
 * a crash left in flight once its claim has lapsed, and send approvals whose send did not finish.
 * One pass at a time; each step failing does not stop the next. Among the servers on one database
 * only the one holding the `sla-ticker` lease runs it: each pass first takes or renews the lease,
 * and stops between steps once the lease is no longer held.
 */
export function startTicker(services: Services, onError: (error: unknown) => void): () => void {
  let running = false;
  const pass = async () => {
    // Nothing is swept from a journal that failed a check: the operator has to act first.
    if (running || services.views.unavailable) return;
    running = true;
    try {
      if (!(await services.workLeases.hold('sla-ticker'))) return;
      for (const step of [
        () => services.inbox.tick(),
        // Reminders at their share of the SLA, digests of windows that closed.
        () => services.outbox.tick(),
        async () => services.inbox.reconcile(await recoverInFlight(services)),
        // Requests another process accepted to wait their turn, long enough ago that it must have stopped.
        () => queueWaiting(services, services.clock.wallMs() - limits.stripeTurnQueueMs - services.gate.claimTtlMs),
        () => services.inbox.executeApproved(),
        // Finish what was left half done while running (a request whose facts could not be read
        // before its send), as start-up does, once it is older than a send may take.
        () => services.inbox.refresh({ newUntilMs: services.clock.wallMs() - services.gate.claimTtlMs }),
      ]) {
        if (!services.workLeases.holds('sla-ticker')) break;
        await step().catch(onError);
      }
      // What the pass wrote reaches the live pages now rather than at the next poll.
      services.views.refresh();
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void pass(), services.config.slaTickMs);
  timer.unref();
  return () => clearInterval(timer);
}
