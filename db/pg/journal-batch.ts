import type pg from 'pg';
import type { WriteReads } from '../journal-base.ts';
import type { Seal } from '../journal-seal-reads.ts';
import { type ClaimRow, entryRowOfTuple } from '../journal-rules.ts';
import type { EntryRow } from '../schema.ts';
import { run } from './journal-queries.ts';

// A write transaction's batch on PostgreSQL: what its writes read, fetched for all of them in one
// statement right after the head row's lock, and what they write, kept here and sent in one
// statement before the head moves. So a batch holds the lock for a fixed number of round trips
// (the lock, the reads, the writes, the head, the commit), not for a few per write.

/** A claim set or dropped by a write of the batch, in the order the writes made them. */
export type ClaimChange = { put: ClaimRow } | { drop: { effectId: string; owner: string } };

/** What the batch's writes said they would read, as the database held it when the lock was taken. */
export interface Fetched {
  /** Each effect's rows, in seq order. */
  chains: Map<string, EntryRow[]>;
  /** Each effect's newest row, null for none. */
  lasts: Map<string, EntryRow | null>;
  /** Whether another effect's row reserved the key since the seq, by `guardKey`. */
  reserved: Map<string, boolean>;
}

/** How far the batch's writes reached when a step began, or had been sent to the database. */
export interface Marks {
  rows: number;
  seals: number;
  claims: number;
}

/** The key a reservation guard is fetched under. */
export function guardKey(key: string, afterSeq: number, effectId: string): string {
  return `${key}\u0000${afterSeq}\u0000${effectId}`;
}

/** Read, in one statement, what `hints` say the batch's writes will read. */
export async function fetchReads(client: pg.ClientBase, hints: readonly (WriteReads | undefined)[]): Promise<Fetched | null> {
  const chains = new Set<string>();
  const lasts = new Set<string>();
  const guards: Array<{ key: string; afterSeq: number; effectId: string }> = [];
  for (const hint of hints) {
    if (hint?.chain !== undefined) chains.add(hint.chain);
    if (hint?.last !== undefined) lasts.add(hint.last);
    if (hint?.guard !== undefined) guards.push(hint.guard);
  }
  if (chains.size + lasts.size + guards.length === 0) return null;
  const result = await run(client, 'prefetch', [[...chains], [...lasts], guards.map((g) => g.key), guards.map((g) => g.afterSeq), guards.map((g) => g.effectId)]);
  const fetched: Fetched = { chains: new Map(), lasts: new Map(), reserved: new Map() };
  for (const id of chains) fetched.chains.set(id, []);
  for (const id of lasts) fetched.lasts.set(id, null);
  for (const guard of guards) fetched.reserved.set(guardKey(guard.key, guard.afterSeq, guard.effectId), false);
  for (const tuple of result.rows) {
    const [tag, ...rest] = tuple;
    if (tag === 2) {
      const guard = guards[Number(rest[0]) - 1];
      if (guard === undefined) throw new TypeError('a reservation answer names no guard of the batch');
      fetched.reserved.set(guardKey(guard.key, guard.afterSeq, guard.effectId), true);
      continue;
    }
    const row = entryRowOfTuple(rest);
    if (tag === 0) fetched.chains.get(row.effectId)?.push(row);
    else if (tag === 1) fetched.lasts.set(row.effectId, row);
    else throw new TypeError(`a batch read answered an unknown tag ${String(tag)}`);
  }
  return fetched;
}

/**
 * The claims the changes leave, one action per effect, so one statement can make them all: the
 * last claim set on an effect stays, unless a drop by its owner came after it (the claim is then
 * removed, whoever held it before the batch); drops with no claim set before them in the batch
 * remove the claim only if one of their owners holds it.
 */
export function claimActions(changes: readonly ClaimChange[]): { put: ClaimRow[]; drop: Array<{ effectId: string; owner: string | null }> } {
  const state = new Map<string, { put: ClaimRow } | { gone: true } | { dropIf: string[] }>();
  for (const change of changes) {
    if ('put' in change) {
      state.set(change.put.effectId, { put: change.put });
      continue;
    }
    const { effectId, owner } = change.drop;
    const now = state.get(effectId);
    if (now === undefined) state.set(effectId, { dropIf: [owner] });
    else if ('put' in now && now.put.owner === owner) state.set(effectId, { gone: true });
    else if ('dropIf' in now) now.dropIf.push(owner);
  }
  const put: ClaimRow[] = [];
  const drop: Array<{ effectId: string; owner: string | null }> = [];
  for (const [effectId, now] of state) {
    if ('put' in now) put.push(now.put);
    else if ('gone' in now) drop.push({ effectId, owner: null });
    else for (const owner of now.dropIf) drop.push({ effectId, owner });
  }
  return { put, drop };
}

/** Send the rows, seals and claim changes of `from` up to `to` in one statement; nothing when there is none. */
export async function sendWrites(client: pg.ClientBase, rows: readonly EntryRow[], seals: readonly Seal[], changes: readonly ClaimChange[]): Promise<void> {
  if (rows.length + seals.length + changes.length === 0) return;
  const { put, drop } = claimActions(changes);
  const column = <K extends keyof EntryRow>(key: K) => rows.map((row) => row[key]);
  await run(client, 'flush', [
    column('seq'),
    column('effectId'),
    column('kind'),
    column('prev'),
    column('hash'),
    column('closes'),
    column('tsMs'),
    column('body'),
    column('reserves'),
    seals.map((s) => s.seq),
    seals.map((s) => s.globalHash),
    put.map((c) => c.effectId),
    put.map((c) => c.owner),
    put.map((c) => c.expiresMs),
    drop.map((d) => d.effectId),
    drop.map((d) => d.owner),
  ]);
}
