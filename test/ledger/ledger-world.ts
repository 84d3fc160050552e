import { createHash } from 'node:crypto';
import type { LedgerPage, LedgerRow } from '../../shared/ledger.ts';
import { AppClock } from '../../server/app/clock.ts';
import { type SettleMode, startSandbox } from '../../server/sandbox/index.ts';
import { AGENT_TOKEN, type AppWorld, buildAppWorld, DEMO_PASSWORD, testConfig, WEBHOOK_SECRET } from '../support/app-world.ts';
export { parseCsv } from '../support/csv.ts';

/** A second agent whose name starts the way a spreadsheet formula does. */
export const FORMULA_AGENT = '-sum-bot';
export const FORMULA_AGENT_TOKEN = 'sk_agent_formula_bot_for_tests';

/** Who is logged in over HTTP: the session cookie. */
export interface Login {
  cookie: string;
}

/** An app world listening on a port, its sandbox sending signed webhooks to it, spoken to over real HTTP. */
export interface LedgerWorld {
  world: AppWorld;
  url: string;
  ask(requestId: string, paymentIntent: string, amount: number, token?: string): Promise<{ status: string; effect_id: string }>;
  login(name: string): Promise<Login>;
  logout(who: Login): Promise<void>;
  get(who: Login | null, path: string, headers?: Record<string, string>): Promise<Response>;
  decide(who: Login, effectId: string, action: 'approve' | 'reject', reason?: string): Promise<string>;
  /** Every page of the JSON ledger for a query, following next_cursor. */
  allPages(who: Login, query?: string, limit?: number): Promise<LedgerRow[]>;
  /** A payment in another currency, made through the SDK. */
  paymentIn(currency: string, amount: number): Promise<string>;
  close(): Promise<void>;
}

/** `settle: 'manual'` keeps each refund pending at Stripe until the test settles it (succeeded or failed). */
export async function buildLedgerWorld(options: { settle?: SettleMode } = {}): Promise<LedgerWorld> {
  const config = testConfig();
  const tokenSha256 = createHash('sha256').update(FORMULA_AGENT_TOKEN).digest('hex');
  const clock = new AppClock();
  const sandbox = await startSandbox({ clockMs: () => clock.wallMs(), settle: options.settle ?? 'immediate' });
  const world = await buildAppWorld({ clock, sandbox, config: { ...config, agents: [...config.agents, { name: FORMULA_AGENT, tokenSha256 }] } });
  const url = await world.app.listen({ port: 0, host: '127.0.0.1' });
  world.sandbox.configureWebhook({ url: `${url}/webhooks/stripe`, secret: WEBHOOK_SECRET });
  const csrf = new Map<string, string>();
  const get: LedgerWorld['get'] = (who, path, headers = {}) => fetch(`${url}${path}`, { headers: { ...(who ? { cookie: who.cookie } : {}), ...headers } });
  const ledgerWorld: LedgerWorld = {
    world,
    url,
    async ask(requestId, paymentIntent, amount, token = AGENT_TOKEN) {
      const answer = await fetch(`${url}/v1/refunds`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ request_id: requestId, payment_intent: paymentIntent, amount }),
      });
      return (await answer.json()) as { status: string; effect_id: string };
    },
    async login(name) {
      const answer = await fetch(`${url}/api/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name, password: DEMO_PASSWORD }),
      });
      if (answer.status !== 200) throw new Error(`login ${name}: ${await answer.text()}`);
      const cookie = (answer.headers.get('set-cookie') ?? '').split(';')[0]!;
      csrf.set(cookie, ((await answer.json()) as { csrf_token: string }).csrf_token);
      return { cookie };
    },
    async logout(who) {
      const answer = await fetch(`${url}/api/session`, { method: 'DELETE', headers: { cookie: who.cookie, 'x-csrf-token': csrf.get(who.cookie) ?? '' } });
      if (answer.status !== 200) throw new Error(`logout: ${await answer.text()}`);
    },
    get,
    async decide(who, effectId, action, reason) {
      const item = (await (await get(who, `/api/items/${effectId}`)).json()) as { item: { escalation: string } };
      const answer = await fetch(`${url}/api/items/${effectId}/decisions`, {
        method: 'POST',
        headers: { cookie: who.cookie, 'x-csrf-token': csrf.get(who.cookie) ?? '', 'content-type': 'application/json' },
        body: JSON.stringify({ action, escalation: item.item.escalation, ...(reason === undefined ? {} : { reason }) }),
      });
      return ((await answer.json()) as { status: string }).status;
    },
    async allPages(who, query = '', limit = 200) {
      const rows: LedgerRow[] = [];
      let cursor: string | null = null;
      do {
        const path: string = `/api/ledger?limit=${limit}${query ? `&${query}` : ''}${cursor === null ? '' : `&cursor=${cursor}`}`;
        const answer = await get(who, path);
        if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${await answer.text()}`);
        const page = (await answer.json()) as LedgerPage;
        rows.push(...page.rows);
        cursor = page.next_cursor;
      } while (cursor !== null);
      return rows;
    },
    async paymentIn(currency, amount) {
      const intent = await world.sandbox.stripe().paymentIntents.create({ amount, currency, payment_method: 'pm_card_visa', confirm: true });
      return intent.id;
    },
    async close() {
      await world.close();
      await sandbox.close();
    },
  };
  return ledgerWorld;
}
