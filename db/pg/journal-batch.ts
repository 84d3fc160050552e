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

/** The head row: the newest entry's seq and global hash (0 and null for none), and the entries' count. */
export interface Head {
  seq: number;
  globalHash: string | null;
  size: number;
}

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

/**
 * What a journal step runs against: a client of the pool inside a transaction, and the head as
 * that transaction sees it. A write locked the head row with its first statement and moves it here
 * as it seals (`rowSeq` is the seq its newest row took); a read loads it once, when first asked.
 * A write keeps the rows, seals and claim changes it makes here, in order, and sends them in one
 * statement before it moves the head (or before any statement that must see them): `sent` is how
 * many of each the database has. `fetched` is what the batch's writes read, taken under the lock;
 * `step` marks where the isolated step under way began, and whether it set a savepoint.
 */
export interface PgTx {
  client: pg.PoolClient;
  head: Head | null;
  rowSeq: number;
  rows: EntryRow[];
  seals: Seal[];
  claims: ClaimChange[];
  sent: Marks;
  fetched: Fetched | null;
  step: (Marks & { savepoint: boolean }) | null;
}

/** A transaction's state before it wrote anything. */
export function txOf(client: pg.PoolClient, head: Head | null): PgTx {
  return { client, head, rowSeq: head?.seq ?? 0, rows: [], seals: [], claims: [], sent: { rows: 0, seals: 0, claims: 0 }, fetched: null, step: null };
}

/** How many rows, seals and claim changes the transaction holds now. */
function marksOf(tx: PgTx): Marks {
  return { rows: tx.rows.length, seals: tx.seals.length, claims: tx.claims.length };
}

/** Run one write of a batch so that, if it throws, only what it wrote (and moved of the head) is undone. */
export async function isolatedStep<T>(tx: PgTx, fn: (tx: PgTx) => Promise<T>): Promise<T> {
  const head = { ...tx.head! };
  const rowSeq = tx.rowSeq;
  const step = { ...marksOf(tx), savepoint: false };
  tx.step = step;
  try {
    const result = await fn(tx);
    if (step.savepoint) await tx.client.query('RELEASE SAVEPOINT isolated_step');
    return result;
  } catch (error) {
    // Undo what the step wrote (kept, or sent after its savepoint), and what it moved of the
    // head, then go on with the batch.
    if (step.savepoint) {
      await tx.client.query('ROLLBACK TO SAVEPOINT isolated_step');
      await tx.client.query('RELEASE SAVEPOINT isolated_step');
    }
    tx.rows.length = step.rows;
    tx.seals.length = step.seals;
    tx.claims.length = step.claims;
    tx.sent = { rows: Math.min(tx.sent.rows, step.rows), seals: Math.min(tx.sent.seals, step.seals), claims: Math.min(tx.sent.claims, step.claims) };
    tx.head = head;
    tx.rowSeq = rowSeq;
    throw error;
  } finally {
    tx.step = null;
  }
}

/**
 * Make the database hold everything the transaction wrote, before a statement that must see it
 * or write beside it. Inside a step, what earlier steps wrote is sent first and a savepoint set,
 * so the step's own statements can still be undone alone.
 */
export async function syncWrites(tx: PgTx): Promise<pg.PoolClient> {
  const step = tx.step;
  if (step !== null && !step.savepoint) {
    await sendUpTo(tx, step);
    await tx.client.query('SAVEPOINT isolated_step');
    step.savepoint = true;
  }
  await sendUpTo(tx, marksOf(tx));
  return tx.client;
}

async function sendUpTo(tx: PgTx, to: Marks): Promise<void> {
  const { sent } = tx;
  await sendWrites(tx.client, tx.rows.slice(sent.rows, to.rows), tx.seals.slice(sent.seals, to.seals), tx.claims.slice(sent.claims, to.claims));
  tx.sent = { rows: Math.max(sent.rows, to.rows), seals: Math.max(sent.seals, to.seals), claims: Math.max(sent.claims, to.claims) };
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

/** Send rows, seals and claim changes in one statement; nothing when there is none. */
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
