import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { limits } from '../../shared/limits.ts';
import { TEST_CLOCK_FILE } from '../../server/app/clock-file.ts';
import { AGENT_TOKEN, DEMO_PASSWORD } from './app-world.ts';
import type { SandboxProcess } from './crash-harness.ts';
import type { PgCluster, PgDatabase } from './postgres.ts';
import { freePort, type ServerProcess, startServerProcess, writeReceiptKey, writeTestConfig } from './server-process.ts';
import { type TcpProxy, tcpProxy } from './tcp-proxy.ts';

/** How many times a refund refused for now (429, 503) is asked again. */
const RETRIES_MAX = 10;

// Several real servers on one PostgreSQL database, each reaching it through a TCP proxy of its own
// (so one server's network can be cut alone), one sandbox process between them, and an agent's
// requests spread over them: what each request was, where it was asked, and what it was answered.

/** A refund over the auto-approval limit ($50.00): it waits for ap-leads (ana, bea), then finance-manager (fm). */
export const ESCALATED_CENTS = 6_000;
/** A routine refund: every rule passes, it is sent at once. */
export const ROUTINE_CENTS = 1_500;
/**
 * How long a request to a server may take before the agent gives it up (and asks again later): as
 * long as the product promises a refund's answer within. At 5 s, on a loaded machine, a server's
 * answers came later than that now and then (escalations, the test clock's move).
 */
const REQUEST_MS = limits.refundAnswerWithinMs;

/** One refund an agent asked for, on a payment of its own. */
export interface Asked {
  id: string;
  pi: string;
  amount: number;
  escalated: boolean;
  /** The server it was first asked of. */
  server: number;
  effectId: string | null;
  status: string | null;
  decided: boolean;
}

/** The servers, their proxies and the agent's requests. */
export class FaultWorld {
  readonly servers: Array<ServerProcess | null> = [];
  readonly proxies: TcpProxy[] = [];
  readonly asked: Asked[] = [];
  /** The last answer to each request's POST, by request id: its HTTP status and the start of its body, or none. */
  readonly lastAnswer = new Map<string, string>();
  readonly #env: Array<Record<string, string>> = [];
  readonly #sessions = new Map<string, { cookie: string; csrf: string }>();
  #made = 0;

  constructor(
    readonly cluster: PgCluster,
    readonly database: PgDatabase,
    readonly sandbox: SandboxProcess,
  ) {}

  /** Set up `count` servers in `dir` (not started); `skewMs[i]`, when given, puts server i's application clock that far ahead. */
  async prepare(dir: string, count: number, skewMs: number[]): Promise<void> {
    const common = {
      INTERLOCK_CONFIG: writeTestConfig(dir, { unpaced: true }),
      STRIPE_SANDBOX_URL: this.sandbox.url,
      RECEIPT_KEY_PATH: writeReceiptKey(join(dir, 'receipt.pem')),
      INTERLOCK_CLAIM_TTL_MS: '2000',
      LOG_LEVEL: 'warn',
    };
    for (let i = 0; i < count; i++) {
      const proxy = await tcpProxy(this.cluster.port);
      this.proxies.push(proxy);
      const via = (url: string) => url.replace(`:${this.cluster.port}/`, `:${proxy.port}/`);
      const dataDir = join(dir, `server-${i}`);
      mkdirSync(dataDir, { recursive: true });
      if ((skewMs[i] ?? 0) > 0) writeFileSync(join(dataDir, TEST_CLOCK_FILE), `${JSON.stringify({ offset_ms: skewMs[i] })}\n`);
      this.#env.push({ ...common, PORT: String(await freePort()), DATA_DIR: dataDir, DATABASE_URL: via(this.database.appUrl), DATABASE_MIGRATE_URL: via(this.database.ownerUrl) });
      this.servers.push(null);
    }
  }

