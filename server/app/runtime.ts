import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type Stripe from 'stripe';
import type { Storage } from '../../db/port/storage.ts';
import { openServerStorage } from '../../db/server-storage.ts';
import { limits } from '../../shared/limits.ts';
import { AppClock } from './clock.ts';
import { clockFile, TEST_CLOCK_FILE } from './clock-file.ts';
import { decideLiveGuards, describeFailedGuards, LiveModeError } from '../config/live-guards.ts';
import { loadConfigFile } from '../config/load.ts';
import { holdsPublishedSecret } from '../config/published-secrets.ts';
import type { InterlockConfig, StripeMode } from '../config/schema.ts';
import { decideDemoTraffic } from '../demo/switch.ts';
import { type DemoTraffic, startDemoTraffic } from '../demo/traffic.ts';
import { EnvError, type InterlockEnv, storagePlace } from '../config/env.ts';
import { killHookFromEnv } from '../gate/kill-points.ts';
import { buildInterlock } from './interlock.ts';
import { loggerOptions } from './log-options.ts';
import { JournalDamagedError, unreadableDatabaseDamage } from '../integrity/damage.ts';
import { resolveSigningKey, SIGNING_KEY_WARNING_MESSAGES, signingKeyLocation } from '../receipts/key-file.ts';
import { type Sandbox, startSandbox } from '../sandbox/index.ts';
import { type Services, stripeAccountOf } from './services.ts';
import { INTERLOCK_VERSION } from '../journal/version.ts';
import { describeFailedProbes, probeKey } from '../stripe/key-probes.ts';
import type { ReloadOutcome } from './reload.ts';
import { removePidFile, writePidFile, writeReloadAnswer } from './reload-files.ts';
import { createStripeClient, type StripeEndpoint } from '../targets/stripe-refunds.ts';

/** A running Interlock: the listening app, its services, and how to stop it. */
export interface Running {
  app: FastifyInstance;
  services: Services;
  url: string;
  sandbox: Sandbox | null;
  /**
   * Read the config file again and put it in force if it may be (SIGHUP, `npm run reload`); the
   * answer is logged and written to the data folder for the command to print.
   */
  reload(): Promise<ReloadOutcome>;
  close(): Promise<void>;
}

/** Demo payments made at the first start of an empty sandbox, so there is something to refund. */
const DEMO_PAYMENTS_CENTS = [10_000, 25_000, 4_000] as const;

/** What a start may be given besides the environment: only tests give anything. */
export interface StartOptions {
  /**
   * Where live mode's Stripe is: a test points it at the sandbox answering as live mode would;
   * `npm start` gives nothing, and live mode reaches api.stripe.com.
   */
  liveStripeEndpoint?: StripeEndpoint;
  /** Where the log lines go instead of standard output: a test reads them. */
  logStream?: { write(line: string): void };
}

/** How the server reaches Stripe: the embedded sandbox, an external sandbox, Stripe test mode or Stripe live mode. */
async function connectStripe(env: InterlockEnv, mode: StripeMode, webhookUrl: string, options: StartOptions) {
  if (mode === 'live') {
    if (env.stripeLiveKey === null) throw new EnvError('STRIPE_LIVE_KEY must be set to a restricted key (rk_live_...), or STRIPE_LIVE_KEY_FILE name a file holding one (or the systemd credential stripe-live-key), when the config says stripe.mode: live');
    if (env.stripeLiveWebhookSecrets.length === 0) {
      throw new EnvError('STRIPE_LIVE_WEBHOOK_SECRETS must list the live webhook endpoint\'s whsec_... secret when the config says stripe.mode: live');
    }
    const stripe = createStripeClient(env.stripeLiveKey, options.liveStripeEndpoint ?? {}, { live: true });
    return { stripe, sandbox: null, secrets: env.stripeLiveWebhookSecrets, note: 'Stripe LIVE mode: real money', sandboxUrl: undefined };
  }
  if (mode === 'test') {
    if (env.stripeSecretKey === null) throw new EnvError('STRIPE_SECRET_KEY must be set, or STRIPE_SECRET_KEY_FILE name a file holding the key (or the systemd credential stripe-secret-key), when the config says stripe.mode: test');
    if (env.stripeWebhookSecrets.length === 0) throw new EnvError('STRIPE_WEBHOOK_SECRETS must list a whsec_... secret when the config says stripe.mode: test');
    return { stripe: createStripeClient(env.stripeSecretKey), sandbox: null, secrets: env.stripeWebhookSecrets, note: 'Stripe test mode', sandboxUrl: undefined };
  }
  const secret = `whsec_${randomBytes(24).toString('hex')}`;
  if (env.stripeSandboxUrl) {
    const url = env.stripeSandboxUrl;
    const stripe = createStripeClient('sk_test_interlock_sandbox', { host: url.hostname, port: Number(url.port || 80), protocol: 'http' });
    await registerSandboxWebhook(url, webhookUrl, secret);
    return { stripe, sandbox: null, secrets: [secret], note: `the Stripe sandbox at ${url.origin}`, sandboxUrl: url.origin };
  }
  const sandbox = await startSandbox({
    port: env.sandboxPort,
    file: join(env.dataDir, 'sandbox.sqlite'),
    webhook: { url: webhookUrl, secret },
    rateLimits: env.sandboxRateLimits,
  });
  const limits = env.sandboxRateLimits === 'off' ? 'no rate limits' : `Stripe's ${env.sandboxRateLimits}-mode rate limits`;
  return { stripe: sandbox.stripe(), sandbox, secrets: [secret], note: `the embedded Stripe sandbox at ${sandbox.url} (no real money; ${limits})`, sandboxUrl: sandbox.url };
}

