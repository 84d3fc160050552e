import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type Stripe from 'stripe';
import type { Storage } from '../../db/port/storage.ts';
import type { AppClock } from './clock.ts';
import type { InterlockConfig } from '../config/schema.ts';
import type { KillHook } from '../gate/kill-points.ts';
import { buildApp } from '../http/app.ts';
import { StartGate } from '../http/journal-scope.ts';
import { createChannels } from '../outbox/channels.ts';
import type { FactsScheduler } from '../facts/current-facts.ts';
import type { Channels } from '../outbox/types.ts';
import type { SigningKey } from '../receipts/keys.ts';
import { SessionStore } from '../sessions/sessions.ts';
import { createServices, type Services, startServices, stripeAccountOf } from './services.ts';
import type { ViewsLog } from '../views/views.ts';
import type { TablesFound } from '../views/writer.ts';
import { checkJournalAtStart, type StartCheckOutcome, type StartCheckParts } from '../integrity/start-check.ts';
import { Checkpointer } from '../integrity/checkpoints.ts';
import { openMirror } from '../integrity/mirrors.ts';
import { watchRefundOutcomes } from '../metrics/refund-outcomes.ts';
import type { LoadedConfig } from '../config/load.ts';
import { ConfigReloader, type ReloadOutcome } from './reload.ts';
import { startBackground } from './background.ts';
import { type Stop, stopWithinBound } from './stop.ts';

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
   * Start-up recovery (services.ts `startServices`) and the background work, then `/readyz`
   * answers ready. Listening is the caller's business, before or after.
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
  const stops: Stop[] = [];
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
    lease: { hold: () => services.workLeases.hold('checkpoint-signing'), holds: () => services.workLeases.holds('checkpoint-signing') },
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
      stops.push(() => services.turns.stop());
      // From here on, each refund's change of status is one info line (what stood before is not told again).
      stops.push(await watchRefundOutcomes(views, built.log, services.refundOutcomes));
      // Current facts follow the inbox from now on: arrivals and webhooks are read in every build,
      // the 10-minute background rereads only with the background on.
      const background = parts.background !== false;
      stops.push(() => services.currentFacts.stop());
      await services.currentFacts.start({ background });
      if (background) await startBackground({ services, config, clock, checkpointer, log: built.log, reconcileMs: parts.reconcileMs }, stops);
      // Ready once every part runs: these steps read the journal, and a database lost meanwhile
      // ends the start (the process exits, to be started again) before anyone was told it was ready.
      ready = true;
    },
    async close() {
      const startMs = performance.now();
      // Every request taken is answered first, while everything behind the routes still works.
      await built.gracefulStop.drain();
      await stopWithinBound(stops.splice(0), startMs, built.log);
      // Leases taken by work started outside the background (demo traffic) are given back too.
      await services.workLeases.stop();
      await built.close();
      // Every request has been answered: the last checkpoint covers all this process verified.
      if (checked) await checkpointer.signAtStop();
      // Last, once nothing of this process calls Stripe any more: a request still answering could wait on it.
      await services.budget.stop();
      ownChannels?.close();
    },
  };
}
