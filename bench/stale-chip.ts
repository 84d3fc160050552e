import path from 'node:path';
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import type { CurrentFacts, LiveMessage } from '../shared/api.ts';
import { CAPTURE_SPACING_MS } from '../server/facts/limits.ts';
import { connectSandbox, type RemoteSandbox } from '../server/sandbox/remote.ts';
import { isShort } from '../web/src/trouble.ts';
import { refundRequest } from './http.ts';
import { LoadClient } from './http-load.ts';
import { logIn, type Session } from './live.ts';
import { startSandboxProcess, startServerProcess } from './processes.ts';
import { CONFIG_PATH, type Plan, push, type Samples, say } from './stages.ts';
import { percentile, repeat, sleep } from './stats.ts';

// The stale chip, timed: an item waits in ana's open inbox; someone refunds its payment by hand
// in the dashboard (here: the official `stripe` SDK against the sandbox, outside Interlock); the
// sandbox posts its signed webhook to the server, the server reads the payment again and tells
// the open page, whose row now says Stale. Each refund is timed from the SDK call's answer to the
// first message on ana's websocket that shows the item short, judged as the page judges it,
// while other arrivals keep the facts cache's shared pace of Stripe reads busy.

/** A payment of $80.00 … */
const PAYMENT_CENTS = 8_000;
/** … of which the agent asks $60.00: over the $50.00 rule, so it waits for ap-leads (ana's group). */
const ASKED_CENTS = 6_000;
/** A person refunds $30.00 of it by hand: $50.00 is left, less than asked, so the item is stale. */
const HAND_REFUND_CENTS = 3_000;
/** The person who watches: a member of ap-leads. */
const APPROVER = 'ana';
/** A chip not shown this long after its refund is counted as missing. */
const CHIP_TIMEOUT_MS = 30_000;
/** An arrival not on the page with its first facts read this long after it was queued makes a broken run. */
const FIRST_READ_TIMEOUT_MS = 120_000;
/**
 * After a chip, arrivals wait this long: a refund by hand is rare, and what it causes after the
 * webhook's read (a re-show of the item, which reads Stripe twice) goes before the background, so
 * it runs before the next refund as it would in an inbox the background keeps busy.
 */
const AFTERMATH_MS = 2 * CAPTURE_SPACING_MS;

/** What the open page knows: each item's request amount and when each item's facts said what. */
class FactsFeed {
  readonly #asked = new Map<string, { effectId: string; amountCents: number }>();
  readonly #current = new Map<string, CurrentFacts | null>();
  readonly #waiters = new Map<string, { test: (current: CurrentFacts) => boolean; done: (atMs: number) => void }>();

  constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      const atMs = performance.now();
      const message = JSON.parse(String(data)) as LiveMessage;
      if (message.type === 'snapshot') for (const item of message.items) this.#see(item.effect_id, item.request.id, item.request.amount, item.current ?? null, atMs);
      else if (message.type === 'item' && message.item !== null) this.#see(message.effect_id, message.item.request.id, message.item.request.amount, message.item.current ?? null, atMs);
      else if (message.type === 'facts') this.#see(message.effect_id, null, null, message.current, atMs);
    });
  }

  /** The item of a request, once the page has it. */
  itemOf(requestId: string): { effectId: string; amountCents: number } | null {
    return this.#asked.get(requestId) ?? null;
  }

  /** The item's facts as the page shows them now (null before the first read). */
  current(effectId: string): CurrentFacts | null {
    return this.#current.get(effectId) ?? null;
  }

  /** When the item's facts first pass `test` from now on, or null after `timeoutMs`. */
  when(effectId: string, test: (current: CurrentFacts) => boolean, timeoutMs: number): Promise<number | null> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(effectId);
        resolve(null);
      }, timeoutMs);
      this.#waiters.set(effectId, {
        test,
        done: (atMs) => {
          clearTimeout(timer);
          this.#waiters.delete(effectId);
          resolve(atMs);
        },
      });
    });
  }

  // The page shows an item's facts from whichever message carried them last: a facts message
  // decorates the item, an item message carries its facts too.
  #see(effectId: string, requestId: string | null, amountCents: number | null, current: CurrentFacts | null, atMs: number): void {
    if (requestId !== null && amountCents !== null) this.#asked.set(requestId, { effectId, amountCents });
    if (current === null && this.#current.get(effectId)) return;
    this.#current.set(effectId, current);
    const waiter = this.#waiters.get(effectId);
    if (waiter && current !== null && waiter.test(current)) waiter.done(atMs);
  }
}

