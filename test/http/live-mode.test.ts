
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Stripe from 'stripe';
import { afterEach, describe, expect, it } from 'vitest';
import { LiveModeError } from '../../server/config/live-guards.ts';
import { ConfigError, DEFAULT_CONFIG_PATH } from '../../server/config/load.ts';
import { signWebhook } from '../../server/confirm/signature.ts';
import { EnvError, parseEnv } from '../../server/config/env.ts';
import { SIGNING_KEY_FILE } from '../../server/receipts/keys.ts';
import { type Running, startInterlock } from '../../server/app/runtime.ts';
import { type Sandbox, startSandbox } from '../../server/sandbox/index.ts';
import { createStripeClient, LiveKeyError } from '../../server/stripe/client.ts';
import { buildAppWorld, testConfig, UNPACED_STRIPE, WEBHOOK_SECRET } from '../support/app-world.ts';
import { liveFolder as writeLiveFolder } from '../support/live-folder.ts';
import { freePort, runServerToExit, } from '../support/server-process.ts';

// Live mode against the sandbox answering as Stripe live mode would: a start that holds every
// production guard and passes its key probes, and a start refused for each guard, a 403 probe and
// a full secret key.

const LIVE_KEY = 'rk_live_interlock_start';
const LIVE_SECRET = 'whsec_live_interlock_start';
const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** A folder with a data folder, a receipt key outside it and a live config (own secrets, https public_url). */
function liveFolder(configEdit?: (text: string) => string): { dir: string; env: Record<string, string> } {
  const folder = writeLiveFolder({ liveKey: LIVE_KEY, webhookSecrets: LIVE_SECRET, ...(configEdit ? { configEdit } : {}) });
  cleanup.push(() => rmSync(folder.dir, { recursive: true, force: true }));
  return { dir: folder.dir, env: { PORT: '0', LOG_LEVEL: 'silent', ...folder.env } };
}

async function liveSandbox(): Promise<Sandbox> {
  const sandbox = await startSandbox({ mode: 'live', rateLimits: 'live' });
  cleanup.push(() => sandbox.close());
  return sandbox;
}

async function startLive(env: Record<string, string>, sandbox: Sandbox, logStream?: { write(line: string): void }): Promise<Running> {
  const endpoint = { host: sandbox.host, port: sandbox.port, protocol: 'http' as const };
  const running = await startInterlock(parseEnv(env), { liveStripeEndpoint: endpoint, ...(logStream ? { logStream } : {}) });
  cleanup.push(() => running.close());
  return running;
}

