import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type Stripe from 'stripe';
import { openDatabase } from '../db/open.ts';
import { SqliteSessions } from '../db/session-store.ts';
import { AppClock } from './clock.ts';
import { loadConfig } from './config/load.ts';
import { Reconciler } from './confirm/reconciler.ts';
import { killHookFromEnv } from './gate/kill-points.ts';
import { buildApp } from './http/app.ts';
import { SessionStore } from './http/sessions.ts';
import { type Sandbox, startSandbox } from './sandbox/index.ts';
import { EnvError, type InterlockEnv } from './env.ts';
import { createServices, recoverInFlight, type Services, startServices } from './services.ts';
import { createStripeClient } from './targets/stripe-refunds.ts';

/** A running Interlock: the listening app, its services, and how to stop it. */
export interface Running {
  app: FastifyInstance;
  services: Services;
  url: string;
  sandbox: Sandbox | null;
  close(): Promise<void>;
}

/** Demo payments made at the first start of an empty sandbox, so there is something to refund. */
const DEMO_PAYMENTS_CENTS = [10_000, 25_000, 4_000] as const;

/** How the server reaches Stripe: the embedded sandbox, an external sandbox, or Stripe test mode. */
async function connectStripe(env: InterlockEnv, mode: 'sandbox' | 'test', webhookUrl: string) {
  if (mode === 'test') {
    if (env.stripeSecretKey === null) throw new EnvError('STRIPE_SECRET_KEY must be set when the config says stripe.mode: test');
    if (env.stripeWebhookSecrets.length === 0) throw new EnvError('STRIPE_WEBHOOK_SECRETS must list a whsec_... secret when the config says stripe.mode: test');
    return { stripe: createStripeClient(env.stripeSecretKey), sandbox: null, secrets: env.stripeWebhookSecrets, note: 'Stripe test mode' };
  }
  const secret = `whsec_${randomBytes(24).toString('hex')}`;
  if (env.stripeSandboxUrl) {
    const url = env.stripeSandboxUrl;
    const stripe = createStripeClient('sk_test_interlock_sandbox', { host: url.hostname, port: Number(url.port || 80), protocol: 'http' });
    await fetch(new URL('/_sandbox/webhook', url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url: webhookUrl, secret }) });
    return { stripe, sandbox: null, secrets: [secret], note: `the Stripe sandbox at ${url.origin}` };
  }
  const sandbox = await startSandbox({
    port: env.sandboxPort,
    file: join(env.dataDir, 'sandbox.sqlite'),
    webhook: { url: webhookUrl, secret },
  });
  return { stripe: sandbox.stripe() as Stripe, sandbox, secrets: [secret], note: `the embedded Stripe sandbox at ${sandbox.url} (no real money)` };
}

/**
 * Start Interlock from the environment: config, data folder, Stripe, the app, then recovery.
 * `/readyz` answers ready only once recovery after start has finished.
 */
export async function startInterlock(env: InterlockEnv): Promise<Running> {
  const config = loadConfig(env.configPath);
  const dataDir = env.dataDir;
  mkdirSync(dataDir, { recursive: true });
  const { host, port } = env;
  const database = openDatabase(env.dbPath);
  const clock = new AppClock();
  const stripe = await connectStripe(env, config.stripe.mode, `http://${host}:${port}/webhooks/stripe`);
  const killHook = killHookFromEnv(env.killAt.join(','));
  let ready = false;
  const services = createServices({
    config,
    clock,
    database,
    dataDir,
    stripe: stripe.stripe,
    sandbox: config.stripe.mode === 'sandbox',
    ...(killHook ? { killHook } : {}),
    onError: (effectId, error) => app.log.error({ err: error, effectId }, 'one item failed in a sweep; the others went on'),
  });
  if (env.claimTtlMs !== null) (services.gate as { claimTtlMs: number }).claimTtlMs = env.claimTtlMs;
  const sessions = new SessionStore({
    idleMs: config.sessions.idleMs,
    absoluteMs: config.sessions.absoluteMs,
    wallMs: () => clock.wallMs(),
    persist: new SqliteSessions(database.db),
  });
  const app = await buildApp({
    services,
    sessions,
    webhookSecrets: stripe.secrets,
    ready: () => ready,
    logger: env.logLevel === 'silent' ? false : { level: env.logLevel },
  });
  const address = await app.listen({ host, port });
  app.log.info(`Interlock on ${address}; refunds go to ${stripe.note}`);
  if (stripe.sandbox && stripe.sandbox.refunds().length === 0 && env.sandboxDemo) {
    for (const cents of DEMO_PAYMENTS_CENTS) {
      const intent = await stripe.sandbox.createPaymentIntent(cents);
      app.log.info(`sandbox demo payment ${intent.id} of $${cents / 100} ready to refund`);
    }
  }
  await startServices(services);
  ready = true;
  const stopTicker = startTicker(services, (error) => app.log.error({ err: error }, 'ticker pass failed'));
  services.follower.start(250);
  // Refunds whose webhook never came are looked up, a few at a time, well under Stripe's rate limit.
  const reconciler = new Reconciler({
    journal: services.journal,
    target: services.target,
    candidates: () => services.projection.unconfirmedSent(),
    nowMs: () => clock.wallMs(),
    onConfirmed: () => void services.follower.catchUp(),
    onError: (effectId, error) => app.log.warn({ err: error, effectId }, 'confirmation lookup failed; tried again later'),
  });
  reconciler.start(env.reconcileMs);
  return {
    app,
    services,
    url: address,
    sandbox: stripe.sandbox,
    async close() {
      stopTicker();
      await reconciler.stop();
      services.follower.stop();
      await app.close();
      await stripe.sandbox?.close();
      database.close();
    },
  };
}

/**
 * The background pass, on the application clock: move overdue items up their chain, settle what
 * a crash left in flight once its claim has lapsed, and send approvals whose send did not finish.
 * One pass at a time; each step failing does not stop the next.
 */
export function startTicker(services: Services, onError: (error: unknown) => void): () => void {
  let running = false;
  const pass = async () => {
    if (running) return;
    running = true;
    try {
      for (const step of [
        () => services.inbox.tick(),
        async () => services.inbox.reconcile(await recoverInFlight(services)),
        () => services.inbox.executeApproved(),
      ]) {
        await step().catch(onError);
      }
      await services.follower.catchUp();
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void pass(), services.config.slaTickMs);
  timer.unref();
  return () => clearInterval(timer);
}
