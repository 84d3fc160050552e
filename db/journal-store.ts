import { and, asc, desc, eq, gt, notExists, or, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/sqlite-core';
import { type ClaimRow, claimIsFree, type NewEntryRow } from './journal-rules.ts';
import { ChainedJournal } from './journal-base.ts';
import type { JournalDb } from './open.ts';
import { claims, type EntryRow, entries } from './schema.ts';

/** What a journal needs besides its storage: the wall clock that stamps `ts_ms` and times claims. */
export interface JournalClock {
  wallClockMs: () => number;
}

// A drizzle transaction and the database itself answer the same queries; the steps take either.
type SqlTx = Parameters<Parameters<JournalDb['transaction']>[0]>[0] | JournalDb;

const later = alias(entries, 'later');

/**
 * The journal on SQLite. Writes run in `BEGIN IMMEDIATE`, so the write lock is held before the
 * chain is read and a check sees every earlier append from any process; reads run in a deferred
 * transaction, which under WAL is a consistent snapshot that never waits for the writer.
 */
export class SqliteJournal extends ChainedJournal<SqlTx> {
  readonly #db: JournalDb;

  constructor(options: { db: JournalDb } & JournalClock) {
    super(options.wallClockMs);
    this.#db = options.db;
  }

  protected exclusive<T>(fn: (tx: SqlTx) => T): T {
    return this.#db.transaction(fn, { behavior: 'immediate' });
  }

  protected snapshot<T>(fn: (tx: SqlTx) => T): T {
    return this.#db.transaction(fn, { behavior: 'deferred' });
  }

  protected chainRows(tx: SqlTx, effectId: string): EntryRow[] {
    return tx.select().from(entries).where(eq(entries.effectId, effectId)).orderBy(asc(entries.seq)).all();
  }

  protected lastRow(tx: SqlTx, effectId: string): EntryRow | undefined {
    return tx.select().from(entries).where(eq(entries.effectId, effectId)).orderBy(desc(entries.seq)).limit(1).get();
  }

  protected insertRow(tx: SqlTx, row: NewEntryRow): number {
    return tx.insert(entries).values(row).returning({ seq: entries.seq }).get().seq;
  }

  protected takeClaim(tx: SqlTx, claim: ClaimRow, nowMs: number): boolean {
    // One upsert that states claimIsFree in SQL: a row is written, so `changes` is 1, exactly
    // when there was no claim, or the same owner holds it, or it expired at or before now.
    const result = tx
      .insert(claims)
      .values(claim)
      .onConflictDoUpdate({
        target: claims.effectId,
        set: { owner: claim.owner, expiresMs: claim.expiresMs },
        setWhere: or(eq(claims.owner, claim.owner), sql`${claims.expiresMs} <= ${nowMs}`),
      })
      .run();
    return result.changes === 1;
  }

  protected putClaim(tx: SqlTx, claim: ClaimRow): void {
    tx.insert(claims)
      .values(claim)
      .onConflictDoUpdate({ target: claims.effectId, set: { owner: claim.owner, expiresMs: claim.expiresMs } })
      .run();
  }

  protected dropClaim(tx: SqlTx, effectId: string, owner: string): void {
    tx.delete(claims)
      .where(and(eq(claims.effectId, effectId), eq(claims.owner, owner)))
      .run();
  }

  protected openDispatchRows(tx: SqlTx): EntryRow[] {
    // A DISPATCHED is open while no closing entry of its effect has a higher seq; the kind index
    // finds the dispatches and (effect_id, seq) answers the NOT EXISTS, so nothing is replayed.
    const closedSince = tx
      .select({ one: sql`1` })
      .from(later)
      .where(and(eq(later.effectId, entries.effectId), eq(later.closes, 1), gt(later.seq, entries.seq)));
    const rows = tx
      .select()
      .from(entries)
      .where(and(eq(entries.kind, 'DISPATCHED'), notExists(closedSince)))
      .orderBy(asc(entries.seq))
      .all();
    return firstPerEffect(rows);
  }

  protected rowsAfter(tx: SqlTx, afterSeq: number, limit: number): EntryRow[] {
    return tx.select().from(entries).where(gt(entries.seq, afterSeq)).orderBy(asc(entries.seq)).limit(limit).all();
  }
}

/** The memory backend's whole state. */
interface MemoryState {
  rows: EntryRow[];
  claims: Map<string, ClaimRow>;
}

/**
 * The same journal held in arrays, for fast pure tests and experiments. Rows keep the entry as
 * JSON text like SQLite does, so a caller mutating a returned entry cannot change the journal,
 * and every read goes through the same checks. Work is synchronous, so each call is atomic.
 */
export class MemoryJournal extends ChainedJournal<MemoryState> {
  readonly #state: MemoryState = { rows: [], claims: new Map() };

  constructor(options: JournalClock) {
    super(options.wallClockMs);
  }

  protected exclusive<T>(fn: (tx: MemoryState) => T): T {
    // Rows are only ever appended, so rolling back a failed write means trimming what it added.
    const rowCount = this.#state.rows.length;
    const claimsBefore = new Map(this.#state.claims);
    try {
      return fn(this.#state);
    } catch (error) {
      this.#state.rows.length = rowCount;
      this.#state.claims = claimsBefore;
      throw error;
    }
  }

  protected snapshot<T>(fn: (tx: MemoryState) => T): T {
    return fn(this.#state);
  }

  protected chainRows(tx: MemoryState, effectId: string): EntryRow[] {
    return tx.rows.filter((row) => row.effectId === effectId);
  }

  protected lastRow(tx: MemoryState, effectId: string): EntryRow | undefined {
    return tx.rows.findLast((row) => row.effectId === effectId);
  }

  protected insertRow(tx: MemoryState, row: NewEntryRow): number {
    // The schema's guards, for the one a caller can reach: sealing against the effect's last
    // entry under the lock already rules out a fork or a repeated hash.
    const secondCommit = row.kind === 'COMMITTED' && tx.rows.some((r) => r.effectId === row.effectId && r.kind === 'COMMITTED');
    if (secondCommit) throw new Error(`UNIQUE constraint failed: a second COMMITTED for effect ${row.effectId}`);
    const seq = (tx.rows.at(-1)?.seq ?? 0) + 1;
    tx.rows.push({ ...row, seq });
    return seq;
  }

  protected takeClaim(tx: MemoryState, claim: ClaimRow, nowMs: number): boolean {
    if (!claimIsFree(tx.claims.get(claim.effectId), claim.owner, nowMs)) return false;
    tx.claims.set(claim.effectId, claim);
    return true;
  }

  protected putClaim(tx: MemoryState, claim: ClaimRow): void {
    tx.claims.set(claim.effectId, claim);
  }

  protected dropClaim(tx: MemoryState, effectId: string, owner: string): void {
    if (tx.claims.get(effectId)?.owner === owner) tx.claims.delete(effectId);
  }

  protected openDispatchRows(tx: MemoryState): EntryRow[] {
    const open = new Map<string, EntryRow>();
    for (const row of tx.rows) {
      if (row.closes === 1) open.delete(row.effectId);
      else if (row.kind === 'DISPATCHED' && !open.has(row.effectId)) open.set(row.effectId, row);
    }
    return [...open.values()].sort((a, b) => a.seq - b.seq);
  }

  protected rowsAfter(tx: MemoryState, afterSeq: number, limit: number): EntryRow[] {
    return tx.rows.filter((row) => row.seq > afterSeq).slice(0, limit);
  }
}

// An effect dispatched twice without a close in between has two open rows; it is in flight once.
function firstPerEffect(rows: EntryRow[]): EntryRow[] {
  const first = new Map<string, EntryRow>();
  for (const row of rows) if (!first.has(row.effectId)) first.set(row.effectId, row);
  return [...first.values()];
}
