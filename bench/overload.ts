import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { InboxItem } from '../shared/api.ts';
import { UNPACED_STRIPE_CONFIG, writeStripeConfig } from './configs.ts';
import { AGENT_TOKEN, createPaymentIntents, IntentPool, refundRequest, ROUTINE_CENTS, runRefundLoad } from './http.ts';
import { LoadClient, type Reply, type RequestSpec } from './http-load.ts';
import { waitForQuiet } from './http-stage.ts';
import { logIn, type Session } from './live.ts';
import { startSandboxProcess, startServerProcess, type Started } from './processes.ts';
import { type Plan, push, type Samples, say } from './stages.ts';
import { percentile, repeat, sleep } from './stats.ts';

// Interlock offered four times what it answers: in each repetition a fresh server's capacity is
// measured (routine refunds in a closed loop), then agents send four times that many requests a
// second, whatever the answers (an open loop), while a person decides items one at a time and a
// balancer probes /healthz. What the agents get is either an answer or a 429 at once.

/** Offered load, as a multiple of the capacity measured just before in the same repetition. */
export const OVERLOAD_FACTOR = 4;
/** Over the $50.00 rule and under $200.00: routed to ap-leads, whose member ana decides. */
const ESCALATED_CENTS = 6_000;
/** Requests the load generator leaves outstanding at most; beyond it a due request is counted unsent. */
const OUTSTANDING_MAX = 4_000;
/**
 * The agents' keep-alive connections, all opened before the flood: agents keep theirs open, and a
 * storm of new connections would measure the kernel's accept queue, not Interlock.
 */
const FLOOD_SOCKETS = 512;
/** Payment intents the flood cycles through per second of its rate: two seconds apart, no two in flight share one. */
const INTENT_SECONDS = 2;
/** How often the balancer's probe asks /healthz during the flood. */
const PROBE_EVERY_MS = 250;

/**
 * The agents' mix, by a request's place in every ten: seven new routine refunds, two asks for the
 * status of a request sent earlier, and one resend of an earlier request (same id, same payload),
 * as an agent does after a timeout.
 */
function flooding(tag: string, intents: string[]): (n: number) => RequestSpec {
  const newRefund = (n: number) => refundRequest(`${tag}-${n}`, intents[n % intents.length]!, ROUTINE_CENTS);
  return (n) => {
    const place = n % 10;
    const earlier = n - place;
    if (place < 7 || earlier < 10) return newRefund(n);
    if (place < 9) return { method: 'GET', path: `/v1/refunds/${tag}-${earlier - 10}`, headers: { authorization: `Bearer ${AGENT_TOKEN}` } };
    return newRefund(earlier);
  };
}

/** What the flood found: latencies of answers and of sheds apart, and everything else by what it was. */
interface FloodResult {
  answeredMs: number[];
  shedMs: number[];
  failures: Record<string, number>;
  unsent: number;
  elapsedMs: number;
  /**
   * How late the load generator sent each request past when it was due (its own event loop, on the
   * same cores as the server): part of every latency above, reported beside them rather than taken out.
   */
  sentLateMs: number[];
}

/**
 * An answer is anything but a 429 or a failure (a status read of a request that was shed is a 404:
 * an answer); a shed is 429 rate_limited with a Retry-After; a 5xx, another 429 or a connection
 * error is a failure.
 */
function judge(spec: RequestSpec, reply: Reply): 'answered' | 'shed' | string {
  if (reply.status === 429) {
    const code = (JSON.parse(reply.body) as { error?: { code?: string } }).error?.code;
    return code === 'rate_limited' && reply.retryAfterS !== undefined ? 'shed' : `429_${code}_retry_after_${reply.retryAfterS ?? 'none'}`;
  }
  if (reply.status >= 500) return `http_${reply.status}`;
  if (spec.method === 'POST' && reply.status !== 200 && reply.status !== 202) return `post_${reply.status}`;
  return 'answered';
}

