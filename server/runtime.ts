import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { type OpenDatabase, openDatabase } from '../db/open.ts';
import { limits } from '../shared/limits.ts';
import { AppClock } from './clock.ts';
import { clockFile, TEST_CLOCK_FILE } from './clock-file.ts';
import { loadConfigFile } from './config/load.ts';
import { decideDemoTraffic } from './demo/switch.ts';
import { type DemoTraffic, startDemoTraffic } from './demo/traffic.ts';
import { EnvError, type InterlockEnv } from './env.ts';
import { killHookFromEnv } from './gate/kill-points.ts';
import { buildInterlock } from './interlock.ts';
import { JournalDamagedError, unreadableDatabaseDamage } from './integrity/damage.ts';
import { resolveSigningKey, SIGNING_KEY_WARNING_MESSAGES } from './receipts/key-file.ts';
import { type Sandbox, startSandbox } from './sandbox/index.ts';
import { type Services, stripeAccountOf } from './services.ts';
import type { ReloadOutcome } from './reload.ts';
import { removePidFile, writePidFile, writeReloadAnswer } from './reload-files.ts';
import { createStripeClient } from './targets/stripe-refunds.ts';

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

/** How the server reaches Stripe: the embedded sandbox, an external sandbox, or Stripe test mode. */
async function connectStripe(env: InterlockEnv, mode: 'sandbox' | 'test', webhookUrl: string) {
  if (mode === 'test') {
    if (env.stripeSecretKey === null) throw new EnvError('STRIPE_SECRET_KEY must be set when the config says stripe.mode: test');
    if (env.stripeWebhookSecrets.length === 0) throw new EnvError('STRIPE_WEBHOOK_SECRETS must list a whsec_... secret when the config says stripe.mode: test');
    return { stripe: createStripeClient(env.stripeSecretKey), sandbox: null, secrets: env.stripeWebhookSecrets, note: 'Stripe test mode', sandboxUrl: undefined };
  }
  const secret = `whsec_${randomBytes(24).toString('hex')}`;
  if (env.stripeSandboxUrl) {
    const url = env.stripeSandboxUrl;
    const stripe = createStripeClient('sk_test_interlock_sandbox', { host: url.hostname, port: Number(url.port || 80), protocol: 'http' });
    await fetch(new URL('/_sandbox/webhook', url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url: webhookUrl, secret }) });
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

/** Open the journal's database; a file SQLite cannot read is journal damage, told in one line like any other. */
function openJournalDatabase(file: string): OpenDatabase {
  try {
    return openDatabase(file);
  } catch (error) {
    throw unreadableDatabaseDamage(error, file) ?? error;
  }
}

/**
 * Start Interlock from the parsed environment: config, data folder, Stripe, the app (built by
 * `buildInterlock`, as the tests build it), listen, then recovery. `/readyz` answers ready only
 * once recovery after start has finished.
 */
export async function startInterlock(env: InterlockEnv): Promise<Running> {
  const loaded = loadConfigFile(env.configPath, env.secrets);
  const { config } = loaded;
  const demo = decideDemoTraffic({
    demo: env.demo,
    sandboxDemo: env.sandboxDemo,
    testMode: config.testMode,
    stripeMode: config.stripe.mode,
    embeddedSandbox: env.stripeSandboxUrl === null,
  });
  if (demo.run === 'refused') throw new EnvError(demo.message);
  mkdirSync(env.dataDir, { recursive: true });
  // Read before anything is opened or started, so a key that cannot be used stops the start at once.
  const signing = resolveSigningKey(env);
  // A test clock moved by hand goes on from where it was (a bad file stops the start here); a production clock is never moved.
  const clock = config.testMode ? new AppClock(Date.now, clockFile(join(env.dataDir, TEST_CLOCK_FILE))) : new AppClock();
  const database = openJournalDatabase(env.dbPath);
  const stripe = await connectStripe(env, config.stripe.mode, `http://${env.host}:${env.port}/webhooks/stripe`);
  const interlock = await buildInterlock({
    config,
    clock,
    database,
    dataDir: env.dataDir,
    signingKey: signing.key,
    stripe: stripe.stripe,
    sandbox: config.stripe.mode === 'sandbox',
    webhookSecrets: stripe.secrets,
    logger: env.logLevel === 'silent' ? false : { level: env.logLevel },
    listenHost: env.host,
    killHook: killHookFromEnv(env.killAt.join(',')),
    claimTtlMs: env.claimTtlMs ?? undefined,
    reconcileMs: env.reconcileMs,
    // Processes on one database share a Stripe budget when they reach the same Stripe.
    stripeAccount: stripeAccountOf(config, stripe.sandboxUrl),
    configSha256: loaded.sha256,
  });
  const { app, services } = interlock;
  for (const code of signing.warnings) app.log.warn({ code, path: signing.path, source: signing.source }, SIGNING_KEY_WARNING_MESSAGES[code]);
  try {
    await interlock.check();
  } catch (caught) {
    const error = unreadableDatabaseDamage(caught, database.file) ?? caught;
    if (error instanceof JournalDamagedError) {
      app.log.fatal({ code: error.code, seq: error.site?.seq ?? null, effectId: error.site?.effectId ?? null }, error.message);
      await interlock.close();
      await stripe.sandbox?.close();
      database.close();
    }
    throw error;
  }
  const address = await app.listen({ host: env.host, port: env.port, backlog: limits.listenBacklog });
  app.log.info(`Interlock on ${address}; refunds go to ${stripe.note}`);
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
    url: address,
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
      database.close();
    },
  };
}
