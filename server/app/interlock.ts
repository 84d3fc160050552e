import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type Stripe from 'stripe';
import type { Storage } from '../../db/port/storage.ts';
import type { AppClock } from './clock.ts';
import type { InterlockConfig } from '../config/schema.ts';
import { Reconciler } from '../confirm/reconciler.ts';
import type { KillHook } from '../gate/kill-points.ts';
import { buildApp } from '../http/app.ts';
import { StartGate } from '../http/journal-scope.ts';
import { STOP_ANSWER_MS } from '../http/graceful-stop.ts';
import { createChannels } from '../outbox/channels.ts';
import type { FactsScheduler } from '../facts/current-facts.ts';
import type { Channels } from '../outbox/types.ts';
import type { SigningKey } from '../receipts/keys.ts';
import { SessionStore } from '../sessions/sessions.ts';
import { createServices, queueWaiting, recoverInFlight, type Services, startServices, stripeAccountOf } from './services.ts';
import { limits } from '../../shared/limits.ts';
import type { Views, ViewsLog } from '../views/views.ts';
import type { TablesFound } from '../views/writer.ts';
import { checkJournalAtStart, type StartCheckOutcome, type StartCheckParts } from '../integrity/start-check.ts';
import { Checkpointer } from '../integrity/checkpoints.ts';
import { WholeJournalPass, viewsPassParts, type WholePassCounts, type WholePassParts } from '../integrity/whole-pass.ts';
import { openMirror } from '../integrity/mirrors.ts';
import { watchRefundOutcomes } from '../metrics/refund-outcomes.ts';
import type { LoadedConfig } from '../config/load.ts';
import { ConfigReloader, type ReloadOutcome } from './reload.ts';

/** How often the views look for entries another process appended to the same journal file. */
const JOURNAL_POLL_MS = 250;
/** How often the outbox looks for retries that came due. */
const OUTBOX_PASS_MS = 1_000;
/** How often refunds whose webhook never came are looked up, unless told otherwise. */
const RECONCILE_MS_DEFAULT = 60_000;

/**
 * What Interlock is built from: everything that comes from outside the process's own code, so
 * `npm start` and a test build the same app from different parts.
 */
export interface InterlockParts {
  config: InterlockConfig;
  clock: AppClock;
  /** Where everything is kept (db/sqlite-storage.ts `openStorage`): the caller's to close. */
  storage: Storage;
  /** The data folder: where the receipts' signing key is kept unless `signingKey` is given. */
  dataDir: string;
  /** The receipt signing key as the environment places it (receipts/key-file.ts `resolveSigningKey`); default: the data folder's. */
  signingKey?: SigningKey | undefined;
  stripe: Stripe;
  /** True when refunds go to a local Stripe sandbox rather than Stripe test mode. */
  sandbox: boolean;
  /** Every live webhook endpoint secret (`whsec_...`). */
  webhookSecrets: readonly string[];
  logger?: FastifyServerOptions['logger'] | undefined;
  /** Where a crash test makes the process die (`INTERLOCK_KILL_AT`). */
  killHook?: KillHook | undefined;
  /** How long a sender owns an effect (default `limits.claimTtlMs`). */
  claimTtlMs?: number | undefined;
  /** Refund requests worked on at once before 429 (default `limits.refundsInFlightMax`). */
  refundsInFlightMax?: number | undefined;
  /** Of those, the ones worked on at once (default `limits.refundsWorkingMax`). */
  refundsWorkingMax?: number | undefined;
  reconcileMs?: number | undefined;
  /** Where the built web inbox is (default `dist/web/`). */
  webDist?: string | undefined;
  /** Cookies only over https (default: when the config's public_url is https). */
  secureCookies?: boolean | undefined;
  /** The address the server listens on (`HOST`): a host name it answers to besides the config's. */
  listenHost?: string | undefined;
  /** Run the ticker, the journal poll, the reconciler and the outbox once started (default true); tests drive them by hand. */
  background?: boolean | undefined;
  /** How messages travel (default: the channels the config names, over SMTP and HTTPS). */
  channels?: Channels | undefined;
  /** The current-facts cache's clock and waits (default: the wall clock and timers); tests that are not about its pace skip its waits. */
  factsScheduler?: FactsScheduler | undefined;
  /** How long a send tries a busy Stripe again (default `limits.stripeBusyRetryMs`). */
  busyRetryMs?: number | undefined;
  /**
   * The SHA-256 of the file `config` was loaded from (default: none, so any file reloaded is new).
   * Given, the start compares it with the config the journal last named and journals a change.
   */
  configSha256?: string | undefined;
  /**
   * The Stripe account the budget is shared for with every process on the database (default: as
   * the config says, `stripeAccountOf`): the sandbox's address, or Stripe test mode.
   */
  stripeAccount?: string | undefined;
}

