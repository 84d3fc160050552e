import type { Entry, EntryKind, EntryOf, FieldsOf } from '../shared/entries.ts';
import type { JsonObject } from '../shared/json.ts';
import {
  type AppendIfResult,
  type AppendOptions,
  type ChainCheck,
  type ClaimRequest,
  type JournalStore,
  RESERVATION_MOVED,
  type ReservationGuard,
  type Reservations,
  type JournalHead,
  type SealedEntry,
  type Sequenced,
  CHAIN_ENDS_MAX,
  SEALED_CHAINS_MAX,
  type ChainEnd,
} from '../server/journal/store.ts';
import { globalHashOf } from '../server/journal/hash.ts';
import {
  assertClaim,
  assertEffectId,
  assertKind,
  assertTimeMs,
  type ClaimRow,
  chainOfRows,
  entryOfRow,
  type NewEntryRow,
  normaliseFields,
  rowOf,
  sealNext,
  VerifiedBodies,
} from './journal-rules.ts';
import { isKind } from '../server/journal/shapes.ts';
import type { EntryRow } from './schema.ts';
import { pairWithSeals, type Seal, type SealLookups, sealedChainOf } from './journal-seal-reads.ts';

export type { Seal } from './journal-seal-reads.ts';

/**
 * What one write will read under the lock, told before it runs so that a backend may read it for
 * a whole batch of writes at once: an effect's chain (appendIf's check), an effect's newest row
 * (append), and whether another effect reserved a key since a seq (appendIf's guard).
 */
export interface WriteReads {
  chain?: string;
  last?: string;
  guard?: { key: string; afterSeq: number; effectId: string };
}

/** Entries one `appendSealed` call may store: they share one transaction, which holds the write lock. */
export const appendSealedMax = 50_000;

/**
 * The journal's semantics written once, over a handful of storage steps each backend supplies.
 * `Tx` is whatever a backend's steps run against inside a transaction (the prepared queries of a
 * connection, the memory arrays, a client of a pool). Every step is asynchronous, so a backend
 * whose driver answers later can supply it. Every write does its work inside one transaction
 * (which a backend may share among concurrent callers' writes, in order), so a check, the append
 * and the claim it guards can never interleave with another writer, in this process or another.
 */
export abstract class ChainedJournal<Tx> implements JournalStore {
  readonly #wallClockMs: () => number;
  readonly #verified: VerifiedBodies;

  /** `verified`: the memory of bodies checked; one that keeps entries (CheckedBodies.entryOf) answers them to every read. */
  protected constructor(wallClockMs: () => number, verified: VerifiedBodies = new VerifiedBodies()) {
    this.#wallClockMs = wallClockMs;
    this.#verified = verified;
  }

