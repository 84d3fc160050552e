import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { openDatabase } from '../db/open.ts';

/** Requests in flight at once while the old requests and receipts are read. */
const READ_CONCURRENCY = 4;

/** A process's peak resident memory so far, in MiB, read from outside it (/proc/<pid>/status VmHWM). */
export function peakRssMib(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) / 1024;
}

/** An old request: its effect id (the item and its receipt) and the id its agent asked with. */
export interface OldRequest {
  effectId: string;
  requestId: string;
}

/**
 * Up to `count` distinct requests whose PROPOSED entries sit at random seqs of the journal at
 * `file` (closed, read before a server opens it): every chain begins with one.
 */
export function randomRequests(file: string, count: number): OldRequest[] {
  const opened = openDatabase(file);
  try {
    const last = (opened.sqlite.prepare('SELECT max(seq) FROM entries').pluck().get() as number | null) ?? 0;
    const at = opened.sqlite.prepare<[number], { effect_id: string; body: string }>("SELECT effect_id, body FROM entries WHERE seq >= ? AND kind = 'PROPOSED' ORDER BY seq LIMIT 1");
    const found = new Map<string, string>();
    for (let tries = 0; found.size < count && tries < count * 4 && last > 0; tries++) {
      const row = at.get(1 + Math.floor(Math.random() * last));
      if (row === undefined) continue;
      const requestId = (JSON.parse(row.body) as { request?: { id?: unknown } }).request?.id;
      if (typeof requestId === 'string') found.set(row.effect_id, requestId);
    }
    return [...found].map(([effectId, requestId]) => ({ effectId, requestId }));
  } finally {
    opened.close();
  }
}

async function timedGet(url: string, cookie: string): Promise<number> {
  const startMs = performance.now();
  const answer = await fetch(url, { headers: { cookie } });
  await answer.arrayBuffer();
  if (answer.status !== 200) throw new Error(`GET ${url} answered ${answer.status}`);
  return performance.now() - startMs;
}

/** What a person's first look at a started server costs. */
export interface FirstPages {
  inboxMs: number;
  scoreboardMs: number;
  ledgerMs: number;
  /** Old requests read (each as its agent, and its receipt as finance), and receipts answered 404 (open ones). */
  itemsRead: number;
  notFound: number;
  /** Item pages read by finance: each reads the payment from Stripe, paced by the Stripe budget's display share. */
  itemPages: number;
}

/** The agent whose requests the generated journals hold, by the shipped config's demo token. */
export const AGENT_TOKEN = 'sk_agent_demo_support_bot';
/** Item pages read per run: each costs a paced Stripe read (about one a second), so a handful. */
const ITEM_PAGES = 20;

/**
 * The inbox, scoreboard and ledger's first pages, each timed; then every request of `old` as its
 * agent reads it (GET /v1/refunds/:request_id, 202 while open) and its receipt as finance reads
 * it; then the item pages of the first few. A receipt that answers 404 is counted; any other answer
 * fails the reads.
 */
export async function readAsPerson(url: string, cookie: string, old: readonly OldRequest[]): Promise<FirstPages> {
  const inboxMs = await timedGet(`${url}/api/inbox`, cookie);
  const scoreboardMs = await timedGet(`${url}/api/scoreboard`, cookie);
  const ledgerMs = await timedGet(`${url}/api/ledger`, cookie);
  let notFound = 0;
  const readOne = async (path: string, headers: Record<string, string>, alsoFine: number | null = null) => {
    const answer = await fetch(`${url}${path}`, { headers });
    await answer.arrayBuffer();
    if (answer.status === 404 && alsoFine === 404) notFound += 1;
    else if (answer.status !== 200 && answer.status !== alsoFine) throw new Error(`GET ${path} answered ${answer.status}`);
  };
  const agent = { authorization: `Bearer ${AGENT_TOKEN}` };
  const person = { cookie };
  const inTurn = async (count: number, read: (one: OldRequest) => Promise<void>) => {
    let next = 0;
    const worker = async () => {
      while (next < count) await read(old[next++]!);
    };
    await Promise.all(Array.from({ length: READ_CONCURRENCY }, worker));
  };
  await inTurn(old.length, async (one) => {
    await readOne(`/v1/refunds/${encodeURIComponent(one.requestId)}`, agent, 202);
    await readOne(`/api/ledger/${encodeURIComponent(one.effectId)}/receipt`, person, 404);
  });
  const itemPages = Math.min(ITEM_PAGES, old.length);
  await inTurn(itemPages, (one) => readOne(`/api/items/${encodeURIComponent(one.effectId)}`, person));
  return { inboxMs, scoreboardMs, ledgerMs, itemsRead: old.length, notFound, itemPages };
}