/** Requests at `ratePerS` for `durationMs`, each timed from when it was due (an open loop, as http-load.ts openLoop). */
async function flood(serverUrl: string, ratePerS: number, durationMs: number, next: (n: number) => RequestSpec): Promise<FloodResult> {
  const client = new LoadClient(serverUrl, FLOOD_SOCKETS);
  await Promise.all(Array.from({ length: FLOOD_SOCKETS }, () => client.request({ method: 'GET', path: '/healthz' })));
  const result: FloodResult = { answeredMs: [], shedMs: [], failures: {}, unsent: 0, elapsedMs: 0, sentLateMs: [] };
  const outstanding = new Set<Promise<void>>();
  const total = Math.floor((durationMs / 1000) * ratePerS);
  const startMs = performance.now();
  const send = async (spec: RequestSpec, dueMs: number) => {
    result.sentLateMs.push(performance.now() - dueMs);
    try {
      const reply = await client.request(spec);
      const verdict = judge(spec, reply);
      if (verdict === 'answered') result.answeredMs.push(performance.now() - dueMs);
      else if (verdict === 'shed') result.shedMs.push(performance.now() - dueMs);
      else result.failures[verdict] = (result.failures[verdict] ?? 0) + 1;
    } catch (error) {
      const label = `error:${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`;
      result.failures[label] = (result.failures[label] ?? 0) + 1;
    }
  };
  try {
    let i = 0;
    while (i < total) {
      const dueNow = Math.min(total, Math.floor(((performance.now() - startMs) * ratePerS) / 1000) + 1);
      for (; i < dueNow; i++) {
        if (outstanding.size >= OUTSTANDING_MAX) {
          result.unsent += 1;
          continue;
        }
        const done: Promise<void> = send(next(i), startMs + (i * 1000) / ratePerS).finally(() => outstanding.delete(done));
        outstanding.add(done);
      }
      await sleep(1);
    }
    await Promise.all(outstanding);
  } finally {
    client.close();
  }
  result.elapsedMs = performance.now() - startMs;
  return result;
}

/** Items waiting for ana: `count` refunds over the rule, each on a payment of its own. */
async function escalate(server: Started, sandbox: Started, session: Session, count: number, tag: string): Promise<InboxItem[]> {
  const intents = await createPaymentIntents(sandbox.url, count);
  const client = new LoadClient(server.url, 4);
  try {
    for (const [n, intent] of intents.entries()) {
      const reply = await client.request(refundRequest(`${tag}-person-${n}`, intent, ESCALATED_CENTS));
      if (reply.status !== 202) throw new Error(`a refund over the rule was answered ${reply.status} ${reply.body}`);
    }
    const inbox = await client.request({ method: 'GET', path: '/api/inbox', headers: { cookie: session.cookie } });
    return (JSON.parse(inbox.body) as { items: InboxItem[] }).items;
  } finally {
    client.close();
  }
}

/** A person approves `items` one at a time, spread over `durationMs`; each decision timed. */
async function decideDuring(serverUrl: string, session: Session, items: InboxItem[], durationMs: number): Promise<{ latenciesMs: number[]; failed: number }> {
  const client = new LoadClient(serverUrl, 1);
  const latenciesMs: number[] = [];
  let failed = 0;
  const gapMs = durationMs / (items.length + 1);
  try {
    for (const item of items) {
      await sleep(gapMs);
      const startMs = performance.now();
      const reply = await client
        .request({
          method: 'POST',
          path: `/api/items/${item.effect_id}/decisions`,
          headers: { cookie: session.cookie, 'x-csrf-token': session.csrf },
          body: { action: 'approve', escalation: item.escalation },
        })
        .catch(() => null);
      if (reply?.status === 200) latenciesMs.push(performance.now() - startMs);
      else failed += 1;
    }
  } finally {
    client.close();
  }
  return { latenciesMs, failed };
}

/** The balancer's probe: /healthz every PROBE_EVERY_MS for `durationMs`; the slowest answer, or Infinity for one that failed. */
async function probeDuring(serverUrl: string, durationMs: number): Promise<number> {
  const client = new LoadClient(serverUrl, 1);
  const endMs = performance.now() + durationMs;
  let slowestMs = 0;
  try {
    while (performance.now() < endMs) {
      const startMs = performance.now();
      const reply = await client.request({ method: 'GET', path: '/healthz' }).catch(() => null);
      slowestMs = Math.max(slowestMs, reply?.status === 200 ? performance.now() - startMs : Number.POSITIVE_INFINITY);
      await sleep(PROBE_EVERY_MS);
    }
  } finally {
    client.close();
  }
  return slowestMs;
}

function describeFailures(result: FloodResult): string {
  const failures = Object.entries(result.failures).map(([label, n]) => `${label} ×${n}`);
  return failures.length === 0 ? 'no failures' : failures.join(', ');
}