  /**
   * Run `fn` holding the write lock, rolling back everything it wrote if it throws. The promise
   * settles only once what `fn` wrote is durable (a backend may commit it with other callers' work).
   * While `fn` runs, even across its awaits, no other write and no read of the same store runs.
   * `reads` says what `fn` will read (a backend may fetch it beforehand, or ignore it).
   */
  protected abstract exclusive<T>(fn: (tx: Tx) => Promise<T>, reads?: WriteReads): Promise<T>;
  /** Run `fn` over committed rows, without the write lock; never inside another caller's open write. */
  protected abstract snapshot<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * `snapshot` for a `fn` that sends the store one statement, which sees one committed state on its
   * own: a backend may spare it the transaction around it. By default, `snapshot`.
   */
  protected snapshotOne<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.snapshot(fn);
  }
  /**
   * The highest seq that reserved `key`, then its open reservations' rows: by default two reads,
   * the seq first, so a dispatch made between them is both counted and newer than the guard (its
   * dispatcher-to-be only checks again; never missed); a backend may read both in one statement.
   */
  protected async reservationRows(key: string): Promise<{ seq: number; rows: EntryRow[] }> {
    const seq = await this.snapshotOne((tx) => this.reservationSeq(tx, key));
    return { seq, rows: await this.snapshotOne((tx) => this.openReservationRows(tx, key)) };
  }
  /** What one chain and its seals are read in (`sealedChain`): `snapshot`, or `snapshotOne` where `chainWithSeals` sends one statement. */
  protected chainSnapshot<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.snapshot(fn);
  }
  /**
   * At most `limit` rows with seq above `afterSeq` and the seals over them, from one snapshot: by
   * default two reads in `snapshot`; a backend may read both in one statement.
   */
  protected rowsAndSealsAfter(afterSeq: number, limit: number): Promise<{ rows: EntryRow[]; seals: Seal[] }> {
    return this.snapshot(async (tx) => {
      const rows = await this.rowsAfter(tx, afterSeq, limit);
      const last = rows.at(-1);
      return { rows, seals: last === undefined ? [] : await this.sealsBetween(tx, afterSeq, last.seq) };
    });
  }
  /** One effect's rows in seq order. */
  protected abstract chainRows(tx: Tx, effectId: string): Promise<EntryRow[]>;
  /** The effect's row with the highest seq. */
  protected abstract lastRow(tx: Tx, effectId: string): Promise<EntryRow | undefined>;
  /** Store a row and return its seq; refuses what the schema refuses. */
  protected abstract insertRow(tx: Tx, row: NewEntryRow): Promise<number>;
  /** Set the claim when `claimIsFree` allows it; true when it was set. */
  protected abstract takeClaim(tx: Tx, claim: ClaimRow, nowMs: number): Promise<boolean>;
  /** Set the claim, overwriting any holder. */
  protected abstract putClaim(tx: Tx, claim: ClaimRow): Promise<void>;
  /** Drop the claim if `owner` holds it. */
  protected abstract dropClaim(tx: Tx, effectId: string, owner: string): Promise<void>;
  /** For each effect with an open dispatch, its first DISPATCHED row not closed since, in seq order. */
  protected abstract openDispatchRows(tx: Tx): Promise<EntryRow[]>;
  /** At most `limit` rows with seq above `afterSeq`, in seq order. */
  protected abstract rowsAfter(tx: Tx, afterSeq: number, limit: number): Promise<EntryRow[]>;
  /** The open DISPATCHED rows that reserve `key`, the first per effect, in seq order. */
  protected abstract openReservationRows(tx: Tx, key: string): Promise<EntryRow[]>;
  /** The highest seq of a row that reserves `key`, 0 for none. */
  protected abstract reservationSeq(tx: Tx, key: string): Promise<number>;
  /** True when another effect's row reserved `key` after `afterSeq`. */
  protected abstract reservedSince(tx: Tx, key: string, afterSeq: number, effectId: string): Promise<boolean>;
  /** The global chain's newest row, or undefined for an empty journal. */
  protected abstract lastSeal(tx: Tx): Promise<Seal | undefined>;
  /** Store the global hash of the entry at `seq`. */
  protected abstract insertSeal(tx: Tx, seal: Seal): Promise<void>;
  /** The global chain's rows with seq above `afterSeq` and at most `throughSeq`, in seq order. */
  protected abstract sealsBetween(tx: Tx, afterSeq: number, throughSeq: number): Promise<Seal[]>;
  /** How many entries the journal holds. */
  protected abstract entryCount(tx: Tx): Promise<number>;
  /** The global hash stored at `seq`, and at the newest seq below it; undefined for none. */
  protected abstract sealAtSeq(tx: Tx, seq: number): Promise<string | undefined>;
  protected abstract sealBelow(tx: Tx, seq: number): Promise<string | undefined>;
  /** For each of `effectIds` with a row at or below `throughSeq`: its last such row, and how many it has there. */
  protected abstract chainEndRows(tx: Tx, effectIds: readonly string[], throughSeq: number): Promise<Array<{ row: EntryRow; length: number }>>;
  /** Distinct effect ids above `after`, ascending, at most `limit`. */
  protected abstract effectIdsAfter(tx: Tx, after: string, limit: number): Promise<string[]>;

  async entries(effectId: string): Promise<Entry[]> {
    return this.snapshotOne(async (tx) => chainOfRows(await this.chainRows(tx, effectId), this.#verified));
  }

  async append<K extends EntryKind>(kind: K, effectId: string, fields: FieldsOf<K>, options: AppendOptions = {}): Promise<EntryOf<K>> {
    const normalised = checkAppend(kind, effectId, fields);
    const { release } = options;
    if (release !== undefined && (typeof release !== "string" || release.length === 0)) throw new TypeError("release must name a claim owner");
    return this.exclusive(async (tx) => {
      const entry = await this.writeNext(tx, kind, effectId, normalised, this.nowMs());
      if (release !== undefined) await this.dropClaim(tx, effectId, release);
      return entry;
    }, { last: effectId });
  }

  async appendIf<K extends EntryKind>(
    kind: K,
    effectId: string,
    check: ChainCheck,
    fields: FieldsOf<K>,
    claim?: ClaimRequest,
    guard?: ReservationGuard,
  ): Promise<AppendIfResult<K>> {
    const normalised = checkAppend(kind, effectId, fields);
    if (claim !== undefined) assertClaim(claim.owner, claim.ttlMs);
    if (guard !== undefined) assertGuard(guard);
    return this.exclusive(async (tx): Promise<AppendIfResult<K>> => {
      const chain = chainOfRows(await this.chainRows(tx, effectId), this.#verified);
      const blocker = blockerOf(check(chain));
      if (blocker !== null) return { entry: null, blocker };
      if (guard !== undefined && (await this.reservedSince(tx, guard.key, guard.afterSeq, effectId))) return { entry: null, blocker: RESERVATION_MOVED };
      const nowMs = this.nowMs();
      // The chain was read under this same lock, so its last entry is the one to link to.
      const entry = await this.seal(tx, kind, effectId, normalised, chain.at(-1), nowMs);
      if (claim !== undefined) await this.putClaim(tx, { effectId, owner: claim.owner, expiresMs: nowMs + claim.ttlMs });
      return { entry, blocker: null };
    }, { chain: effectId, ...(guard === undefined ? {} : { guard: { key: guard.key, afterSeq: guard.afterSeq, effectId } }) });
  }

  async claim(effectId: string, owner: string, ttlMs: number): Promise<boolean> {
    assertEffectId(effectId);
    assertClaim(owner, ttlMs);
    return this.exclusive((tx) => {
      const nowMs = this.nowMs();
      return this.takeClaim(tx, { effectId, owner, expiresMs: nowMs + ttlMs }, nowMs);
    });
  }

  async release(effectId: string, owner: string): Promise<void> {
    return this.exclusive((tx) => this.dropClaim(tx, effectId, owner));
  }

  async inFlight(): Promise<string[]> {
    // The rows are checked like any read, so a forged DISPATCHED cannot start a recovery.
    return this.snapshotOne(async (tx) => (await this.openDispatchRows(tx)).map((row) => entryOfRow(row, this.#verified).effect_id));
  }

  async reservations(key: string): Promise<Reservations> {
    assertReservationKey(key);
    const { seq, rows } = await this.reservationRows(key);
    const open = rows.map((row) => entryOfRow(row, this.#verified)).filter((e) => isKind(e, 'DISPATCHED'));
    return { open, seq };
  }

  async scan(afterSeq: number, limit: number): Promise<Sequenced[]> {
    if (!Number.isSafeInteger(afterSeq)) throw new TypeError(`afterSeq must be an integer: ${afterSeq}`);
    if (!Number.isSafeInteger(limit) || limit <= 0) throw new TypeError(`limit must be a positive integer: ${limit}`);
    // A scan reads each row once: rows this journal wrote are not hashed again, but the scanned
    // rows are not remembered (a replay would only churn the memory of recent writes).
    const verified = this.#verified.lookupOnly;
    const { rows, seals } = await this.rowsAndSealsAfter(afterSeq, limit);
    return pairWithSeals(rows, seals).map(({ row, global }) => ({ seq: row.seq, entry: entryOfRow(row, verified), global }));
  }

  async head(): Promise<JournalHead | null> {
    return this.snapshot(async (tx) => {
      const seal = await this.lastSeal(tx);
      return seal === undefined ? null : { seq: seal.seq, globalHash: seal.globalHash, size: await this.entryCount(tx) };
    });
  }

  async newestSeq(): Promise<number> {
    return this.snapshotOne(async (tx) => (await this.lastSeal(tx))?.seq ?? 0);
  }

  async sealedChain(effectId: string): Promise<SealedEntry[]> {
    return this.chainSnapshot(async (tx) => {
      const { rows, seals } = await this.chainWithSeals(tx, effectId);
      return sealedChainOf(rows, seals, this.#verified);
    });
  }

  async sealedChains(effectIds: readonly string[]): Promise<SealedEntry[][]> {
    if (!Array.isArray(effectIds) || effectIds.some((id) => typeof id !== 'string')) throw new TypeError('effectIds must be a list of chain ids');
    if (effectIds.length > SEALED_CHAINS_MAX) throw new RangeError(`at most ${SEALED_CHAINS_MAX} chains per call, not ${effectIds.length}`);
    if (effectIds.length === 0) return [];
    return this.snapshot(async (tx) => {
      const read = await this.chainsWithSeals(tx, effectIds);
      const chains: SealedEntry[][] = [];
      for (const { rows, seals } of read) chains.push(await sealedChainOf(rows, seals, this.#verified));
      return chains;
    });
  }

  /** `chainWithSeals` for each of `effectIds`, in the same snapshot, in their order: by default one after another. */
  protected async chainsWithSeals(tx: Tx, effectIds: readonly string[]): Promise<Array<{ rows: EntryRow[]; seals: SealLookups }>> {
    const read: Array<{ rows: EntryRow[]; seals: SealLookups }> = [];
    for (const effectId of effectIds) read.push(await this.chainWithSeals(tx, effectId));
    return read;
  }

  /**
   * One effect's rows in seq order, and the seals of their seqs (each one's own and the newest
   * below it), read in the same snapshot: by default a lookup of each as it is asked for; a
   * backend may read them all with the rows.
   */
  protected async chainWithSeals(tx: Tx, effectId: string): Promise<{ rows: EntryRow[]; seals: SealLookups }> {
    return { rows: await this.chainRows(tx, effectId), seals: { at: (seq) => this.sealAtSeq(tx, seq), below: (seq) => this.sealBelow(tx, seq) } };
  }

  async sealAt(seq: number): Promise<string | null> {
    if (!Number.isSafeInteger(seq)) throw new TypeError(`seq must be an integer: ${seq}`);
    return this.snapshotOne(async (tx) => (await this.sealAtSeq(tx, seq)) ?? null);
  }

  async chainEnds(effectIds: readonly string[], throughSeq: number): Promise<ChainEnd[]> {
    if (!Array.isArray(effectIds) || effectIds.some((id) => typeof id !== 'string')) throw new TypeError('effectIds must be a list of chain ids');
    if (effectIds.length > CHAIN_ENDS_MAX) throw new RangeError(`at most ${CHAIN_ENDS_MAX} chains per call, not ${effectIds.length}`);
    if (!Number.isSafeInteger(throughSeq)) throw new TypeError(`throughSeq must be an integer: ${throughSeq}`);
    if (effectIds.length === 0 || throughSeq < 1) return [];
    const verified = this.#verified.lookupOnly;
    return this.snapshotOne(async (tx) =>
      (await this.chainEndRows(tx, [...new Set(effectIds)], throughSeq)).map(({ row, length }) => {
        const entry = entryOfRow(row, verified);
        return { effectId: entry.effect_id, seq: row.seq, hash: entry.hash, length };
      }),
    );
  }

  async chainIds(after: string, limit: number): Promise<string[]> {
    if (typeof after !== 'string') throw new TypeError('after must be a chain id or an empty string');
    if (!Number.isSafeInteger(limit) || limit <= 0) throw new TypeError(`limit must be a positive integer: ${limit}`);
    return this.snapshotOne((tx) => this.effectIdsAfter(tx, after, limit));
  }

  /**
   * Store entries sealed elsewhere (a generated benchmark journal, an import), in order, in one
   * transaction. Each must be a sealed entry whose hash holds, linked to its effect's newest
   * entry (stored before, or earlier in `sealed`); otherwise nothing is stored.
   */
  async appendSealed(sealed: readonly Entry[]): Promise<void> {
    if (sealed.length > appendSealedMax) throw new RangeError(`at most ${appendSealedMax} entries per call, not ${sealed.length}`);
    // Checked before the lock is taken: the hashing is the costly part.
    const rows = sealed.map((entry, i) => {
      assertKind(entry.kind);
      assertEffectId(entry.effect_id, entry.kind);
      assertTimeMs(entry.ts_ms);
      const row = rowOf(entry);
      try {
        entryOfRow({ ...row, seq: i + 1 });
      } catch (error) {
        throw new TypeError(`sealed[${i}] is not a sealed entry whose hash holds: ${error instanceof Error ? error.message : String(error)}`);
      }
      return row;
    });
    return this.exclusive(async (tx) => {
      const newest = new Map<string, string | null>();
      for (const row of rows) {
        let last = newest.get(row.effectId);
        if (last === undefined) {
          const lastRow = await this.lastRow(tx, row.effectId);
          last = lastRow === undefined ? null : entryOfRow(lastRow, this.#verified).hash;
        }
        if (row.prev !== last) throw new TypeError(`entry ${row.hash} does not link to the newest entry of effect ${row.effectId}`);
        await this.sealStored(tx, await this.insertRow(tx, row), row.hash);
        newest.set(row.effectId, row.hash);
      }
    });
  }

  private async writeNext<K extends EntryKind>(tx: Tx, kind: K, effectId: string, fields: JsonObject, nowMs: number): Promise<EntryOf<K>> {
    const lastRow = await this.lastRow(tx, effectId);
    const last = lastRow === undefined ? undefined : entryOfRow(lastRow, this.#verified);
    return this.seal(tx, kind, effectId, fields, last, nowMs);
  }

  /** Seal the entry after `last` (the effect's newest, read under the lock) and store it. */
  private async seal<K extends EntryKind>(tx: Tx, kind: K, effectId: string, fields: JsonObject, last: Entry | undefined, nowMs: number): Promise<EntryOf<K>> {
    const entry = sealNext(kind, effectId, fields, last, nowMs);
    const row = rowOf(entry);
    // Sealed here, so its hash holds by construction; if the write is rolled back, a later row
    // with this seq has other text and is checked in full.
    const seq = await this.insertRow(tx, row);
    const lastSeal = await this.lastSeal(tx);
    await this.insertSeal(tx, { seq, globalHash: globalHashOf(lastSeal?.globalHash ?? null, seq, row.hash) });
    this.#verified.remember(seq, row.body);
    return entry;
  }

  /** Extend the global chain by the entry just stored at `seq`, in its transaction. */
  private async sealStored(tx: Tx, seq: number, entryHash: string): Promise<void> {
    const last = await this.lastSeal(tx);
    await this.insertSeal(tx, { seq, globalHash: globalHashOf(last?.globalHash ?? null, seq, entryHash) });
  }

  private nowMs(): number {
    const nowMs = this.#wallClockMs();
    assertTimeMs(nowMs);
    return nowMs;
  }
}

function assertReservationKey(key: string): void {
  if (typeof key !== 'string' || key.length === 0 || key.length > 255) throw new TypeError('a reservation key must be a string of 1 to 255 characters');
}

function assertGuard(guard: ReservationGuard): void {
  assertReservationKey(guard.key);
  if (!Number.isSafeInteger(guard.afterSeq) || guard.afterSeq < 0) throw new TypeError(`guard afterSeq must be a non-negative integer: ${guard.afterSeq}`);
}

function checkAppend(kind: EntryKind, effectId: string, fields: object): JsonObject {
  assertKind(kind);
  assertEffectId(effectId, kind);
  return normaliseFields(fields);
}

// A check must answer synchronously with a blocker code or null; anything else (a promise from an
// async check, an empty code) is a caller bug that must not be mistaken for either answer.
function blockerOf(answer: unknown): string | null {
  if (answer === null) return null;
  if (typeof answer === 'string' && answer.length > 0) return answer;
  throw new TypeError('a chain check must return a non-empty blocker string or null, synchronously');
}