  /** Start server `i` (again, on its port and data folder), with `extra` in its environment. */
  async start(i: number, extra: Record<string, string> = {}): Promise<ServerProcess> {
    const server = await startServerProcess({ ...this.#env[i]!, ...extra }, { logs: true, readyTimeoutMs: 60_000 });
    this.#env[i]!.PORT = new URL(server.url).port;
    this.servers[i] = server;
    return server;
  }

  /** SIGKILL server i and wait until it is gone. */
  async kill(i: number): Promise<void> {
    const server = this.servers[i];
    if (!server) return;
    this.servers[i] = null;
    server.child.kill('SIGKILL');
    await server.exited;
  }

  /** The server with this process id, by index; -1 when none is. */
  indexOfPid(pid: number): number {
    return this.servers.findIndex((server) => server?.child.pid === pid);
  }

  url(i: number): string {
    return `http://127.0.0.1:${this.#env[i]!.PORT}`;
  }

  /** A fetch that gives up after REQUEST_MS: the answer's status, headers and JSON, or null when none came. */
  async call(i: number, method: string, path: string, headers: Record<string, string>, body?: unknown) {
    try {
      const response = await fetch(this.url(i) + path, {
        method,
        headers: { 'content-type': 'application/json', ...headers },
        signal: AbortSignal.timeout(REQUEST_MS),
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      return { status: response.status, headers: response.headers, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
    } catch {
      return null;
    }
  }

  agent(i: number, method: string, path: string, body?: unknown) {
    return this.call(i, method, path, { authorization: `Bearer ${AGENT_TOKEN}` }, body);
  }

  /** `name` logged in (once: sessions live in the database, any server knows them) asking server i. */
  async as(i: number, name: string, method: string, path: string, body?: unknown) {
    let session = this.#sessions.get(name);
    if (!session) {
      const login = await fetch(`${this.url(i)}/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, password: DEMO_PASSWORD }) });
      const info = (await login.json()) as { csrf_token: string };
      session = { cookie: String(login.headers.get('set-cookie')).split(';')[0]!, csrf: info.csrf_token };
      this.#sessions.set(name, session);
    }
    return this.call(i, method, path, { cookie: session.cookie, 'x-csrf-token': session.csrf }, body);
  }

  /** A new refund asked of server i on a payment of its own; the answer noted when one came. */
  async ask(i: number, escalated: boolean): Promise<Asked> {
    this.#made += 1;
    const id = `fault-${this.#made}`;
    const pi = (await this.sandbox.remote.createPaymentIntent(10_000)).id;
    const asked: Asked = { id, pi, amount: escalated ? ESCALATED_CENTS : ROUTINE_CENTS, escalated, server: i, effectId: null, status: null, decided: false };
    this.asked.push(asked);
    // Asked again while refused for now, as an agent does after Retry-After: 429 at the agent's
    // share of its rate (the traffic beside it spends the same token's), 503 while a server
    // starts. No answer at all (a server killed under it) is left as it is.
    for (let tries = 0; tries < RETRIES_MAX; tries++) {
      const answer = await this.askAgain(asked, i);
      if (answer === null || (answer.status !== 429 && answer.status !== 503)) break;
      await new Promise((resolve) => setTimeout(resolve, Math.min(Number(answer.headers.get('retry-after') ?? 1), 2) * 1_000));
    }
    return asked;
  }

  /**
   * Ask `asked` of server i again while it has no answer, as an agent whose wait ran out asks again
   * under the same request id: for at most what the product promises an answer within
   * (`limits.refundAnswerWithinMs`) beyond the first try. True once it has one.
   */
  async untilAnswered(asked: Asked, i: number): Promise<boolean> {
    const deadlineMs = Date.now() + limits.refundAnswerWithinMs;
    while ((asked.effectId === null || asked.status === null) && Date.now() < deadlineMs) {
      const answer = await this.askAgain(asked, i);
      // Refused for now: after Retry-After, as in `ask`; no answer at all (the connection refused): a moment.
      const waitMs = answer === null ? 100 : answer.status === 429 || answer.status === 503 ? Math.min(Number(answer.headers.get('retry-after') ?? 1), 2) * 1_000 : 0;
      if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
    }
    return asked.effectId !== null && asked.status !== null;
  }

  /** Ask `asked` of server i (again: the request id makes it the same request); the answer, or null when none came. */
  async askAgain(asked: Asked, i: number): Promise<{ status: number; headers: Headers } | null> {
    const answer = await this.agent(i, 'POST', '/v1/refunds', { request_id: asked.id, payment_intent: asked.pi, amount: asked.amount });
    this.lastAnswer.set(asked.id, answer === null ? 'none' : `${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
    if (answer !== null && (answer.status === 200 || answer.status === 202)) this.#note(asked, answer.body);
    return answer;
  }

  /** The request's status as server i tells it now (null when it could not). */
  async status(asked: Asked, i: number): Promise<number | null> {
    const answer = await this.agent(i, 'GET', `/v1/refunds/${asked.id}`);
    if (answer === null) return null;
    if (answer.status === 200 || answer.status === 202) this.#note(asked, answer.body);
    return answer.status;
  }

  #note(asked: Asked, body: Record<string, unknown>): void {
    if (typeof body.effect_id === 'string') asked.effectId = body.effect_id;
    if (typeof body.status === 'string' && body.status !== 'DUPLICATE_IGNORED') asked.status = body.status;
  }

  /**
   * Approve an escalated request on server i, as whoever its item waits for now (ana at
   * ap-leads, fm at finance-manager): the decision's answer status, or null.
   */
  async approve(asked: Asked, i: number): Promise<number | null> {
    for (const name of ['ana', 'fm']) {
      const seen = await this.as(i, name, 'GET', `/api/items/${asked.effectId}`);
      const item = seen?.body.item as { escalation?: string; group?: string } | undefined;
      if (seen?.status !== 200 || item?.escalation === undefined) continue;
      if ((name === 'ana') !== (item.group === 'ap-leads')) continue;
      const decided = await this.as(i, name, 'POST', `/api/items/${asked.effectId}/decisions`, { action: 'approve', escalation: item.escalation });
      if (decided?.status === 200) asked.decided = true;
      return decided?.status ?? null;
    }
    return null;
  }

  /** The indexes of the servers running now, other than `but`. */
  others(but: number): number[] {
    return this.servers.flatMap((server, i) => (server !== null && i !== but ? [i] : []));
  }

  /** Stop every server and proxy. */
  async close(): Promise<void> {
    await Promise.all(this.servers.map((_, i) => this.kill(i)));
    for (const proxy of this.proxies) proxy.close();
  }
}
