import fs from 'node:fs';
import { closedLoop, type Judge, LoadClient, type LoadResult, openLoop, type RequestSpec } from './http-load.ts';

/** The demo agent's token, published in interlock.yaml for the local demo only. */
export const AGENT_TOKEN = 'sk_agent_demo_support_bot';
/** The demo password of every person in interlock.yaml. */
export const DEMO_PASSWORD = 'interlock-demo';
/** Each payment is large enough for hundreds of the bench's refunds. */
const PAYMENT_CENTS = 100_000;
/** A routine refund: under the $50.00 rule, so it clears with no person. */
export const ROUTINE_CENTS = 500;
/** Payment intents created at once while filling the pool. */
const CREATE_CONCURRENCY = 32;
/** A bound on the pool, whatever the estimate. */
const POOL_MAX = 200_000;

/** Make `count` payment intents in the sandbox process and return their ids. */
export async function createPaymentIntents(sandboxUrl: string, count: number): Promise<string[]> {
  const client = new LoadClient(sandboxUrl, CREATE_CONCURRENCY);
  const ids: string[] = [];
  let next = 0;
  try {
    const lane = async () => {
      while (next < Math.min(count, POOL_MAX)) {
        next += 1;
        const reply = await client.request({ method: 'POST', path: '/_sandbox/payment-intents', body: { amountCents: PAYMENT_CENTS } });
        if (reply.status !== 200) throw new Error(`the sandbox refused a payment intent: ${reply.status} ${reply.body}`);
        ids.push((JSON.parse(reply.body) as { id: string }).id);
      }
    };
    await Promise.all(Array.from({ length: CREATE_CONCURRENCY }, lane));
  } finally {
    client.close();
  }
  return ids;
}

/**
 * Payment intents handed to connections so that no two requests in flight refund the same
 * payment (which would make one of them stale, and escalate it): lane `i` of `lanes` only uses
 * the intents at positions `i, i + lanes, ...`, one request at a time, cycling when it runs out.
 */
export class IntentPool {
  readonly #ids: string[];
  readonly #lanes: number;
  readonly #cursor: number[];

  constructor(ids: string[], lanes: number) {
    if (ids.length < lanes) throw new Error(`a pool of ${ids.length} intents cannot serve ${lanes} lanes`);
    this.#ids = ids;
    this.#lanes = lanes;
    this.#cursor = Array.from({ length: lanes }, () => 0);
  }

  next(lane: number): string {
    const perLane = Math.floor(this.#ids.length / this.#lanes);
    const k = this.#cursor[lane]! % perLane;
    this.#cursor[lane]! += 1;
    return this.#ids[k * this.#lanes + lane]!;
  }
}

/** A refund request from the demo agent with a request id never used before. */
export function refundRequest(requestId: string, paymentIntent: string, amountCents: number): RequestSpec {
  return {
    method: 'POST',
    path: '/v1/refunds',
    headers: { authorization: `Bearer ${AGENT_TOKEN}` },
    body: { request_id: requestId, payment_intent: paymentIntent, amount: amountCents, reason: 'bench' },
  };
}

/** A routine refund is answered 200 COMMITTED; anything else is counted by what it was. */
export const expectCommitted: Judge = (reply) => {
  if (reply.status !== 200) return `http_${reply.status}`;
  const status = (JSON.parse(reply.body) as { status?: string }).status;
  return status === 'COMMITTED' ? null : `status_${status}`;
};

/** Closed-loop routine refunds over `connections` keep-alive connections for `durationMs`. */
export async function runRefundLoad(
  serverUrl: string,
  pool: IntentPool,
  options: { connections: number; durationMs: number; tag: string },
): Promise<LoadResult> {
  const client = new LoadClient(serverUrl, options.connections);
  try {
    return await closedLoop(client, {
      connections: options.connections,
      durationMs: options.durationMs,
      requestsMax: POOL_MAX * 10,
      next: (n, lane) => refundRequest(`bench-${options.tag}-${n}`, pool.next(lane), ROUTINE_CENTS),
      judge: expectCommitted,
    });
  } finally {
    client.close();
  }
}

/** Routine refunds at a fixed rate; each payment intent is used by one request only. */
export async function runFixedRate(
  serverUrl: string,
  intents: string[],
  options: { ratePerS: number; durationMs: number; inFlightMax: number; tag: string },
): Promise<LoadResult> {
  const client = new LoadClient(serverUrl, options.inFlightMax);
  try {
    return await openLoop(client, {
      ratePerS: options.ratePerS,
      durationMs: options.durationMs,
      inFlightMax: options.inFlightMax,
      next: (n) => refundRequest(`fixed-${options.tag}-${n}`, intents[n % intents.length]!, ROUTINE_CENTS),
      judge: expectCommitted,
    });
  } finally {
    client.close();
  }
}

/** CPU seconds (user + system) a process has used so far, from /proc. */
export function cpuSecondsOf(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of stat(5), in clock ticks of 1/100 s on Linux.
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}