/** Open `/api/live` as the page does (the session cookie on the upgrade) and wait for its snapshot. */
async function openFactsFeed(serverUrl: string, session: Session): Promise<FactsFeed> {
  const socket = new WebSocket(`${serverUrl.replace(/^http/, 'ws')}/api/live`, { headers: { cookie: session.cookie } });
  const feed = new FactsFeed(socket);
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.once('close', (code) => reject(new Error(`the live feed closed with ${code}`)));
    socket.once('message', () => resolve());
  });
  return feed;
}

/** Ask for a refund that waits for a person, on a payment of its own; its payment intent. */
async function queueItem(client: LoadClient, sandbox: RemoteSandbox, requestId: string): Promise<string> {
  const intent = (await sandbox.createPaymentIntent(PAYMENT_CENTS)).id;
  const reply = await client.request(refundRequest(requestId, intent, ASKED_CENTS));
  const status = reply.status === 202 ? (JSON.parse(reply.body) as { status?: string }).status : undefined;
  if (status !== 'QUEUED') throw new Error(`${requestId} was not queued: ${reply.status} ${reply.body}`);
  return intent;
}

/** How often the page is looked at while waiting for a first read: a few ms of the cache's pace at most. */
const POLL_MS = 5;

/** Wait until the item is on the page with its first facts read (not short: nothing was refunded yet). */
async function awaitFirstRead(feed: FactsFeed, requestId: string): Promise<{ effectId: string; amountCents: number }> {
  const deadlineMs = performance.now() + FIRST_READ_TIMEOUT_MS;
  for (;;) {
    const item = feed.itemOf(requestId);
    if (item !== null && feed.current(item.effectId) !== null) return item;
    if (performance.now() > deadlineMs) throw new Error(`${requestId} had no first facts read in ${FIRST_READ_TIMEOUT_MS} ms`);
    await sleep(POLL_MS);
  }
}

/** An open item on ana's page, read once, and the payment a person may refund by hand. */
interface OpenItem {
  effectId: string;
  amountCents: number;
  paymentIntent: string;
}

/**
 * Items keep arriving, the next as soon as the last was read, so the cache's pace (one capture
 * every 1.5 s, every cause together) stays busy with no backlog, as the background's 10-minute
 * rereads keep it busy in an inbox of 400 open items or more; they are also the items refunded
 * by hand, oldest first. Paused, they let the pace serve what a refund caused, as the background
 * yields to it.
 */
class Arrivals {
  readonly read: OpenItem[] = [];
  #queued = 0;
  #stopped = false;
  #failure: unknown = null;
  #resume: (() => void) | null = null;
  #held: Promise<void> = Promise.resolve();
  #readWaiters: Array<() => void> = [];
  readonly #done: Promise<void>;

