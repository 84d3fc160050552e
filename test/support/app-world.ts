import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { openDatabase } from '../../db/open.ts';
import { AppClock } from '../../server/clock.ts';
import { DEFAULT_CONFIG_PATH, parseConfig } from '../../server/config/load.ts';
import type { InterlockConfig } from '../../server/config/schema.ts';
import { buildApp } from '../../server/http/app.ts';
import { SessionStore } from '../../server/http/sessions.ts';
import { type Sandbox, startSandbox } from '../../server/sandbox/index.ts';
import { createServices, type Services, startServices } from '../../server/services.ts';

/** The demo agent token from interlock.yaml (local demo only). */
export const AGENT_TOKEN = 'sk_agent_demo_support_bot';
export const DEMO_PASSWORD = 'interlock-demo';

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
  close(): Promise<void>;
}

export function testConfig(overrides: Partial<InterlockConfig> = {}): InterlockConfig {
  const config = parseConfig(readFileSync(DEFAULT_CONFIG_PATH, 'utf8'), 'interlock.yaml');
  return { ...config, testMode: true, ...overrides };
}

export async function buildAppWorld(options: { config?: InterlockConfig; dir?: string; clock?: AppClock; refundsInFlightMax?: number } = {}): Promise<AppWorld> {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'interlock-app-'));
  const clock = options.clock ?? new AppClock();
  const sandbox = await startSandbox({ clockMs: () => clock.wallMs() });
  const database = openDatabase(join(dir, 'interlock.sqlite'));
  const config = options.config ?? testConfig();
  const services = createServices({ config, clock, database, dataDir: dir, stripe: sandbox.stripe(), sandbox: true });
  const sessions = new SessionStore({ idleMs: config.sessions.idleMs, absoluteMs: config.sessions.absoluteMs, wallMs: () => clock.wallMs() });
  const app = await buildApp({ services, sessions, webhookSecrets: ['whsec_test_app'], ready: () => true, webDist: join(dir, 'no-web'), ...(options.refundsInFlightMax === undefined ? {} : { refundsInFlightMax: options.refundsInFlightMax }) });
  await startServices(services);
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
    async close() {
      await app.close();
      await sandbox.close();
      database.close();
      if (!options.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
  return world;
}
