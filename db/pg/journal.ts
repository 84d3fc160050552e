import pg from 'pg';
import { GroupCommit, type GroupCommitOptions, type GroupCommitStats } from '../group-commit.ts';
import { ChainedJournal, type Seal, type WriteReads } from '../journal-base.ts';
import type { SealLookups } from '../journal-seal-reads.ts';
import { type ClaimRow, entryRowOfTuple, type NewEntryRow } from '../journal-rules.ts';
import { StoreCommitUnknownError } from '../port/errors.ts';
import type { EntryRow } from '../schema.ts';
import { fetchReads, guardKey, type Head, isolatedStep, type PgTx, syncWrites, txOf } from './journal-batch.ts';
import { BEGIN_AND_LOCK_HEAD, entryRows, run } from './journal-queries.ts';
import { checkIn, checkOut, inTransaction, portErrorOfPg } from './pool.ts';
import { lockHeldSince } from './timings.ts';
import { performance } from 'node:perf_hooks';

export type { Head, PgTx } from './journal-batch.ts';


/** A query's result read in rows of arrays. */
function isArrayResult(value: unknown): value is pg.QueryArrayResult {
  return typeof value === 'object' && value !== null && Array.isArray((value as { rows?: unknown }).rows);
}

function headOf(row: unknown[] | undefined): Head {
  if (row === undefined) throw new Error('journal_head has no row: the database was not migrated');
  const [seq, globalHash, size] = row;
  if (typeof seq !== 'number' || (globalHash !== null && typeof globalHash !== 'string') || typeof size !== 'number') {
    throw new TypeError('journal_head holds columns the schema does not allow');
  }
  return { seq, globalHash, size };
}

/**
 * The journal on PostgreSQL. Every write is one READ COMMITTED transaction whose first statement
 * locks the head row (`FOR UPDATE`), so the writers of every process and server queue there; under
 * the lock it reads the chain for a check, seals the entry, takes `seq = head + 1` (no sequence),
 * inserts the entry and its seal, moves the head and commits. So rows become visible in seq order
 * and a reader tailing `seq > cursor` never skips one. Validation and canonical JSON happen before
 * the lock (ChainedJournal), and nothing but the database is asked under it.
 *
 * A process's concurrent writes are group-committed: one transaction, in the order they were made
 * (db/group-commit.ts). What the batch's writes read (their chains, newest rows, reservation
 * guards) is read in one statement right after the lock; what they write is kept until the batch
 * ends and then sent in one statement, so the lock is held for a few round trips per batch, not per
 * write. A write that fails in its step is undone by dropping what it kept; a savepoint is set only
 * for a step that must send a statement of its own (a claim taken). Reads run on other clients of the pool, in a
 * REPEATABLE READ snapshot of their own, so they see committed writes only, and whole.
 */
export class PgJournal extends ChainedJournal<PgTx> {
  readonly #pool: pg.Pool;
  readonly #commits: GroupCommit<PgTx, WriteReads>;
  readonly #committed: (seq: number) => void;
  readonly #notify: string | null;

