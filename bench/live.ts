import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import type { InboxItem, LiveMessage } from '../shared/api.ts';
import { DEMO_PASSWORD, refundRequest } from './http.ts';
import { LoadClient } from './http-load.ts';
import { percentile } from './stats.ts';

/** Over the $50.00 rule and under $200.00: routed to ap-leads, whose member ana watches. */
const ESCALATED_CENTS = 6_000;
/** An item not on the socket this long after its request is counted as never seen. */
const VISIBLE_TIMEOUT_MS = 15_000;

/** A person's session: the cookie and the CSRF token of state-changing calls. */
export interface Session {
  cookie: string;
  csrf: string;
}

/** Log a person in over HTTP. */
export async function logIn(client: LoadClient, name: string): Promise<Session> {
  const reply = await client.request({ method: 'POST', path: '/api/session', body: { name, password: DEMO_PASSWORD } });
  if (reply.status !== 200) throw new Error(`login of ${name} failed: ${reply.status} ${reply.body}`);
  return { cookie: reply.cookie ?? '', csrf: (JSON.parse(reply.body) as { csrf_token: string }).csrf_token };
}

/** An approver's open live feed: every item message, by the request id it carries. */
class LiveFeed {
  readonly #waiting = new Map<string, (atMs: number) => void>();
  readonly #seen = new Map<string, number>();
  readonly items = new Map<string, InboxItem>();

  constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      const atMs = performance.now();
      const message = JSON.parse(String(data)) as LiveMessage;
      if (message.type !== 'item' || message.item === null) return;
      const requestId = message.item.request.id;
      this.items.set(message.effect_id, message.item);
      const waiter = this.#waiting.get(requestId);
      if (waiter) waiter(atMs);
      else this.#seen.set(requestId, atMs);
    });
  }

  /** When the item of `requestId` arrived (it may already have, before its HTTP answer). */
  arrival(requestId: string): Promise<number | null> {
    const seen = this.#seen.get(requestId);
    if (seen !== undefined) {
      this.#seen.delete(requestId);
      return Promise.resolve(seen);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(requestId);
        resolve(null);
      }, VISIBLE_TIMEOUT_MS);
      this.#waiting.set(requestId, (atMs) => {
        clearTimeout(timer);
        this.#waiting.delete(requestId);
        resolve(atMs);
      });
    });
  }
}

/** Open `/api/live` as `session` and wait for its first snapshot. */
export async function openFeed(serverUrl: string, session: Session): Promise<LiveFeed> {
  const socket = new WebSocket(`${serverUrl.replace(/^http/, 'ws')}/api/live`, { headers: { cookie: session.cookie } });
  const feed = new LiveFeed(socket);
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.once('close', (code) => reject(new Error(`the live feed closed with ${code}`)));
    socket.once('message', () => resolve());
  });
  return feed;
}

/** What one run of escalations measured. */
export interface VisibleRun {
  p95Ms: number;
  p50Ms: number;
  missing: number;
  failed: number;
}

/**
 * An agent POSTs `requests` refunds that need a person (`concurrency` at a time, none started
 * after `deadlineMs`); each is timed from just before its POST to the moment its item arrives on
 * an approver's open websocket.
 */
export async function runVisible(
  serverUrl: string,
  feed: LiveFeed,
  intents: string[],
  options: { requests: number; concurrency: number; deadlineMs: number; tag: string },
): Promise<VisibleRun> {
  const client = new LoadClient(serverUrl, options.concurrency);
  const latenciesMs: number[] = [];
  let missing = 0;
  let failed = 0;
  let next = 0;
  const deadlineMs = performance.now() + options.deadlineMs;
  try {
    const lane = async () => {
      while (next < options.requests && performance.now() < deadlineMs) {
        const n = next++;
        const requestId = `visible-${options.tag}-${n}`;
        const startMs = performance.now();
        const arrived = feed.arrival(requestId);
        const status = await client.request(refundRequest(requestId, intents[n % intents.length]!, ESCALATED_CENTS)).then(
          (reply) => reply.status,
          () => 0,
        );
        if (status !== 202) failed += 1;
        const atMs = await arrived;
        if (atMs === null) missing += 1;
        else latenciesMs.push(atMs - startMs);
      }
    };
    await Promise.all(Array.from({ length: options.concurrency }, lane));
  } finally {
    client.close();
  }
  // Requests never sent before the deadline count as never seen.
  missing += options.requests - next;
  return { p95Ms: percentile(latenciesMs, 95), p50Ms: percentile(latenciesMs, 50), missing, failed };
}

/**
 * Decide some open items as `session`'s person, so the journal holds every kind of chain a real
 * one does: approved (and sent), and rejected.
 */
export async function decideSome(serverUrl: string, session: Session, feed: LiveFeed, counts: { approve: number; reject: number }): Promise<void> {
  const client = new LoadClient(serverUrl, 4);
  try {
    const open = [...feed.items.values()].slice(0, counts.approve + counts.reject);
    for (const [i, item] of open.entries()) {
      const action = i < counts.approve ? 'approve' : 'reject';
      const reply = await client.request({
        method: 'POST',
        path: `/api/items/${item.effect_id}/decisions`,
        headers: { cookie: session.cookie, 'x-csrf-token': session.csrf },
        // A rejection says why; the agent is told.
        body: action === 'reject' ? { action, escalation: item.escalation, reason: 'bench: not refunded' } : { action, escalation: item.escalation },
      });
      if (reply.status !== 200) throw new Error(`${action} of ${item.effect_id} failed: ${reply.status} ${reply.body}`);
    }
  } finally {
    client.close();
  }
}

/** Close a feed. */
export function closeFeed(feed: LiveFeed): void {
  feed.socket.close();
}