/** Interlock built but not started: the app (not listening), its services, and how to start and stop them. */
export interface Interlock {
  app: FastifyInstance;
  services: Services;
  /**
   * Refuse a damaged journal before anything is served (server/integrity/start-check.ts): the
   * schema's guards, a replay of the entries since the newest checkpoint (or every entry, when
   * it does not hold), the global chain, the checkpoints. Throws a
   * JournalDamagedError, whose message is the one line to print. `beforeReplay` is called before
   * the replay with the derived tables as found (start-check.ts): to listen first when they are
   * to be rebuilt, with `/readyz` telling the rebuild's progress.
   */
  check(options?: Pick<StartCheckParts, 'beforeReplay'>): Promise<StartCheckOutcome>;
  /**
   * Start-up recovery (services.ts `startServices`), then `/readyz` answers ready and the
   * background work starts. Listening is the caller's business, before or after.
   */
  start(): Promise<void>;
  /**
   * Load the config again and put it in force if it may be (server/app/reload.ts): `load` reads and
   * checks the file as at start, throwing a ConfigError for a bad one.
   */
  reload(load: () => LoadedConfig): Promise<ReloadOutcome>;
  /** Stop the background work and close the app. The database and Stripe are the caller's to close. */
  close(): Promise<void>;
}

/** Build the whole of Interlock from its parts: the one way `npm start` and the tests make it. */
export async function buildInterlock(parts: InterlockParts): Promise<Interlock> {
  const { config, clock, storage } = parts;
  // The services are built before the app whose logger they use; nothing logs before start.
  let app: FastifyInstance | null = null;
  const log: ViewsLog = {
    fatal: (fields, message) => app?.log.fatal(fields, message),
    error: (fields, message) => app?.log.error(fields, message),
    info: (fields, message) => app?.log.info(fields, message),
  };
  // Channels this build makes are its to close (the SMTP pool); given ones are the giver's.
  const ownChannels = parts.channels === undefined ? createChannels(config.notifications, { clock }) : null;
  const channels = parts.channels ?? ownChannels!;
  const services = createServices({
    config,
    clock,
    storage,
    dataDir: parts.dataDir,
    ...(parts.signingKey === undefined ? {} : { signingKey: parts.signingKey }),
    stripe: parts.stripe,
    sandbox: parts.sandbox,
    ...(parts.killHook ? { killHook: parts.killHook } : {}),
    ...(parts.claimTtlMs === undefined ? {} : { claimTtlMs: parts.claimTtlMs }),
    ...(parts.factsScheduler === undefined ? {} : { factsScheduler: parts.factsScheduler }),
    ...(parts.busyRetryMs === undefined ? {} : { busyRetryMs: parts.busyRetryMs }),
    // Every process built here shares the account's Stripe budget with the others on its database.
    stripeAccount: parts.stripeAccount ?? stripeAccountOf(config),
    onError: (effectId, error) => app?.log.error({ err: error, effectId }, 'one item failed in a sweep; the others went on'),
    log,
    channels,
    outboxLog: {
      warn: (fields, message) => app?.log.warn(fields, message),
      error: (fields, message) => app?.log.error(fields, message),
    },
  });
  const { views } = services;
  const sessions = new SessionStore({
    idleMs: config.sessions.idleMs,
    absoluteMs: config.sessions.absoluteMs,
    wallMs: () => clock.wallMs(),
    store: storage.sessions,
  });
  let ready = false;
  // Held only while the check runs behind a server that listens already (the derived tables rebuilt).
  const startGate = new StartGate();
  const built = await buildApp({
    services,
    sessions,
    webhookSecrets: parts.webhookSecrets,
    ready: () => ready,
    startGate,
    logger: parts.logger ?? false,
    ...(parts.webDist === undefined ? {} : { webDist: parts.webDist }),
    ...(parts.secureCookies === undefined ? {} : { secureCookies: parts.secureCookies }),
    ...(parts.listenHost === undefined ? {} : { listenHost: parts.listenHost }),
    ...(parts.refundsInFlightMax === undefined ? {} : { refundsInFlightMax: parts.refundsInFlightMax }),
    ...(parts.refundsWorkingMax === undefined ? {} : { refundsWorkingMax: parts.refundsWorkingMax }),
  });
  app = built;
  const reloader = new ConfigReloader({ services, sessions, sha256: parts.configSha256 ?? '', log: built.log });
  const stops: Array<() => Promise<void> | void> = [];
  /** True once start-up's check held the journal: only then is its epoch known and a checkpoint signed at stop. */
  let checked = false;
  const checkpointer = new Checkpointer({
    store: services.checkpoints,
    views,
    key: services.signingKey,
    mirrors: config.integrity.mirrors.map(openMirror),
    config: config.integrity,
    wallMs: () => clock.wallMs(),
    log: built.log,
    databaseFile: storage.location,
  });
  return {
    app: built,
    services,
    reload: (load) => reloader.reload(load),
    async check(options = {}) {
      const beforeReplay = async (found: TablesFound) => {
        if (found.reason !== null) startGate.hold();
        await options.beforeReplay?.(found);
      };
      try {
        const outcome = await checkJournalAtStart({ storage, journal: services.journal, views, log: built.log, beforeReplay });
        await checkpointer.checkAtStart(outcome);
        // A first checkpoint of what start-up verified, when the journal grew since the last one.
        await checkpointer.sign(true);
        checked = true;
        startGate.open();
        return outcome;
      } catch (error) {
        startGate.refuse();
        throw error;
      }
    },
    async start() {
      // The budget's share of the account first: start-up recovery already calls Stripe.
      services.budget.start();
      try {
        // The config first, before recovery writes anything: a file edited while the server was
        // down is journaled as a reload is, and approvals it took away lapse (server/app/reload.ts).
        if (parts.configSha256 !== undefined) await reloader.atStart();
        await startServices(services);
      } catch (error) {
        // A corrupt journal does not stop the process: it stays up, logged once by the views,
        // answering 503 journal_unavailable, so the operator sees why until they restart it.
        if (!views.report(error)) throw error;
        return;
      }
      ready = true;
      stops.push(() => services.turns.stop());
      // From here on, each refund's change of status is one info line (what stood before is not told again).
      stops.push(await watchRefundOutcomes(views, built.log, services.refundOutcomes));
      // Current facts follow the inbox from now on: arrivals and webhooks are read in every build,
      // the 10-minute background rereads only with the background on.
      const background = parts.background !== false;
      stops.push(() => services.currentFacts.stop());
      await services.currentFacts.start({ background });
      if (!background) return;
      // A corrupt journal met by background work is the views' to log (once); anything else is logged here.
      const failed = (level: 'error' | 'warn', what: string) => (effectId: string | null, error: unknown) => {
        if (!views.report(error)) built.log[level]({ err: error, effectId }, what);
      };
      stops.push(startTicker(services, (error) => failed('error', 'ticker pass failed')(null, error)));
      views.startPolling(JOURNAL_POLL_MS);
      stops.push(() => views.stopPolling());
      checkpointer.start();
      stops.push(() => checkpointer.stop());
      if (config.integrity.wholePassMs !== null) stops.push(startWholePass(views, checkpointer, services.wholePass, config.integrity.wholePassMs, built.log));
      // Refunds whose webhook never came are looked up, a few at a time, well under Stripe's rate limit.
      const reconciler = new Reconciler({
        journal: services.journal,
        target: services.target,
        candidates: async () => (await views.current()).inbox.unconfirmedSent(),
        nowMs: () => clock.wallMs(),
        onConfirmed: () => views.refresh(),
        onError: failed('warn', 'confirmation lookup failed; tried again later'),
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
    },
    async close() {
      const startMs = performance.now();
      // Every request taken is answered first, while everything behind the routes still works.
      await built.gracefulStop.drain();
      // Background work is waited for only while the stop keeps within its bound: a call to Stripe
      // with no answer (its own timeout is 30 s) is left to end with the process, not waited for
      // until systemd kills it at TimeoutStopSec=30 with no last checkpoint.
      const stopByMs = startMs + STOP_ANSWER_MS - STOP_CLOSE_MARGIN_MS;
      for (const stop of stops.splice(0).reverse()) {
        if (!(await finishedBy(stop(), stopByMs))) built.log.warn('background work did not stop in time; it ends with the process');
      }
      await built.close();
      // Every request has been answered: the last checkpoint covers all this process verified.
      if (checked) await checkpointer.signAtStop();
      // Last, once nothing of this process calls Stripe any more: a request still answering could wait on it.
      await services.budget.stop();
      ownChannels?.close();
    },
  };
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

/** What the stop keeps, after the background work, for closing the app, the last checkpoint and exiting. */
const STOP_CLOSE_MARGIN_MS = 2_000;

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

/**
 * The background pass, on the application clock: move overdue items up their chain, settle what
 * a crash left in flight once its claim has lapsed, and send approvals whose send did not finish.
 * One pass at a time; each step failing does not stop the next.
 */
export function startTicker(services: Services, onError: (error: unknown) => void): () => void {
  let running = false;
  const pass = async () => {
    // Nothing is swept from a journal that failed a check: the operator has to act first.
    if (running || services.views.unavailable) return;
    running = true;
    try {
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
