import type { DerivedTables } from '../../db/port/derived.ts';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance, FastifyServerOptions, LightMyRequestResponse } from 'fastify';
import { openStorage } from '../../db/sqlite-storage.ts';
import { AppClock } from '../../server/app/clock.ts';
import { DEFAULT_CONFIG_PATH, parseConfig } from '../../server/config/load.ts';
import type { InterlockConfig } from '../../server/config/schema.ts';
import { buildInterlock, type Interlock } from '../../server/app/interlock.ts';
import type { FactsScheduler } from '../../server/facts/current-facts.ts';
import type { Channels } from '../../server/outbox/types.ts';
import { type Sandbox, startSandbox } from '../../server/sandbox/index.ts';
import type { Services } from '../../server/app/services.ts';

/** The demo agent token from interlock.yaml (local demo only). */
export const AGENT_TOKEN = 'sk_agent_demo_support_bot';
export const DEMO_PASSWORD = 'interlock-demo';
/** The webhook endpoint secret a world's app accepts. */
export const WEBHOOK_SECRET = 'whsec_test_app';

/** The whole server in process: a temp SQLite journal, an in-memory sandbox, the app for `inject`. */
export interface AppWorld {
  app: FastifyInstance;
  services: Services;
  sandbox: Sandbox;
  clock: AppClock;
  dir: string;
  agent(method: 'GET' | 'POST', url: string, body?: unknown, token?: string): Promise<LightMyRequestResponse>;
  login(name: string): Promise<{ cookie: string; csrf: string }>;
  as(who: { cookie: string; csrf: string }, method: string, url: string, body?: unknown): Promise<LightMyRequestResponse>;
  payment(amountCents: number): Promise<string>;
  entryCount(): Promise<number>;
  /** Reload the config as SIGHUP does, from what `load` reads (server/app/reload.ts). */
  reload: Interlock['reload'];
  close(): Promise<void>;
}

/** Rate limits far above any test's traffic, for tests about something other than Stripe's pace. */
export const UNPACED_STRIPE: InterlockConfig['stripe'] = { mode: 'sandbox', rateLimits: { share: 1, globalPerSecond: 10_000, endpointPerSecond: 10_000 } };

export function testConfig(overrides: Partial<InterlockConfig> = {}): InterlockConfig {
  const config = parseConfig(readFileSync(DEFAULT_CONFIG_PATH, 'utf8'), 'interlock.yaml');
  // Tests about Stripe's pace say so with `stripe`; the others are not slowed by it.
  return { ...config, testMode: true, stripe: UNPACED_STRIPE, ...overrides };
}

/** How to build a world; a second world on the same `dir`, `clock` and `sandbox` is a restart. */
export interface AppWorldOptions {
  config?: InterlockConfig;
  /** The SHA-256 of the file `config` was loaded from, for a test that reloads it. */
  configSha256?: string;
  /** The data folder (the journal, the signing key); a given one is not removed on close. */
  dir?: string;
  clock?: AppClock;
  /** A sandbox shared with another world; a given one is not closed on close. */
  sandbox?: Sandbox;
  refundsInFlightMax?: number;
  refundsWorkingMax?: number;
  logger?: FastifyServerOptions['logger'];
  webDist?: string;
  /** Called with the services before start-up recovery runs, e.g. to count what it reads. */
  beforeStart?: (services: Services) => void;
  /** The current-facts cache's clock and waits (default: real ones); `FAST_FORWARD` for tests not about its pace. */
  factsScheduler?: FactsScheduler;
  /** How long a send tries a busy Stripe again before it lets go (default 60 s). */
  busyRetryMs?: number;
  /** How messages travel (default: the channels the config names). */
  channels?: Channels;
  /** Run the background work as `npm start` does (default: off; tests move the clock and run the sweeps themselves). */
  background?: boolean;
  /** The views' derived tables, kept across a restart (default: the storage's). */
  derived?: DerivedTables;
}

/**
 * A current-facts clock that jumps over every wait: the cache keeps its order and its spacing
 * (each read still starts 1.5 s of this clock after the last), but no test waits for them.
 */
export function fastForwardScheduler(): FactsScheduler {
  let aheadMs = 0;
  return {
    nowMs: () => Date.now() + aheadMs,
    after(delayMs, task) {
      let cancelled = false;
      setImmediate(() => {
        if (cancelled) return;
        aheadMs += Math.max(0, delayMs);
        task();
      });
      return () => {
        cancelled = true;
      };
    },
  };
}

/**
 * The whole server in process, built by `buildInterlock` as `npm start` builds it, with no
 * background work: tests move the clock and run the sweeps themselves.
 */
export async function buildAppWorld(options: AppWorldOptions = {}): Promise<AppWorld> {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'interlock-app-'));
  const clock = options.clock ?? new AppClock();
  const sandbox = options.sandbox ?? (await startSandbox({ clockMs: () => clock.wallMs() }));
  const opened = await openStorage({ file: join(dir, 'interlock.sqlite') });
  const storage = options.derived === undefined ? opened : Object.assign(opened, { derived: options.derived });
  const { app, services, start, close, reload } = await buildInterlock({
    config: options.config ?? testConfig(),
    clock,
    storage,
    dataDir: dir,
    stripe: sandbox.stripe(),
    sandbox: true,
    webhookSecrets: [WEBHOOK_SECRET],
    logger: options.logger ?? false,
    webDist: options.webDist ?? join(dir, 'no-web'),
    refundsInFlightMax: options.refundsInFlightMax,
    refundsWorkingMax: options.refundsWorkingMax,
    background: options.background ?? false,
    factsScheduler: options.factsScheduler,
    busyRetryMs: options.busyRetryMs,
    channels: options.channels,
    configSha256: options.configSha256,
  });
  options.beforeStart?.(services);
  await start();
  const world: AppWorld = {
    app,
    services,
    sandbox,
    clock,
    dir,
    agent: (method, url, body, token = AGENT_TOKEN) =>
      app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(body === undefined ? {} : { payload: body as object }) }),
    async login(name) {
      const response = await app.inject({ method: 'POST', url: '/api/session', payload: { name, password: DEMO_PASSWORD } });
      if (response.statusCode !== 200) throw new Error(`login ${name}: ${response.body}`);
      const cookie = String(response.headers['set-cookie']).split(';')[0]!;
      return { cookie, csrf: response.json().csrf_token };
    },
    as: (who, method, url, body) =>
      app.inject({
        method: method as 'GET',
        url,
        headers: { cookie: who.cookie, 'x-csrf-token': who.csrf },
        ...(body === undefined ? {} : { payload: body as object }),
      }),
    payment: async (amountCents) => (await sandbox.createPaymentIntent(amountCents)).id,
    entryCount: async () => (await services.journal.scan(0, 1_000_000)).length,
    reload,
    async close() {
      await close();
      if (!options.sandbox) await sandbox.close();
      await storage.close();
      if (!options.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
  return world;
}
