import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { openDatabase } from '../db/open.ts';

/** Requests in flight at once while the old items and receipts are read. */
const READ_CONCURRENCY = 4;

/** A process's peak resident memory so far, in MiB, read from outside it (/proc/<pid>/status VmHWM). */
export function peakRssMib(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) / 1024;
}

/** Up to `count` distinct effect ids of entries at random seqs of the journal at `file` (closed, read before a server opens it). */
export function randomEffectIds(file: string, count: number): string[] {
  const opened = openDatabase(file);
  try {
    const last = (opened.sqlite.prepare('SELECT max(seq) FROM entries').pluck().get() as number | null) ?? 0;
    const at = opened.sqlite.prepare<[number], string>('SELECT effect_id FROM entries WHERE seq >= ? ORDER BY seq LIMIT 1').pluck();
    const ids = new Set<string>();
    for (let tries = 0; ids.size < count && tries < count * 4 && last > 0; tries++) {
      const id = at.get(1 + Math.floor(Math.random() * last));
      if (id !== undefined) ids.add(id);
    }
    return [...ids];
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
  /** Old items and receipts read, and those answered something other than 200. */
  itemsRead: number;
  notFound: number;
}

/**
 * The inbox, scoreboard and ledger's first pages, each timed, then every item of `effectIds`
 * and its receipt, as finance reads them. An item whose chain has no receipt yet (an open one)
 * answers 404, which is counted; any other answer but 200 fails the reads.
 */
export async function readAsPerson(url: string, cookie: string, effectIds: readonly string[]): Promise<FirstPages> {
  const inboxMs = await timedGet(`${url}/api/inbox`, cookie);
  const scoreboardMs = await timedGet(`${url}/api/scoreboard`, cookie);
  const ledgerMs = await timedGet(`${url}/api/ledger`, cookie);
  let next = 0;
  let notFound = 0;
  const readOne = async (path: string) => {
    const answer = await fetch(`${url}${path}`, { headers: { cookie } });
    await answer.arrayBuffer();
    if (answer.status === 404) notFound += 1;
    else if (answer.status !== 200) throw new Error(`GET ${path} answered ${answer.status}`);
  };
  const worker = async () => {
    while (next < effectIds.length) {
      const id = encodeURIComponent(effectIds[next++]!);
      await readOne(`/api/items/${id}`);
      await readOne(`/api/ledger/${id}/receipt`);
    }
  };
  await Promise.all(Array.from({ length: READ_CONCURRENCY }, worker));
  return { inboxMs, scoreboardMs, ledgerMs, itemsRead: effectIds.length, notFound };
}