  /**
   * `committed` is told the journal's newest seq after each write that added entries commits;
   * `notify` names a channel each such write notifies (`pg_notify`, payload the newest seq) in the
   * statement that moves the head, so the signal goes out with the COMMIT and costs no round trip
   * of its own (the servers' wake-up).
   */
  constructor(options: { pool: pg.Pool; wallClockMs: () => number; groupCommit?: GroupCommitOptions; committed?: (seq: number) => void; notify?: string }) {
    super(options.wallClockMs);
    this.#pool = options.pool;
    this.#committed = options.committed ?? (() => {});
    this.#notify = options.notify ?? null;
    this.#commits = new GroupCommit<PgTx, WriteReads>(
      {
        transaction: (fn, hints) => this.#write(fn, hints),
        isolated: (tx, fn) => isolatedStep(tx, fn),
        mayRunAgain: (error) => !(error instanceof StoreCommitUnknownError),
      },
      options.groupCommit,
    );
  }

  /** How group commit has batched this journal's writes so far. */
  get commitStats(): GroupCommitStats {
    return this.#commits.stats;
  }

  /** Begin the transaction, lock the head row and read it (its first statement), in one round trip. */
  protected async lockHead(client: pg.PoolClient): Promise<Head> {
    // Two statements in one text: pg answers each statement's result, in order, in an array.
    const answers: unknown = await client.query({ text: BEGIN_AND_LOCK_HEAD, rowMode: 'array' });
    const locked = Array.isArray(answers) ? answers.at(-1) : answers;
    return headOf(isArrayResult(locked) ? locked.rows[0] : undefined);
  }

  /** The seq the next row of this write takes: the head's, plus one. */
  protected async takeSeq(tx: PgTx): Promise<number> {
    tx.rowSeq += 1;
    return tx.rowSeq;
  }

  /** Write the head this transaction moved to, before its commit. */
  protected async moveHead(tx: PgTx, from: Head): Promise<void> {
    const head = tx.head!;
    if (head.seq === from.seq && head.size === from.size) return;
    if (this.#notify !== null && head.seq > from.seq) await run(tx.client, 'moveHeadAndNotify', [head.seq, head.globalHash, head.size, this.#notify, String(head.seq)]);
    else await run(tx.client, 'moveHead', [head.seq, head.globalHash, head.size]);
  }

  async #write<T>(fn: (tx: PgTx) => Promise<T>, hints?: readonly (WriteReads | undefined)[]): Promise<T> {
    const client = await checkOut(this.#pool);
    let broken: Error | undefined;
    let lockedAtMs: number | null = null;
    try {
      const from = await this.lockHead(client);
      lockedAtMs = performance.now();
      const tx = txOf(client, { ...from });
      if (hints !== undefined) tx.fetched = await fetchReads(client, hints);
      const result = await fn(tx);
      await syncWrites(tx);
      await this.moveHead(tx, from);
      await commit(client);
      lockHeldSince(lockedAtMs);
      lockedAtMs = null;
      if (tx.head!.seq > from.seq) this.#committed(tx.head!.seq);
      return result;
    } catch (error) {
      // A connection that cannot even roll back is dropped from the pool rather than reused.
      await client.query('ROLLBACK').catch((rollbackError: Error) => {
        broken = rollbackError;
      });
      if (lockedAtMs !== null) lockHeldSince(lockedAtMs);
      throw error;
    } finally {
      checkIn(client, broken);
    }
  }

  protected async exclusive<T>(fn: (tx: PgTx) => Promise<T>, reads?: WriteReads): Promise<T> {
    try {
      return await this.#commits.submit(fn, reads);
    } catch (error) {
      throw portErrorOfPg(error);
    }
  }

  protected async snapshot<T>(fn: (tx: PgTx) => Promise<T>): Promise<T> {
    return inTransaction(this.#pool, 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', (client) => fn(txOf(client, null)));
  }

  /**
   * One statement sees one committed state on its own (READ COMMITTED): it runs on a client of the
   * pool with no BEGIN and COMMIT around it, one round trip instead of three.
   */
  protected override async snapshotOne<T>(fn: (tx: PgTx) => Promise<T>): Promise<T> {
    const client = await checkOut(this.#pool);
    try {
      return await fn(txOf(client, null));
    } catch (error) {
      throw portErrorOfPg(error);
    } finally {
      // A client whose connection was lost is ended by the pool rather than reused.
      checkIn(client);
    }
  }

  /** A scan's rows and their seals in one statement: one snapshot, one round trip. */
  protected override rowsAndSealsAfter(afterSeq: number, limit: number): Promise<{ rows: EntryRow[]; seals: Seal[] }> {
    return this.snapshotOne(async (tx) => {
      const rows: EntryRow[] = [];
      const seals: Seal[] = [];
      for (const tuple of (await run(tx.client, 'scan', [afterSeq, limit])).rows) {
        const [tag, ...rest] = tuple;
        if (tag === 0) rows.push(entryRowOfTuple(rest.slice(0, 9)));
        else if (tag === 1) seals.push(sealOf([rest[0], rest[9]]));
        else throw new TypeError(`a scan answered an unknown tag ${String(tag)}`);
      }
      return { rows, seals };
    });
  }

  /** A key's highest reserving seq and its open reservations, in one statement (so one snapshot). */
  protected override reservationRows(key: string): Promise<{ seq: number; rows: EntryRow[] }> {
    return this.snapshotOne(async (tx) => {
      let seq = 0;
      const rows: EntryRow[] = [];
      for (const tuple of (await run(tx.client, 'reservations', [key])).rows) {
        const [tag, ...rest] = tuple;
        if (tag === 0) rows.push(entryRowOfTuple(rest));
        else if (tag === 1 && (rest[0] === null || typeof rest[0] === 'number')) seq = rest[0] ?? 0;
        else throw new TypeError(`a reservations read answered an unknown tag ${String(tag)}`);
      }
      return { seq, rows: firstPerEffect(rows) };
    });
  }

  protected override chainSnapshot<T>(fn: (tx: PgTx) => Promise<T>): Promise<T> {
    return this.snapshotOne(fn);
  }

  /** One chain's rows with each one's seal and the seal below it, in one statement (so one snapshot). */
  protected override async chainWithSeals(tx: PgTx, effectId: string): Promise<{ rows: EntryRow[]; seals: SealLookups }> {
    const rows: EntryRow[] = [];
    const at = new Map<number, string>();
    const below = new Map<number, string>();
    for (const tuple of (await run(tx.client, 'sealedChain', [effectId])).rows) {
      const row = entryRowOfTuple(tuple.slice(0, 9));
      rows.push(row);
      const [own, before] = [tuple[9], tuple[10]];
      if ((own !== null && typeof own !== 'string') || (before !== null && typeof before !== 'string')) throw new TypeError('journal_seals holds columns the schema does not allow');
      if (own !== null) at.set(row.seq, own);
      if (before !== null) below.set(row.seq, before);
    }
    return { rows, seals: { at: async (seq) => at.get(seq), below: async (seq) => below.get(seq) } };
  }

  async #head(tx: PgTx): Promise<Head> {
    tx.head ??= headOf((await run(tx.client, 'head')).rows[0]);
    return tx.head;
  }

  // An effect's rows as the lock found them, when the batch read them then, and what this
  // transaction wrote of it since; otherwise the database's, once it holds what was written.
  protected async chainRows(tx: PgTx, effectId: string): Promise<EntryRow[]> {
    const fetched = tx.fetched?.chains.get(effectId);
    if (fetched !== undefined) return [...fetched, ...tx.rows.filter((row) => row.effectId === effectId)];
    return entryRows(await syncWrites(tx), 'chain', [effectId]);
  }

  protected async lastRow(tx: PgTx, effectId: string): Promise<EntryRow | undefined> {
    const chain = tx.fetched?.chains.get(effectId);
    const last = tx.fetched?.lasts.get(effectId);
    if (chain !== undefined || last !== undefined) {
      const written = tx.rows.findLast((row) => row.effectId === effectId);
      return written ?? (chain !== undefined ? chain.at(-1) : (last ?? undefined));
    }
    return (await entryRows(await syncWrites(tx), 'last', [effectId]))[0];
  }

  protected async insertRow(tx: PgTx, row: NewEntryRow): Promise<number> {
    const seq = await this.takeSeq(tx);
    tx.rows.push({ ...row, seq });
    const head = await this.#head(tx);
    head.size += 1;
    return seq;
  }

  protected async takeClaim(tx: PgTx, claim: ClaimRow, nowMs: number): Promise<boolean> {
    return (await run(await syncWrites(tx), 'takeClaim', [claim.effectId, claim.owner, claim.expiresMs, nowMs])).rowCount === 1;
  }

  protected async putClaim(tx: PgTx, claim: ClaimRow): Promise<void> {
    tx.claims.push({ put: { ...claim } });
  }

  protected async dropClaim(tx: PgTx, effectId: string, owner: string): Promise<void> {
    tx.claims.push({ drop: { effectId, owner } });
  }

  protected async openDispatchRows(tx: PgTx): Promise<EntryRow[]> {
    return firstPerEffect(await entryRows(tx.client, 'openDispatches', []));
  }

  protected async openReservationRows(tx: PgTx, key: string): Promise<EntryRow[]> {
    return firstPerEffect(await entryRows(tx.client, 'openReservations', [key]));
  }

  protected async reservationSeq(tx: PgTx, key: string): Promise<number> {
    const seq = (await run(tx.client, 'reservationSeq', [key])).rows[0]?.[0];
    return typeof seq === 'number' ? seq : 0;
  }

  protected async reservedSince(tx: PgTx, key: string, afterSeq: number, effectId: string): Promise<boolean> {
    const fetched = tx.fetched?.reserved.get(guardKey(key, afterSeq, effectId));
    if (fetched !== undefined) return fetched || tx.rows.some((row) => row.reserves === key && row.effectId !== effectId && row.seq > afterSeq);
    return (await run(await syncWrites(tx), 'reservedSince', [key, afterSeq, effectId])).rows.length > 0;
  }

  protected async lastSeal(tx: PgTx): Promise<Seal | undefined> {
    const head = await this.#head(tx);
    return head.globalHash === null ? undefined : { seq: head.seq, globalHash: head.globalHash };
  }

  protected async insertSeal(tx: PgTx, seal: Seal): Promise<void> {
    // Our invariant: a seal follows the row it seals, at the head's next seq.
    if (seal.seq !== tx.rowSeq) throw new Error(`a seal at seq ${seal.seq} does not follow the row just written at seq ${tx.rowSeq}`);
    tx.seals.push({ seq: seal.seq, globalHash: seal.globalHash });
    const head = await this.#head(tx);
    head.seq = seal.seq;
    head.globalHash = seal.globalHash;
  }

  protected async sealsBetween(tx: PgTx, afterSeq: number, throughSeq: number): Promise<Seal[]> {
    return (await run(tx.client, 'sealsBetween', [afterSeq, throughSeq])).rows.map(sealOf);
  }

  protected async entryCount(tx: PgTx): Promise<number> {
    return (await this.#head(tx)).size;
  }

  protected async sealAtSeq(tx: PgTx, seq: number): Promise<string | undefined> {
    return globalHashOfRow((await run(tx.client, 'sealAt', [seq])).rows[0]);
  }

  protected async sealBelow(tx: PgTx, seq: number): Promise<string | undefined> {
    return globalHashOfRow((await run(tx.client, 'sealBelow', [seq])).rows[0]);
  }

  protected async chainEndRows(tx: PgTx, effectIds: readonly string[], throughSeq: number): Promise<Array<{ row: EntryRow; length: number }>> {
    return (await run(tx.client, 'chainEnds', [effectIds, throughSeq])).rows.map((t) => ({ row: entryRowOfTuple(t.slice(0, 9)), length: Number(t[9]) }));
  }

  protected async effectIdsAfter(tx: PgTx, after: string, limit: number): Promise<string[]> {
    return (await run(tx.client, 'effectIdsAfter', [after, limit])).rows.map((t) => String(t[0]));
  }

  protected async rowsAfter(tx: PgTx, afterSeq: number, limit: number): Promise<EntryRow[]> {
    return entryRows(tx.client, 'after', [afterSeq, limit]);
  }
}

/**
 * COMMIT, where an error other than the server's answer (the connection lost on the way, or the
 * server gone before answering) leaves it unknown whether the transaction committed.
 */
async function commit(client: pg.PoolClient): Promise<void> {
  let answer: pg.QueryResult;
  try {
    answer = await client.query('COMMIT');
  } catch (error) {
    // The server answered with an error: it did not commit (a deferred check failed, say).
    if (error instanceof pg.DatabaseError) throw error;
    throw new StoreCommitUnknownError(`the connection was lost while committing: the write may or may not be in the journal (${error instanceof Error ? error.message : String(error)})`, { cause: error });
  }
  // A transaction a failed statement aborted answers COMMIT with ROLLBACK, and no error: nothing of
  // it was written, and no caller may be told otherwise.
  if (answer.command !== 'COMMIT') throw new Error(`the transaction was rolled back at COMMIT (PostgreSQL answered ${answer.command}): nothing of it was written`);
}

function sealOf(t: unknown[]): Seal {
  const [seq, globalHash] = t;
  if (typeof seq !== 'number' || typeof globalHash !== 'string') throw new TypeError('journal_seals holds columns the schema does not allow');
  return { seq, globalHash };
}

function globalHashOfRow(t: unknown[] | undefined): string | undefined {
  if (t === undefined) return undefined;
  if (typeof t[0] !== 'string') throw new TypeError('journal_seals holds columns the schema does not allow');
  return t[0];
}

// An effect dispatched twice without a close in between has two open rows; it is in flight once.
function firstPerEffect(rows: EntryRow[]): EntryRow[] {
  const first = new Map<string, EntryRow>();
  for (const row of rows) if (!first.has(row.effectId)) first.set(row.effectId, row);
  return [...first.values()];
}