/**
 * Tell a sandbox running elsewhere where to post its webhooks. One that cannot be reached, or
 * refuses, stops the start with one line naming it (an operator's to fix), never a stack trace.
 */
async function registerSandboxWebhook(url: URL, webhookUrl: string, secret: string): Promise<void> {
  let status: number;
  try {
    const answer = await fetch(new URL('/_sandbox/webhook', url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url: webhookUrl, secret }), signal: AbortSignal.timeout(10_000) });
    status = answer.status;
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : error instanceof Error ? error.message : String(error);
    throw new EnvError(`STRIPE_SANDBOX_URL names the Stripe sandbox at ${url.origin}, which cannot be reached (${cause}): start it there first, or unset STRIPE_SANDBOX_URL to run the embedded one`);
  }
  if (status < 200 || status >= 300) throw new EnvError(`STRIPE_SANDBOX_URL names ${url.origin}, which refused to take the webhook's address (HTTP ${status}): is it Interlock's Stripe sandbox?`);
}

/**
 * Live mode starts only when every production guard holds (config/live-guards.ts); otherwise one
 * line names each failed guard. Checked before anything is created or opened, so a receipt key
 * that would be made inside the data folder is never made.
 */
function refuseUnguardedLive(env: InterlockEnv, config: InterlockConfig): void {
  const location = signingKeyLocation(env);
  // A key named outside the data folder may still resolve into it (a link): judged by its real path once read.
  const keyInside = location.source === 'data_dir' || resolveSigningKey(env, { readOnly: true }).warnings.includes('receipt_key_in_data_dir');
  const failed = decideLiveGuards({
    publishedSecretHeld: holdsPublishedSecret(config.people, config.agents),
    publicUrl: config.notifications.publicUrl,
    receiptKeyInDataDir: keyInside,
    testMode: config.testMode,
    demoAsked: env.demo === true,
    sandboxUrlSet: env.stripeSandboxUrl !== null,
  });
  if (failed.length > 0) throw new LiveModeError(describeFailedGuards(failed));
}

/** The live key's permission probes (stripe/key-probes.ts), through the paced client; a key that fails any stops the start. */
async function refuseUnprovedKey(stripe: Stripe, services: Services, app: FastifyInstance): Promise<void> {
  // The budget's share of the account first (starting it again at start-up is harmless): the probes draw on it.
  services.budget.start();
  const results = await probeKey(stripe);
  const refusal = describeFailedProbes(results);
  if (refusal !== null) throw new LiveModeError(refusal);
  app.log.info({ probes: results.map((r) => r.probe.call) }, `LIVE: the restricted key holds every permission Interlock uses (${results.length} probes passed)`);
}

/**
 * Open the storage: the PostgreSQL database of `DATABASE_URL` when it is set, else the SQLite file
 * of `DB_PATH`. A file SQLite cannot read is journal damage, told in one line like any other.
 */
async function openJournalStorage(env: InterlockEnv): Promise<Storage> {
  const place = storagePlace(env);
  if (place.kind === 'postgresql') return openServerStorage(place);
  try {
    return await openServerStorage(place);
  } catch (error) {
    throw unreadableDatabaseDamage(error, place.file) ?? error;
  }
}

/**
 * Start Interlock from the parsed environment: config, data folder, Stripe, the app (built by
 * `buildInterlock`, as the tests build it), listen, then recovery. `/readyz` answers ready only
 * once recovery after start has finished.
 */