/** Sign and post an event as Stripe would, to the running server. */
async function postEvent(url: string, secret: string, event: Record<string, unknown>): Promise<Response> {
  const body = JSON.stringify({ id: 'evt_live_1', object: 'event', type: 'refund.updated', data: { object: { id: 're_x', object: 'refund' } }, ...event });
  const header = signWebhook(body, secret, Math.floor(Date.now() / 1000));
  return fetch(`${url}/webhooks/stripe`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': header }, body });
}

describe('a start in live mode', () => {
  it('holds every guard, probes the key through the Stripe budget, logs LIVE, and takes only live events on the SDK version', async () => {
    const sandbox = await liveSandbox();
    const { env } = liveFolder();
    const lines: string[] = [];
    const running = await startLive({ ...env, LOG_LEVEL: 'info' }, sandbox, { write: (line) => void lines.push(line) });
    const counts = sandbox.requestCounts();
    expect(counts.total).toMatchObject({ through: 7, forbidden: 0, unauthorized: 0 });
    expect(Object.keys(counts.endpoints).sort()).toEqual([
      'GET /v1/charges',
      'GET /v1/customers',
      'GET /v1/disputes',
      'GET /v1/payment_intents',
      'GET /v1/payment_methods/:id',
      'GET /v1/refunds',
      'POST /v1/refunds',
    ]);
    // The probes drew on the budget, at live mode's capacity (80% of 100 a second).
    const calls = running.services.budget.counts.calls;
    expect(Object.values(calls).reduce((sum, n) => sum + n, 0)).toBe(7);
    expect(running.services.budget.capacity.globalPerWindow).toBe(80);
    const messages = lines.map((line) => JSON.parse(line).msg as string);
    expect(messages.some((m) => m.startsWith('LIVE: refunds Interlock sends move real money'))).toBe(true);
    expect(messages.some((m) => m === 'LIVE: the restricted key holds every permission Interlock uses (7 probes passed)')).toBe(true);
    expect(messages.some((m) => m.includes('refunds go to Stripe LIVE mode: real money'))).toBe(true);

    const live = { livemode: true, api_version: Stripe.API_VERSION };
    expect((await postEvent(running.url, LIVE_SECRET, live)).status).toBe(200);
    expect((await postEvent(running.url, WEBHOOK_SECRET, live)).status).toBe(400);
    const testEvent = await postEvent(running.url, LIVE_SECRET, { ...live, livemode: false });
    expect(testEvent.status).toBe(400);
    expect((await testEvent.json()).error.message).toBe('only live-mode events are accepted in live mode');
    const otherVersion = await postEvent(running.url, LIVE_SECRET, { ...live, api_version: '2020-08-27' });
    expect(otherVersion.status).toBe(400);
    expect((await otherVersion.json()).error.message).toMatch(/^the event's API version is not .+; set the webhook endpoint's API version to it$/);
  });

  it('fails closed naming each failed guard in one line, before a receipt key is made in the data folder', async () => {
    const sandbox = await liveSandbox();
    const { env } = liveFolder((text) => text.replace(/\npublic_url: .*\n$/, '\n').replace(/^test_mode: false$/m, 'test_mode: true'));
    const { RECEIPT_KEY_PATH: _key, ...keyInDataDir } = env;
    const start = startLive({ ...keyInDataDir, INTERLOCK_DEMO: '1', STRIPE_SANDBOX_URL: sandbox.url }, sandbox);
    await expect(start).rejects.toThrow(LiveModeError);
    await expect(start).rejects.toThrow(
      /^stripe\.mode: live needs every production guard, and 5 failed: https_public_url \(.+\); receipt_key_outside_data_dir \(.+\); no_test_mode \(.+\); no_demo_traffic \(.+\); no_sandbox \(.+\)$/,
    );
    expect(existsSync(join(env.DATA_DIR!, SIGNING_KEY_FILE))).toBe(false);
    expect(sandbox.requestCounts().total.through).toBe(0);
  });

  it('fails when a probe answers 403, naming the missing permission', async () => {
    const sandbox = await liveSandbox();
    sandbox.configure({ deniedPermissions: ['rak_refund_write', 'rak_dispute_read'] });
    const start = startLive(liveFolder().env, sandbox);
    await expect(start).rejects.toThrow(LiveModeError);
    await expect(start).rejects.toThrow(/^the live key failed 2 of 7 permission probes: rak_dispute_read is missing \(GET \/v1\/disputes\?limit=1 answered 403\); rak_refund_write is missing/);
    expect(sandbox.requestCounts().total.forbidden).toBe(2);
  });

  it('refuses a full secret key (sk_live_) and says why; a test key in STRIPE_SECRET_KEY does not serve live mode', async () => {
    const { env } = liveFolder();
    expect(() => parseEnv({ ...env, STRIPE_LIVE_KEY: 'sk_live_interlock_full' })).toThrow(EnvError);
    expect(() => parseEnv({ ...env, STRIPE_LIVE_KEY: 'sk_live_interlock_full' })).toThrow(
      /^STRIPE_LIVE_KEY is a full live secret key \(sk_live_\.\.\.\), which may do anything on the Stripe account; give Interlock a restricted key \(rk_live_\.\.\.\)/,
    );
    // It names the page that lists the permissions.
    expect(() => parseEnv({ ...env, STRIPE_LIVE_KEY: 'sk_live_interlock_full' })).toThrow(/the permissions it uses \(docs\/operators\/going-live\.md\)/);
    expect(() => parseEnv({ ...env, STRIPE_LIVE_KEY: 'rk_test_interlock' })).toThrow(/^STRIPE_LIVE_KEY must be a Stripe live restricted key/);
    // The client itself takes nothing but a restricted key in live mode, whoever builds it.
    expect(() => createStripeClient('sk_live_interlock_full', {}, { live: true })).toThrow(LiveKeyError);
    expect(() => createStripeClient(LIVE_KEY)).toThrow(LiveKeyError);
    const { STRIPE_LIVE_KEY: _live, ...withoutLiveKey } = env;
    await expect(startInterlock(parseEnv({ ...withoutLiveKey, STRIPE_SECRET_KEY: 'sk_test_x', STRIPE_WEBHOOK_SECRETS: 'whsec_x' }))).rejects.toThrow(/^STRIPE_LIVE_KEY must be set/);
  });

  it('refuses the demo credentials of the shipped interlock.yaml by their entry', async () => {
    const sandbox = await liveSandbox();
    const { env } = liveFolder();
    const published = join(env.DATA_DIR!, '..', 'interlock.published.yaml');
    writeFileSync(published, `${readFileSync(DEFAULT_CONFIG_PATH, 'utf8').replace(/^stripe: \{ mode: sandbox \}$/m, 'stripe: { mode: live }')}\npublic_url: "https://interlock.example.com"\n`);
    const start = startLive({ ...env, INTERLOCK_CONFIG: published }, sandbox);
    await expect(start).rejects.toThrow(ConfigError);
    await expect(start).rejects.toThrow(/people\[0\]\.password: ana still has the demo password .* with stripe\.mode: live/);
    expect(sandbox.requestCounts().total.through).toBe(0);
  });

  it('main.ts prints a refused live start in one line and exits 2', async () => {
    const { env } = liveFolder((text) => text.replace(/\npublic_url: .*\n$/, '\n'));
    const { exit, stderr } = await runServerToExit({ ...env, PORT: String(await freePort()) });
    expect(exit).toBe('2');
    expect(stderr.trim()).toBe(
      'Interlock did not start: stripe.mode: live needs every production guard, and 1 failed: https_public_url (public_url must be the https address people reach the inbox at)',
    );
  }, 30_000);
});

describe('the page in live mode', () => {
  it('the session says live, so the header shows LIVE', async () => {
    const world = await buildAppWorld({ config: testConfig({ stripe: { ...UNPACED_STRIPE, mode: 'live' } }) });
    cleanup.push(() => world.close());
    const ana = await world.login('ana');
    expect((await world.as(ana, 'GET', '/api/session')).json()).toMatchObject({ live: true });
  });
});
