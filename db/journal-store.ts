import Database from 'better-sqlite3';
import { and, asc, desc, eq, getTableColumns, gt, lte, ne, notExists, or, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/sqlite-core';
import { GroupCommit, type GroupCommitOptions, type GroupCommitStats } from './group-commit.ts';
import { type ClaimRow, claimIsFree, entryRowOfTuple, type NewEntryRow } from './journal-rules.ts';
import { ChainedJournal, type Seal } from './journal-base.ts';
import type { JournalDb } from './open.ts';
import { claims, type EntryRow, entries, journalSeals } from './schema.ts';

/** What a journal needs besides its storage: the wall clock that stamps `ts_ms` and times claims. */
export interface JournalClock {
  wallClockMs: () => number;
}

const later = alias(entries, 'later');
const effectIdParam = sql.placeholder('effectId');
const ownerParam = sql.placeholder('owner');
const expiresParam = sql.placeholder('expiresMs');
/** On a conflict, the claim becomes the one being inserted. */
const takeIncoming = { owner: sql`excluded.owner`, expiresMs: sql`excluded.expires_ms` };

/**
 * Every query of the journal, compiled once per connection. Building and compiling the SQL on
 * each call was the largest cost of a write (see results/bench.md); a prepared query runs the
 * same SQL, so it sees the same transaction as the connection it was prepared on.
 */
function prepareQueries(db: JournalDb) {
  const closedSince = db
    .select({ one: sql`1` })
    .from(later)
    .where(and(eq(later.effectId, entries.effectId), eq(later.closes, 1), gt(later.seq, entries.seq)));
  return {
    chain: db.select().from(entries).where(eq(entries.effectId, effectIdParam)).orderBy(asc(entries.seq)).prepare(),
    last: db.select().from(entries).where(eq(entries.effectId, effectIdParam)).orderBy(desc(entries.seq)).limit(1).prepare(),
    insert: db
      .insert(entries)
      .values({
        effectId: effectIdParam,
        kind: sql.placeholder('kind'),
        prev: sql.placeholder('prev'),
        hash: sql.placeholder('hash'),
        closes: sql.placeholder('closes'),
        tsMs: sql.placeholder('tsMs'),
        body: sql.placeholder('body'),
        reserves: sql.placeholder('reserves'),
      })
      .prepare(),
    // One upsert that states claimIsFree in SQL: a row is written, so `changes` is 1, exactly
    // when there was no claim, or the same owner holds it, or it expired at or before now.
    takeClaim: db
      .insert(claims)
      .values({ effectId: effectIdParam, owner: ownerParam, expiresMs: expiresParam })
      .onConflictDoUpdate({
        target: claims.effectId,
        set: takeIncoming,
        setWhere: or(eq(claims.owner, ownerParam), sql`${claims.expiresMs} <= ${sql.placeholder('nowMs')}`),
      })
      .prepare(),
    putClaim: db
      .insert(claims)
      .values({ effectId: effectIdParam, owner: ownerParam, expiresMs: expiresParam })
      .onConflictDoUpdate({ target: claims.effectId, set: takeIncoming })
      .prepare(),
    dropClaim: db
      .delete(claims)
      .where(and(eq(claims.effectId, effectIdParam), eq(claims.owner, ownerParam)))
      .prepare(),
    // A DISPATCHED is open while no closing entry of its effect has a higher seq; the kind index
    // finds the dispatches and (effect_id, seq) answers the NOT EXISTS, so nothing is replayed.
    openDispatches: db
      .select()
      .from(entries)
      .where(and(eq(entries.kind, 'DISPATCHED'), notExists(closedSince)))
      .orderBy(asc(entries.seq))
      .prepare(),
    openReservations: db
      .select()
      .from(entries)
      .where(and(eq(entries.reserves, sql.placeholder('key')), notExists(closedSince)))
      .orderBy(asc(entries.seq))
      .prepare(),
    reservationSeq: db
      .select({ seq: sql<number | null>`max(${entries.seq})` })
      .from(entries)
      .where(eq(entries.reserves, sql.placeholder('key')))
      .prepare(),
    reservedSince: db
      .select({ one: sql`1` })
      .from(entries)
      .where(and(eq(entries.reserves, sql.placeholder('key')), gt(entries.seq, sql.placeholder('afterSeq')), ne(entries.effectId, effectIdParam)))
      .limit(1)
      .prepare(),
    lastSeal: db.select().from(journalSeals).orderBy(desc(journalSeals.seq)).limit(1).prepare(),
    insertSeal: db.insert(journalSeals).values({ seq: sql.placeholder('seq'), globalHash: sql.placeholder('globalHash') }).prepare(),
    sealsBetween: db
      .select()
      .from(journalSeals)
      .where(and(gt(journalSeals.seq, sql.placeholder('afterSeq')), lte(journalSeals.seq, sql.placeholder('throughSeq'))))
      .orderBy(asc(journalSeals.seq))
      .prepare(),
    entryCount: db.select({ n: sql<number>`count(*)` }).from(entries).prepare(),
    after: db
      .select()
      .from(entries)
      .where(gt(entries.seq, sql.placeholder('afterSeq')))
      .orderBy(asc(entries.seq))
      .limit(sql.placeholder('limit'))
      .prepare(),
  };
}

/** The connection drizzle was given: drizzle() keeps it as `$client`, which the JournalDb type does not declare. */
function clientOf(db: JournalDb): Database.Database {
  if (!('$client' in db) || !(db.$client instanceof Database)) throw new Error('the journal needs a drizzle handle over a better-sqlite3 connection');
  return db.$client;
}

// `select()` reads a table's columns in the order the schema declares them; the tuple must agree.
if (Object.keys(getTableColumns(entries)).join() !== 'seq,effectId,kind,prev,hash,closes,tsMs,body,reserves') {
  throw new Error('the columns of entries changed: update EntryTuple (journal-rules.ts) and rowsAfter');
}

/** The prepared queries a journal step runs: the `Tx` of the SQLite backend. */
type Queries = ReturnType<typeof prepareQueries>;

/**
 * The journal on SQLite. Writes are group-committed: the writes of concurrent callers run in one
 * `BEGIN IMMEDIATE` (one fsync), each in its own savepoint, in the order they were made. The
 * write lock is held before any chain is read, so a check sees every earlier append from any
 * process and every earlier write of its batch; no write's promise settles before its batch
 * committed. Each read is one SELECT, which under WAL reads one consistent snapshot and never
 * waits for the writer.
 */
export class SqliteJournal extends ChainedJournal<Queries> {
  readonly #queries: Queries;
  readonly #commits: GroupCommit<Queries>;

  constructor(options: { db: JournalDb; groupCommit?: GroupCommitOptions } & JournalClock) {
    super(options.wallClockMs);
    const db = options.db;
    const queries = prepareQueries(db);
    // drizzle's own nested transaction builds and compiles its SAVEPOINT statements on every
    // call; these are compiled once, on the connection drizzle was given, and run the way
    // better-sqlite3's nested transaction runs its own.
    const client = clientOf(db);
    const savepoint = client.prepare('SAVEPOINT isolated_step');
    const release = client.prepare('RELEASE isolated_step');
    const rollbackTo = client.prepare('ROLLBACK TO isolated_step');
    this.#queries = queries;
    this.#commits = new GroupCommit<Queries>(
      {
        transaction: (fn) => db.transaction(() => fn(queries), { behavior: 'immediate' }),
        isolated: <T>(_queries: Queries, fn: (q: Queries) => T): T => {
          if (!client.inTransaction) throw new Error('an isolated step must run inside the batch transaction');
          savepoint.run();
          try {
            const result = fn(queries);
            release.run();
            return result;
          } catch (error) {
            // Undo what the step wrote and close its savepoint, unless SQLite already rolled the
            // whole transaction back (then the batch fails and runs again).
            if (client.inTransaction) {
              rollbackTo.run();
              release.run();
            }
            throw error;
          }
        },
      },
      options.groupCommit,
    );
  }

  /** How group commit has batched this journal's writes so far. */
  get commitStats(): GroupCommitStats {
    return this.#commits.stats;
  }

  protected exclusive<T>(fn: (q: Queries) => T): Promise<T> {
    return this.#commits.submit(fn);
  }

  protected snapshot<T>(fn: (q: Queries) => T): T {
    // Every read step is a single SELECT: SQLite runs it on one snapshot without a transaction.
    return fn(this.#queries);
  }

  protected chainRows(q: Queries, effectId: string): EntryRow[] {
    return q.chain.all({ effectId });
  }

  protected lastRow(q: Queries, effectId: string): EntryRow | undefined {
    return q.last.get({ effectId });
  }

  protected insertRow(q: Queries, row: NewEntryRow): number {
    // `seq` is the rowid, so the insert's own answer names it; `RETURNING` cost several times
    // the insert itself in better-sqlite3 (see results/bench.md).
    return Number(q.insert.run(row).lastInsertRowid);
  }

  protected takeClaim(q: Queries, claim: ClaimRow, nowMs: number): boolean {
    return q.takeClaim.run({ ...claim, nowMs }).changes === 1;
  }

  protected putClaim(q: Queries, claim: ClaimRow): void {
    q.putClaim.run({ ...claim });
  }

  protected dropClaim(q: Queries, effectId: string, owner: string): void {
    q.dropClaim.run({ effectId, owner });
  }

  protected openDispatchRows(q: Queries): EntryRow[] {
    return firstPerEffect(q.openDispatches.all());
  }

  protected openReservationRows(q: Queries, key: string): EntryRow[] {
    return firstPerEffect(q.openReservations.all({ key }));
  }

  protected reservationSeq(q: Queries, key: string): number {
    return q.reservationSeq.get({ key })?.seq ?? 0;
  }

  protected reservedSince(q: Queries, key: string, afterSeq: number, effectId: string): boolean {
    return q.reservedSince.get({ key, afterSeq, effectId }) !== undefined;
  }

  protected lastSeal(q: Queries): Seal | undefined {
    return q.lastSeal.get();
  }

  protected insertSeal(q: Queries, seal: Seal): void {
    q.insertSeal.run({ ...seal });
  }

  protected sealsBetween(q: Queries, afterSeq: number, throughSeq: number): Seal[] {
    return q.sealsBetween.all({ afterSeq, throughSeq });
  }

  protected entryCount(q: Queries): number {
    return q.entryCount.get()?.n ?? 0;
  }

  protected rowsAfter(q: Queries, afterSeq: number, limit: number): EntryRow[] {
    // A replay reads every row through here. drizzle's generic row mapping cost a third of the
    // read, so the tuples are mapped by hand, in the column order of `entries` (see `EntryTuple`).
    return q.after.values({ afterSeq, limit }).map(entryRowOfTuple);
  }
}

/** The memory backend's whole state. */
interface MemoryState {
  rows: EntryRow[];
  seals: Seal[];
  claims: Map<string, ClaimRow>;
}

/**
 * The same journal held in arrays, for fast pure tests and experiments. Rows keep the entry as
 * JSON text like SQLite does, so a caller mutating a returned entry cannot change the journal,
 * and every read goes through the same checks. Work is synchronous, so each call is atomic.
 */
export class MemoryJournal extends ChainedJournal<MemoryState> {
  readonly #state: MemoryState = { rows: [], seals: [], claims: new Map() };

  constructor(options: JournalClock) {
    super(options.wallClockMs);
  }

  protected async exclusive<T>(fn: (tx: MemoryState) => T): Promise<T> {
    // Work is synchronous, at the call, as it always was. Rows are only ever appended, so rolling back a failed write means trimming what it added.
    const rowCount = this.#state.rows.length;
    const sealCount = this.#state.seals.length;
    const claimsBefore = new Map(this.#state.claims);
    try {
      return fn(this.#state);
    } catch (error) {
      this.#state.rows.length = rowCount;
      this.#state.seals.length = sealCount;
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

  protected openReservationRows(tx: MemoryState, key: string): EntryRow[] {
    return this.openDispatchRows(tx).filter((row) => row.reserves === key);
  }

  protected reservationSeq(tx: MemoryState, key: string): number {
    return tx.rows.findLast((row) => row.reserves === key)?.seq ?? 0;
  }

  protected reservedSince(tx: MemoryState, key: string, afterSeq: number, effectId: string): boolean {
    return tx.rows.some((row) => row.reserves === key && row.seq > afterSeq && row.effectId !== effectId);
  }

  protected lastSeal(tx: MemoryState): Seal | undefined {
    const last = tx.seals.at(-1);
    return last === undefined ? undefined : { ...last };
  }

  protected insertSeal(tx: MemoryState, seal: Seal): void {
    tx.seals.push({ ...seal });
  }

  protected sealsBetween(tx: MemoryState, afterSeq: number, throughSeq: number): Seal[] {
    return tx.seals.filter((seal) => seal.seq > afterSeq && seal.seq <= throughSeq).map((seal) => ({ ...seal }));
  }

  protected entryCount(tx: MemoryState): number {
    return tx.rows.length;
  }
}

// An effect dispatched twice without a close in between has two open rows; it is in flight once.
function firstPerEffect(rows: EntryRow[]): EntryRow[] {
  const first = new Map<string, EntryRow>();
  for (const row of rows) if (!first.has(row.effectId)) first.set(row.effectId, row);
  return [...first.values()];
}