export async function startInterlock(env: InterlockEnv, options: StartOptions = {}): Promise<Running> {
  const loaded = loadConfigFile(env.configPath, env.secrets);
  const { config } = loaded;
  const live = config.stripe.mode === 'live';
  if (live) refuseUnguardedLive(env, config);
  const demo = decideDemoTraffic({
    demo: env.demo,
    sandboxDemo: env.sandboxDemo,
    testMode: config.testMode,
    stripeMode: config.stripe.mode,
    embeddedSandbox: env.stripeSandboxUrl === null,
  });
  if (demo.run === 'refused') throw new EnvError(demo.message);
  // A PostgreSQL database is reached first: one that cannot be stops the start with nothing written to the data folder.
  const reached = env.databaseUrl === null ? null : await openJournalStorage(env);
  let signing: ReturnType<typeof resolveSigningKey>;
  let clock: AppClock;
  try {
    mkdirSync(env.dataDir, { recursive: true });
    // Read before anything else is opened or started, so a key that cannot be used stops the start at once.
    signing = resolveSigningKey(env);
    // A test clock moved by hand goes on from where it was (a bad file stops the start here); a production clock is never moved.
    clock = config.testMode ? new AppClock(Date.now, clockFile(join(env.dataDir, TEST_CLOCK_FILE))) : new AppClock();
  } catch (error) {
    await reached?.close();
    throw error;
  }
  const storage = reached ?? (await openJournalStorage(env));
  const stripe = await connectStripe(env, config.stripe.mode, `http://${env.host}:${env.port}/webhooks/stripe`, options);
  const interlock = await buildInterlock({
    config,
    clock,
    storage,
    dataDir: env.dataDir,
    signingKey: signing.key,
    stripe: stripe.stripe,
    sandbox: config.stripe.mode === 'sandbox',
    webhookSecrets: stripe.secrets,
    logger: options.logStream && env.logLevel !== 'silent' ? { level: env.logLevel, stream: options.logStream } : loggerOptions(env.logLevel, process.stdout.isTTY === true),
    listenHost: env.host,
    killHook: killHookFromEnv(env.killAt.join(',')),
    claimTtlMs: env.claimTtlMs ?? undefined,
    reconcileMs: env.reconcileMs,
    // Processes on one database share a Stripe budget when they reach the same Stripe.
    stripeAccount: stripeAccountOf(config, stripe.sandboxUrl),
    configSha256: loaded.sha256,
  });
  const { app, services } = interlock;
  // The first line of the log names the version that runs, and the Node under it.
  app.log.info({ version: INTERLOCK_VERSION, node: process.version }, `Interlock ${INTERLOCK_VERSION} starting on Node ${process.version}`);
  for (const code of signing.warnings) app.log.warn({ code, path: signing.path, source: signing.source }, SIGNING_KEY_WARNING_MESSAGES[code]);
  let address: string | null = null;
  const listen = async (): Promise<string> => {
    address = await app.listen({ host: env.host, port: env.port, backlog: limits.listenBacklog });
    app.log.info(`Interlock on ${address}; refunds go to ${stripe.note}`);
    return address;
  };
  try {
    if (live) await refuseUnprovedKey(stripe.stripe, services, app);
    // Derived tables to rebuild: the server listens first, `/readyz` telling the rebuild's progress.
    await interlock.check({ beforeReplay: async ({ reason }) => void (reason === null ? undefined : await listen()) });
  } catch (caught) {
    const error = unreadableDatabaseDamage(caught, storage.location) ?? caught;
    if (error instanceof JournalDamagedError || error instanceof LiveModeError) {
      if (error instanceof JournalDamagedError) app.log.fatal({ code: error.code, seq: error.site?.seq ?? null, effectId: error.site?.effectId ?? null }, error.message);
      await interlock.close();
      await stripe.sandbox?.close();
      await storage.close();
    }
    throw error;
  }
  const url = address ?? (await listen());
  if (live) app.log.warn({ mode: 'live' }, 'LIVE: refunds Interlock sends move real money (stripe.mode: live; every production guard held and the key passed its probes)');
  if (stripe.sandbox && stripe.sandbox.refunds().length === 0 && env.sandboxDemo) {
    for (const cents of DEMO_PAYMENTS_CENTS) {
      const intent = await stripe.sandbox.createPaymentIntent(cents);
      app.log.info(`sandbox demo payment ${intent.id} of $${cents / 100} ready to refund`);
    }
  }
  await interlock.start();
  // Started after recovery, and never awaited: its first request comes a few seconds later.
  let traffic: DemoTraffic | null = null;
  if (stripe.sandbox && demo.run === 'on') {
    traffic = startDemoTraffic({ services, sandbox: stripe.sandbox, log: app.log });
  } else if (demo.run === 'off' && env.demo === true) app.log.info(`demo traffic is off: ${demo.why}`);
  writePidFile(env.dataDir);
  let reloads = 0;
  return {
    app,
    services,
    url,
    sandbox: stripe.sandbox,
    async reload() {
      const outcome = await interlock.reload(() => loadConfigFile(env.configPath, env.secrets));
      reloads += 1;
      writeReloadAnswer(env.dataDir, { ...outcome, pid: process.pid, n: reloads, at: new Date().toISOString() });
      return outcome;
    },
    async close() {
      removePidFile(env.dataDir);
      await traffic?.stop();
      await interlock.close();
      await stripe.sandbox?.close();
      await storage.close();
    },
  };
}