async function overloadRep(plan: Plan, server: Started, sandbox: Started, rep: number, samples: Samples): Promise<void> {
  const tag = `ovl-r${rep}`;
  const client = new LoadClient(server.url, 1);
  const session = await logIn(client, 'ana');
  client.close();
  const items = await escalate(server, sandbox, session, plan.overloadDecisions, tag);
  if (items.length < plan.overloadDecisions) throw new Error(`${items.length} items reached ana's inbox, not ${plan.overloadDecisions}`);

  const pool = new IntentPool(await createPaymentIntents(sandbox.url, plan.connections * 4), plan.connections);
  const capacity = await runRefundLoad(server.url, pool, { connections: plan.connections, durationMs: plan.overloadCapacityMs, tag: `${tag}-capacity` });
  const capacityPerS = capacity.ok / (capacity.elapsedMs / 1000);
  const offeredPerS = Math.max(OVERLOAD_FACTOR * capacityPerS, plan.overloadOfferedMinPerS);
  const intents = await createPaymentIntents(sandbox.url, Math.ceil(offeredPerS * INTENT_SECONDS));
  await waitForQuiet(sandbox);

  const [flooded, decisions, healthzMaxMs] = await Promise.all([
    flood(server.url, offeredPerS, plan.overloadMs, flooding(`${tag}-flood`, intents)),
    decideDuring(server.url, session, items, plan.overloadMs),
    probeDuring(server.url, plan.overloadMs),
  ]);
  const sent = flooded.answeredMs.length + flooded.shedMs.length + Object.values(flooded.failures).reduce((a, b) => a + b, 0);
  const figures = {
    overload_capacity_per_s: capacityPerS,
    overload_offered_per_s: offeredPerS,
    overload_answered_per_s: flooded.answeredMs.length / (flooded.elapsedMs / 1000),
    overload_shed_share: flooded.shedMs.length / Math.max(1, sent),
    overload_shed_p99_ms: percentile(flooded.shedMs, 99),
    overload_shed_p50_ms: percentile(flooded.shedMs, 50),
    overload_answered_p99_ms: percentile(flooded.answeredMs, 99),
    overload_answered_p50_ms: percentile(flooded.answeredMs, 50),
    overload_decision_max_ms: decisions.latenciesMs.length === 0 ? Number.NaN : Math.max(...decisions.latenciesMs),
    overload_healthz_max_ms: healthzMaxMs,
    overload_failed: sent - flooded.answeredMs.length - flooded.shedMs.length + flooded.unsent + decisions.failed,
  };
  say(
    `overload rep ${rep}: capacity ${Math.round(capacityPerS)}/s, offered ${Math.round(offeredPerS)}/s; answered ${Math.round(figures.overload_answered_per_s)}/s ` +
      `(p99 ${figures.overload_answered_p99_ms.toFixed(0)} ms), shed ${(100 * figures.overload_shed_share).toFixed(0)}% (p99 ${figures.overload_shed_p99_ms.toFixed(1)} ms); ` +
      `slowest decision ${figures.overload_decision_max_ms.toFixed(0)} ms (${decisions.failed} failed), slowest /healthz ${healthzMaxMs.toFixed(0)} ms; ` +
      `the load generator sent late by p50 ${percentile(flooded.sentLateMs, 50).toFixed(1)} ms, p99 ${percentile(flooded.sentLateMs, 99).toFixed(1)} ms; ${flooded.unsent} unsent, ${describeFailures(flooded)}`,
  );
  // A figure with no sample (no request shed at all) is not measured, rather than a number made up.
  push(samples, Object.fromEntries(Object.entries(figures).filter(([, value]) => Number.isFinite(value))));
}

/** Per repetition, a fresh server (an empty journal) against a sandbox without limits, Interlock's Stripe budget far above the load. */
export async function overloadStage(plan: Plan, dir: string): Promise<Samples> {
  const samples: Samples = {};
  const configPath = writeStripeConfig(dir, 'overload', UNPACED_STRIPE_CONFIG);
  const sandbox = await startSandboxProcess();
  try {
    await repeat(plan.reps, async (rep) => {
      const server = await startServerProcess({ dataDir: path.join(dir, `overload-r${rep}`), sandboxUrl: sandbox.url, configPath });
      try {
        await overloadRep(plan, server, sandbox, rep, samples);
      } finally {
        await server.stop();
      }
    });
  } finally {
    await sandbox.stop();
  }
  return samples;
}