  constructor(
    readonly client: LoadClient,
    readonly sandbox: RemoteSandbox,
    readonly feed: FactsFeed,
    readonly tag: string,
  ) {
    this.#done = this.#run().catch((error: unknown) => {
      this.#failure = error;
      for (const wake of this.#readWaiters.splice(0)) wake();
    });
  }

  /** Items queued so far. */
  get queued(): number {
    return this.#queued;
  }

  /** Hold the next arrival. */
  pause(): void {
    this.#held = new Promise((resolve) => {
      this.#resume = resolve;
    });
  }

  /** Let arrivals go on; resolves once the next of them is read, when the pace has just been spent. */
  resume(): Promise<void> {
    this.#check();
    const read = new Promise<void>((resolve) => this.#readWaiters.push(resolve));
    this.#resume?.();
    this.#resume = null;
    return read.then(() => this.#check());
  }

  /** The oldest read item not yet handed out. */
  async take(taken: number): Promise<OpenItem> {
    while (this.read.length <= taken) await this.resume();
    return this.read[taken]!;
  }

  async stop(): Promise<number> {
    this.#stopped = true;
    this.#resume?.();
    await this.#done;
    this.#check();
    return this.#queued;
  }

  #check(): void {
    if (this.#failure !== null) throw this.#failure;
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      await this.#held;
      if (this.#stopped) return;
      const requestId = `stale-${this.tag}-${this.#queued}`;
      const paymentIntent = await queueItem(this.client, this.sandbox, requestId);
      this.#queued += 1;
      this.read.push({ ...(await awaitFirstRead(this.feed, requestId)), paymentIntent });
      for (const wake of this.#readWaiters.splice(0)) wake();
    }
  }
}

/**
 * The wait between an arrival's read and the next refund: spread evenly over one pace period
 * (a golden-ratio sequence), so the refunds meet the cache at every point of its 1.5 s pace, the
 * same in every run.
 */
function phaseMs(i: number): number {
  return ((i * 0.618_033_988_75) % 1) * CAPTURE_SPACING_MS;
}

/** What one run of hand refunds measured: ms from each refund's answer to its item's stale chip. */
interface StaleRun {
  chipMs: number[];
  missing: number;
  /** Items that arrived in all, refunded or not. */
  arrived: number;
}

/**
 * `plan.staleItems` refunds by hand, one after another: each once the pace is busy again with
 * arrivals, at its own phase of it, and timed from the SDK's answer to the chip on ana's page.
 */
async function runStaleRep(plan: Plan, serverUrl: string, sandbox: RemoteSandbox, tag: string): Promise<StaleRun> {
  const client = new LoadClient(serverUrl, 4);
  const stripe = sandbox.stripe();
  const run: StaleRun = { chipMs: [], missing: 0, arrived: 0 };
  let feed: FactsFeed | null = null;
  try {
    feed = await openFactsFeed(serverUrl, await logIn(client, APPROVER));
    const arrivals = new Arrivals(client, sandbox, feed, tag);
    try {
      for (let i = 0; i < plan.staleItems; i++) {
        const item = await arrivals.take(i);
        await arrivals.resume();
        await sleep(phaseMs(i));
        const chip = feed.when(item.effectId, (current) => isShort(current, item.amountCents), CHIP_TIMEOUT_MS);
        // As a person in the dashboard would: no idempotency key, no metadata, nothing of Interlock.
        await stripe.refunds.create({ payment_intent: item.paymentIntent, amount: HAND_REFUND_CENTS });
        const answeredMs = performance.now();
        const atMs = await chip;
        // The chip can only come after the refund exists; a message handled before the SDK's answer counts as 0 ms.
        if (atMs === null) run.missing += 1;
        else run.chipMs.push(Math.max(0, atMs - answeredMs));
        if (i + 1 === plan.staleItems) break;
        arrivals.pause();
        await sleep(AFTERMATH_MS);
      }
    } finally {
      run.arrived = await arrivals.stop();
    }
  } finally {
    feed?.socket.close();
    client.close();
  }
  return run;
}

/**
 * A hand refund on a queued item's payment until its row says Stale on an approver's open page:
 * for each repetition a fresh server over an empty journal, the sandbox shared.
 */
export async function staleChipStage(plan: Plan, dir: string): Promise<Samples> {
  const samples: Samples = {};
  const started = await startSandboxProcess();
  const sandbox = connectSandbox(started.url);
  try {
    await repeat(plan.reps, async (rep) => {
      const server = await startServerProcess({ dataDir: path.join(dir, `stale-r${rep}`), sandboxUrl: started.url, configPath: CONFIG_PATH });
      let run: StaleRun;
      try {
        run = await runStaleRep(plan, server.url, sandbox, `r${rep}`);
      } finally {
        await server.stop();
      }
      if (run.chipMs.length === 0) throw new Error(`no stale chip was shown (${run.missing} missing)`);
      say(
        `stale chip rep ${rep}: p95 ${percentile(run.chipMs, 95).toFixed(0)} ms, p50 ${percentile(run.chipMs, 50).toFixed(0)} ms, max ${Math.max(...run.chipMs).toFixed(0)} ms over ${run.chipMs.length} refunds; missing ${run.missing}; ${run.arrived} items arrived in all`,
      );
      push(samples, {
        stale_chip_p95_ms: percentile(run.chipMs, 95),
        stale_chip_p50_ms: percentile(run.chipMs, 50),
        stale_chip_max_ms: Math.max(...run.chipMs),
        stale_chip_samples: run.chipMs.length,
        stale_chip_missing: run.missing,
      });
    });
  } finally {
    await started.stop();
  }
  return samples;
}
