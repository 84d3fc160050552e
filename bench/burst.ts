import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { AGENT_TOKEN, ROUTINE_CENTS, refundRequest } from './http.ts';
import { LoadClient, type Reply, type RequestSpec } from './http-load.ts';
import { percentile, sleep } from './stats.ts';

// Agents as the HTTP API page tells them to behave, all at once: each sends its refund; answered 429 it
// sends it again after Retry-After; answered 202 it asks for the status after Retry-After (a
// second when there is none) until the answer is final (200).

/** A 202 without Retry-After (IN_FLIGHT, or a person deciding) is asked about again after this long. */
const POLL_WITHOUT_RETRY_AFTER_MS = 1_000;
/** After a connection error an agent sends the same request again after this long: it is always safe. */
const AFTER_NETWORK_ERROR_MS = 200;

/** What one agent saw. */
interface AgentOutcome {
  /** The first answer that was not a 429: how long its request took. */
  firstAnswerMs: number | null;
  /** …and how long since the agent's first send (429s from Interlock and their waits included). */
  firstAnswerWaitMs: number | null;
  /** When the agent had its final answer, since the burst started; null when it had none by the deadline. */
  finalAtMs: number | null;
  finalStatus: string | null;
  /** Answers 429 from Interlock (the requests it turned away before writing anything). */
  turnedAway: number;
  networkErrors: number;
}

/** What a burst did. */
export interface BurstResult {
  agents: number;
  /** From the first send until the last agent had its final answer (the deadline when one had none). */
  settleS: number;
  /** Agents without a final answer by the deadline. */
  unsettled: number;
  /** Agents whose final answer was not a committed refund. */
  notCommitted: number;
  firstAnswerP50Ms: number;
  firstAnswerP99Ms: number;
  firstAnswerWaitP99Ms: number;
  turnedAway: number;
  networkErrors: number;
  /** The longest the agents' own event loop was held during the burst: what the load generator can add to a latency. */
  agentsLagMaxMs: number;
}

/** How finely the agents' event loop is watched. */
const LAG_RESOLUTION_MS = 5;

function statusRequest(requestId: string): RequestSpec {
  return { method: 'GET', path: `/v1/refunds/${encodeURIComponent(requestId)}`, headers: { authorization: `Bearer ${AGENT_TOKEN}` } };
}

function statusOf(reply: Reply): string {
  try {
    const body = JSON.parse(reply.body) as { status?: string; error?: { code?: string } };
    return body.status ?? `http_${reply.status}_${body.error?.code ?? 'unknown'}`;
  } catch {
    return `http_${reply.status}`;
  }
}

/** One agent's refund, from its first send until a final answer or `deadlineMs` (a `performance.now()` reading). */
async function runAgent(client: LoadClient, requestId: string, paymentIntent: string, startMs: number, deadlineMs: number): Promise<AgentOutcome> {
  const outcome: AgentOutcome = { firstAnswerMs: null, firstAnswerWaitMs: null, finalAtMs: null, finalStatus: null, turnedAway: 0, networkErrors: 0 };
  const wait = (ms: number) => sleep(Math.max(0, Math.min(ms, deadlineMs - performance.now())));
  let posting = true;
  while (performance.now() < deadlineMs) {
    const sentMs = performance.now();
    let reply: Reply;
    try {
      reply = await client.request(posting ? refundRequest(requestId, paymentIntent, ROUTINE_CENTS) : statusRequest(requestId));
    } catch {
      outcome.networkErrors += 1;
      await wait(AFTER_NETWORK_ERROR_MS);
      continue;
    }
    const answeredMs = performance.now();
    if (reply.status === 429) {
      outcome.turnedAway += 1;
      posting = true;
      await wait((reply.retryAfterS ?? 1) * 1000);
      continue;
    }
    if (outcome.firstAnswerMs === null) {
      outcome.firstAnswerMs = answeredMs - sentMs;
      outcome.firstAnswerWaitMs = answeredMs - startMs;
    }
    if (reply.status !== 202) {
      outcome.finalAtMs = answeredMs - startMs;
      outcome.finalStatus = reply.status === 200 ? statusOf(reply) : `http_${reply.status}`;
      return outcome;
    }
    posting = false;
    await wait(reply.retryAfterS === undefined ? POLL_WITHOUT_RETRY_AFTER_MS : reply.retryAfterS * 1000);
  }
  return outcome;
}

/**
 * `paymentIntents.length` agents at once, each asking a routine refund of its own payment under
 * a request id made of `tag`, over a connection of its own, until each has a final answer or
 * `deadlineMs` has passed.
 */
export async function runBurst(serverUrl: string, paymentIntents: readonly string[], options: { tag: string; deadlineMs: number }): Promise<BurstResult> {
  const client = new LoadClient(serverUrl, paymentIntents.length);
  const lag = monitorEventLoopDelay({ resolution: LAG_RESOLUTION_MS });
  lag.enable();
  try {
    const startMs = performance.now();
    const deadlineMs = startMs + options.deadlineMs;
    const outcomes = await Promise.all(paymentIntents.map((pi, i) => runAgent(client, `burst-${options.tag}-${i}`, pi, startMs, deadlineMs)));
    // An agent that never had an answer but 429 waited the whole run: it counts as the deadline.
    const firstAnswers = outcomes.map((o) => o.firstAnswerMs ?? options.deadlineMs);
    const firstWaits = outcomes.map((o) => o.firstAnswerWaitMs ?? options.deadlineMs);
    const unsettled = outcomes.filter((o) => o.finalAtMs === null).length;
    const lastFinalMs = unsettled > 0 ? options.deadlineMs : Math.max(...outcomes.map((o) => o.finalAtMs ?? 0));
    return {
      agents: paymentIntents.length,
      settleS: lastFinalMs / 1000,
      unsettled,
      notCommitted: outcomes.filter((o) => o.finalStatus === null || !o.finalStatus.startsWith('COMMITTED')).length,
      firstAnswerP50Ms: percentile(firstAnswers, 50),
      firstAnswerP99Ms: percentile(firstAnswers, 99),
      firstAnswerWaitP99Ms: percentile(firstWaits, 99),
      turnedAway: outcomes.reduce((sum, o) => sum + o.turnedAway, 0),
      networkErrors: outcomes.reduce((sum, o) => sum + o.networkErrors, 0),
      agentsLagMaxMs: lag.max / 1e6,
    };
  } finally {
    lag.disable();
    client.close();
  }
}
