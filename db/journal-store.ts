import Database from 'better-sqlite3';
import { and, asc, desc, eq, getTableColumns, gt, lt, lte, ne, notExists, or, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/sqlite-core';
import { GroupCommit, type GroupCommitOptions, type GroupCommitStats } from './group-commit.ts';
import { type ClaimRow, entryRowOfTuple, type NewEntryRow } from './journal-rules.ts';
import { ChainedJournal, type Seal } from './journal-base.ts';
import type { SealLookups } from './journal-seal-reads.ts';
import type { JournalClock } from './journal-memory.ts';
import type { JournalDb } from './open.ts';
import { connectionLock, portErrorOf, refuseClosed } from './connection.ts';
import { claims, type EntryRow, entries, journalSeals } from './schema.ts';

export { type JournalClock, MemoryJournal } from './journal-memory.ts';

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
    sealAt: db.select({ globalHash: journalSeals.globalHash }).from(journalSeals).where(eq(journalSeals.seq, sql.placeholder('seq'))).prepare(),
    sealBelow: db
      .select({ globalHash: journalSeals.globalHash })
      .from(journalSeals)
      .where(lt(journalSeals.seq, sql.placeholder('seq')))
      .orderBy(desc(journalSeals.seq))
      .limit(1)
      .prepare(),
    // The (effect_id, seq) index answers each chain's count and last seq; the ids come as one JSON array.
    chainEnds: clientOf(db)
      .prepare(
        `SELECT e.seq, e.effect_id, e.kind, e.prev, e.hash, e.closes, e.ts_ms, e.body, e.reserves, g.n
         FROM (SELECT effect_id, max(seq) AS last, count(*) AS n FROM entries
               WHERE effect_id IN (SELECT value FROM json_each(?)) AND seq <= ? GROUP BY effect_id) AS g
         JOIN entries AS e ON e.seq = g.last`,
      )
      .raw(),
    // One chain with each entry's seal and the newest seal below it, for `sealedChain`: the
    // (effect_id, seq) index gives the rows, the seals' primary key each seal. Two lookups a row
    // through drizzle were most of the cost of the background pass's check of the derived tables.
    chainWithSeals: clientOf(db)
      .prepare(
        `SELECT e.seq, e.effect_id, e.kind, e.prev, e.hash, e.closes, e.ts_ms, e.body, e.reserves, s.global_hash,
                (SELECT b.global_hash FROM journal_seals AS b WHERE b.seq < e.seq ORDER BY b.seq DESC LIMIT 1)
         FROM entries AS e LEFT JOIN journal_seals AS s ON s.seq = e.seq
         WHERE e.effect_id = ? ORDER BY e.seq`,
      )
      .raw(),
    // The same for several chains at once (their ids one JSON array), chain by chain.
    chainsWithSeals: clientOf(db)
      .prepare(
        `SELECT e.seq, e.effect_id, e.kind, e.prev, e.hash, e.closes, e.ts_ms, e.body, e.reserves, s.global_hash,
                (SELECT b.global_hash FROM journal_seals AS b WHERE b.seq < e.seq ORDER BY b.seq DESC LIMIT 1)
         FROM entries AS e LEFT JOIN journal_seals AS s ON s.seq = e.seq
         WHERE e.effect_id IN (SELECT value FROM json_each(?)) ORDER BY e.effect_id, e.seq`,
      )
      .raw(),
    // The (effect_id, seq) index answers it in order, a page at a time.
    effectIdsAfter: db
      .selectDistinct({ effectId: entries.effectId })
      .from(entries)
      .where(gt(entries.effectId, sql.placeholder('after')))
      .orderBy(asc(entries.effectId))
      .limit(sql.placeholder('limit'))
      .prepare(),
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
 * committed. `BEGIN IMMEDIATE`, `COMMIT`, `ROLLBACK` and the savepoints are issued by hand, since
 * the steps are asynchronous, under the connection's lock (`connectionLock`), which each read
 * takes too: a read never runs inside an open batch, so it sees only committed rows. A read runs
 * in a read transaction of its own, so its statements (a head is two) see one snapshot under WAL,
 * and never wait for another process's writer. A busy lock fails with the port's StoreBusyError, and
 * work that reaches the connection after the storage closed with StoreClosedError.
 */
export class SqliteJournal extends ChainedJournal<Queries> {
  readonly #queries: Queries;
  readonly #commits: GroupCommit<Queries>;
  readonly #read: <T>(fn: (q: Queries) => Promise<T>) => Promise<T>;

  constructor(options: { db: JournalDb; groupCommit?: GroupCommitOptions } & JournalClock) {
    super(options.wallClockMs);
    const db = options.db;
    const queries = prepareQueries(db);
    // Compiled once, on the connection drizzle was given. better-sqlite3's own transaction()
    // refuses an asynchronous function, so the statements it would run are run here.
    const client = clientOf(db);
    const begin = client.prepare('BEGIN IMMEDIATE');
    const commit = client.prepare('COMMIT');
    const rollback = client.prepare('ROLLBACK');
    const savepoint = client.prepare('SAVEPOINT isolated_step');
    const release = client.prepare('RELEASE isolated_step');
    const rollbackTo = client.prepare('ROLLBACK TO isolated_step');
    const beginRead = client.prepare('BEGIN DEFERRED');
    const lock = connectionLock(client);
    this.#queries = queries;
    this.#read = <T>(fn: (q: Queries) => Promise<T>): Promise<T> =>
      lock.run(async () => {
        refuseClosed(client);
        beginRead.run();
        try {
          return await fn(queries);
        } finally {
          // A read transaction that wrote nothing: COMMIT and ROLLBACK alike just end it.
          if (client.inTransaction) commit.run();
        }
      });
    this.#commits = new GroupCommit<Queries>(
      {
        transaction: <T>(fn: (q: Queries) => Promise<T>): Promise<T> =>
          lock.run(async () => {
            refuseClosed(client);
            begin.run();
            try {
              const result = await fn(queries);
              commit.run();
              return result;
            } catch (error) {
              // A failed COMMIT leaves the transaction open; SQLite may have rolled it back already.
              if (client.inTransaction) rollback.run();
              throw error;
            }
          }),
        isolated: async <T>(_queries: Queries, fn: (q: Queries) => Promise<T>): Promise<T> => {
          if (!client.inTransaction) throw new Error('an isolated step must run inside the batch transaction');
          savepoint.run();
          try {
            const result = await fn(queries);
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

  /** The prepared queries, for a subclass that reads its own way (a test's planted store). */
  protected get queries(): Queries {
    return this.#queries;
  }

  /** How group commit has batched this journal's writes so far. */
  get commitStats(): GroupCommitStats {
    return this.#commits.stats;
  }

  protected async exclusive<T>(fn: (q: Queries) => Promise<T>): Promise<T> {
    try {
      return await this.#commits.submit(fn);
    } catch (error) {
      throw portErrorOf(error);
    }
  }

  protected async snapshot<T>(fn: (q: Queries) => Promise<T>): Promise<T> {
    try {
      return await this.#read(fn);
    } catch (error) {
      throw portErrorOf(error);
    }
  }

  protected async chainRows(q: Queries, effectId: string): Promise<EntryRow[]> {
    return q.chain.all({ effectId });
  }

  protected async lastRow(q: Queries, effectId: string): Promise<EntryRow | undefined> {
    return q.last.get({ effectId });
  }

  protected async insertRow(q: Queries, row: NewEntryRow): Promise<number> {
    // `seq` is the rowid, so the insert's own answer names it; `RETURNING` cost several times
    // the insert itself in better-sqlite3 (see results/bench.md).
    return Number(q.insert.run(row).lastInsertRowid);
  }

  protected async takeClaim(q: Queries, claim: ClaimRow, nowMs: number): Promise<boolean> {
    return q.takeClaim.run({ ...claim, nowMs }).changes === 1;
  }

  protected async putClaim(q: Queries, claim: ClaimRow): Promise<void> {
    q.putClaim.run({ ...claim });
  }

  protected async dropClaim(q: Queries, effectId: string, owner: string): Promise<void> {
    q.dropClaim.run({ effectId, owner });
  }

  protected async openDispatchRows(q: Queries): Promise<EntryRow[]> {
    return firstPerEffect(q.openDispatches.all());
  }

  protected async openReservationRows(q: Queries, key: string): Promise<EntryRow[]> {
    return firstPerEffect(q.openReservations.all({ key }));
  }

  protected async reservationSeq(q: Queries, key: string): Promise<number> {
    return q.reservationSeq.get({ key })?.seq ?? 0;
  }

  protected async reservedSince(q: Queries, key: string, afterSeq: number, effectId: string): Promise<boolean> {
    return q.reservedSince.get({ key, afterSeq, effectId }) !== undefined;
  }

  protected async lastSeal(q: Queries): Promise<Seal | undefined> {
    return q.lastSeal.get();
  }

  protected async insertSeal(q: Queries, seal: Seal): Promise<void> {
    q.insertSeal.run({ ...seal });
  }

  protected async sealsBetween(q: Queries, afterSeq: number, throughSeq: number): Promise<Seal[]> {
    return q.sealsBetween.all({ afterSeq, throughSeq });
  }

  protected async entryCount(q: Queries): Promise<number> {
    return q.entryCount.get()?.n ?? 0;
  }

  protected async sealAtSeq(q: Queries, seq: number): Promise<string | undefined> {
    return q.sealAt.get({ seq })?.globalHash;
  }

  protected async sealBelow(q: Queries, seq: number): Promise<string | undefined> {
    return q.sealBelow.get({ seq })?.globalHash;
  }

  protected async chainEndRows(q: Queries, effectIds: readonly string[], throughSeq: number): Promise<Array<{ row: EntryRow; length: number }>> {
    return q.chainEnds.all(JSON.stringify(effectIds), throughSeq).map((t) => {
      if (!Array.isArray(t)) throw new TypeError('a chain end is read as a tuple');
      return { row: entryRowOfTuple(t.slice(0, 9)), length: Number(t[9]) };
    });
  }

  protected override async chainWithSeals(q: Queries, effectId: string): Promise<{ rows: EntryRow[]; seals: SealLookups }> {
    return withSeals(q.chainWithSeals.all(effectId)).get(effectId) ?? noRows();
  }

  protected override async chainsWithSeals(q: Queries, effectIds: readonly string[]): Promise<Array<{ rows: EntryRow[]; seals: SealLookups }>> {
    const read = withSeals(q.chainsWithSeals.all(JSON.stringify([...new Set(effectIds)])));
    return effectIds.map((effectId) => read.get(effectId) ?? noRows());
  }

  protected async effectIdsAfter(q: Queries, after: string, limit: number): Promise<string[]> {
    return q.effectIdsAfter.all({ after, limit }).map((row) => row.effectId);
  }

  protected async rowsAfter(q: Queries, afterSeq: number, limit: number): Promise<EntryRow[]> {
    // A replay reads every row through here. drizzle's generic row mapping cost a third of the
    // read, so the tuples are mapped by hand, in the column order of `entries` (see `EntryTuple`).
    return q.after.values({ afterSeq, limit }).map(entryRowOfTuple);
  }
}

/** A chain with no rows. */
const noRows = (): { rows: EntryRow[]; seals: SealLookups } => ({ rows: [], seals: { at: async () => undefined, below: async () => undefined } });

/** Rows read with their seals (the columns of `entries`, the seal, the seal below it), grouped by chain in the order read. */
function withSeals(tuples: unknown[]): Map<string, { rows: EntryRow[]; seals: SealLookups }> {
  const chains = new Map<string, { rows: EntryRow[]; at: Map<number, string>; below: Map<number, string> }>();
  for (const t of tuples) {
    if (!Array.isArray(t)) throw new TypeError('a chain row is read as a tuple');
    const row = entryRowOfTuple(t.slice(0, 9));
    let chain = chains.get(row.effectId);
    if (chain === undefined) {
      chain = { rows: [], at: new Map(), below: new Map() };
      chains.set(row.effectId, chain);
    }
    chain.rows.push(row);
    if (typeof t[9] === 'string') chain.at.set(row.seq, t[9]);
    if (typeof t[10] === 'string') chain.below.set(row.seq, t[10]);
  }
  const read = new Map<string, { rows: EntryRow[]; seals: SealLookups }>();
  for (const [effectId, { rows, at, below }] of chains) read.set(effectId, { rows, seals: { at: async (seq) => at.get(seq), below: async (seq) => below.get(seq) } });
  return read;
}

// An effect dispatched twice without a close in between has two open rows; it is in flight once.
function firstPerEffect(rows: EntryRow[]): EntryRow[] {
  const first = new Map<string, EntryRow>();
  for (const row of rows) if (!first.has(row.effectId)) first.set(row.effectId, row);
  return [...first.values()];
}
