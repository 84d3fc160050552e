import { performance } from 'node:perf_hooks';
import { AGENT_TOKEN, type OldRequest } from './history-reads.ts';
import { login } from './ledger.ts';
import type { Started } from './processes.ts';
import { percentile, sleep } from './stats.ts';

/** Reads a second while the pass runs, and after it: old requests read by their agent, and their receipts by finance. */
const READS_PER_S = 20;
/** How often the server's metrics are asked whether the pass has completed. */
const POLL_MS = 1_000;
/** A pass over 10M entries at a quarter of a core takes tens of minutes; one that takes this long is broken. */
const PASS_TIMEOUT_MS = 90 * 60_000;

/** A counter or gauge of the server's `/metrics`, or null while it is absent. */
async function metric(url: string, name: string): Promise<number | null> {
  const answer = await fetch(`${url}/metrics`);
  const text = await answer.text();
  if (answer.status !== 200) throw new Error(`GET /metrics answered ${answer.status}: ${text.slice(0, 200)}`);
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? null : Number(line.slice(name.length + 1));
}

/** What one background pass over a started server's journal cost, and what the reads beside it saw. */
export interface PassFigures {
  /** The pass's own duration, sleeps included, as the server reports it. */
  passS: number;
  /** p99 of the reads made while the pass ran, and of those made in the minute after. */
  duringP99Ms: number;
  afterP99Ms: number;
  duringReads: number;
  afterReads: number;
}

/**
 * The first background pass of a server started with the shipped config (a pass starts once the
 * server is ready), timed by the server's own gauge, while old requests are read at a fixed rate
 * (their agent's GET /v1/refunds/:request_id and finance's receipt, in turn; open loop: a read's start does not wait for the one before). The reads go on for `quietMs` after
 * the pass completed, with no pass running: the two p99s say what the pass costs a person.
 */
export async function measurePass(server: Started, old: readonly OldRequest[], quietMs: number): Promise<PassFigures> {
  if (old.length === 0) throw new Error('the pass is measured with old requests to read: the journal gave none');
  const cookie = await login(server.url);
  const during: number[] = [];
  const after: number[] = [];
  let passDone = false;
  let failure: Error | null = null;
  let next = 0;
  const readOne = async () => {
    const n = next++;
    const one = old[Math.floor(n / 2) % old.length]!;
    // In turn: the request as its agent reads it (202 while open), then its receipt as finance reads it.
    const [path, headers] =
      n % 2 === 0
        ? [`/v1/refunds/${encodeURIComponent(one.requestId)}`, { authorization: `Bearer ${AGENT_TOKEN}` }]
        : [`/api/ledger/${encodeURIComponent(one.effectId)}/receipt`, { cookie }];
    const into = passDone ? after : during;
    const startMs = performance.now();
    try {
      const answer = await fetch(`${server.url}${path}`, { headers });
      await answer.arrayBuffer();
      if (!(answer.status === 200 || (n % 2 === 0 ? answer.status === 202 : answer.status === 404))) throw new Error(`GET ${path} answered ${answer.status}`);
      into.push(performance.now() - startMs);
    } catch (error) {
      failure ??= error as Error;
    }
  };
  const inFlight = new Set<Promise<void>>();
  const timer = setInterval(() => {
    const read = readOne();
    inFlight.add(read);
    void read.finally(() => inFlight.delete(read));
  }, 1000 / READS_PER_S);
  try {
    const deadline = Date.now() + PASS_TIMEOUT_MS;
    while (((await metric(server.url, 'interlock_journal_pass_completed_total')) ?? 0) < 1) {
      if ((await metric(server.url, 'interlock_journal_pass_damage_total')) ?? 0) throw new Error('the background pass reported damage');
      if (Date.now() > deadline) throw new Error(`the background pass did not complete in ${PASS_TIMEOUT_MS / 60_000} min`);
      if (failure !== null) throw failure;
      await sleep(POLL_MS);
    }
    passDone = true;
    const passS = (await metric(server.url, 'interlock_journal_pass_last_duration_seconds')) ?? Number.NaN;
    await sleep(quietMs);
    clearInterval(timer);
    await Promise.all(inFlight);
    if (failure !== null) throw failure;
    return { passS, duringP99Ms: percentile(during, 99), afterP99Ms: percentile(after, 99), duringReads: during.length, afterReads: after.length };
  } finally {
    clearInterval(timer);
  }
}
