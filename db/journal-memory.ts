import { AsyncLock } from './async-lock.ts';
import { type ClaimRow, claimIsFree, type NewEntryRow, type VerifiedBodies } from './journal-rules.ts';
import { ChainedJournal, type Seal } from './journal-base.ts';
import type { EntryRow } from './schema.ts';

/** What a journal needs besides its storage: the wall clock that stamps `ts_ms` and times claims. */
export interface JournalClock {
  wallClockMs: () => number;
}

/** A memory journal's options: its clock, and the memory of bodies checked (ChainedJournal). */
export interface MemoryJournalOptions extends JournalClock {
  verified?: VerifiedBodies;
}

/** The memory backend's whole state. */
export interface MemoryState {
  /** In seq order; each row's seq is one more than the one before it. */
  rows: EntryRow[];
  /** Each chain's rows in seq order, the same rows as `rows`: SQLite's index on effect_id. */
  chains: Map<string, EntryRow[]>;
  /** In seq order. */
  seals: Seal[];
  claims: Map<string, ClaimRow>;
}

/** The index of the first of `items` (in ascending seq) whose seq is above `seq`. */
function firstAbove(items: readonly { seq: number }[], seq: number): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (items[mid]!.seq <= seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The same journal held in arrays, for fast pure tests and experiments. Rows keep the entry as
 * JSON text like SQLite does, so a caller mutating a returned entry cannot change the journal,
 * and every read goes through the same checks. One lock orders every call: a write's steps may
 * yield, and no other write or read runs until it has finished (or been rolled back).
 */
export class MemoryJournal extends ChainedJournal<MemoryState> {
  readonly #state: MemoryState = { rows: [], chains: new Map(), seals: [], claims: new Map() };
  readonly #lock = new AsyncLock();

  constructor(options: MemoryJournalOptions) {
    super(options.wallClockMs, options.verified);
  }

  protected exclusive<T>(fn: (tx: MemoryState) => Promise<T>): Promise<T> {
    return this.#lock.run(async () => {
      // Rows are only ever appended, so rolling back a failed write means trimming what it added.
      const rowCount = this.#state.rows.length;
      const sealCount = this.#state.seals.length;
      const claimsBefore = new Map(this.#state.claims);
      try {
        return await fn(this.#state);
      } catch (error) {
        for (const row of this.#state.rows.splice(rowCount).reverse()) {
          const chain = this.#state.chains.get(row.effectId)!;
          chain.pop();
          if (chain.length === 0) this.#state.chains.delete(row.effectId);
        }
        this.#state.seals.length = sealCount;
        this.#state.claims = claimsBefore;
        throw error;
      }
    });
  }

  protected snapshot<T>(fn: (tx: MemoryState) => Promise<T>): Promise<T> {
    return this.#lock.run(() => fn(this.#state));
  }

  /** Read the state synchronously, as it is now (a write under way may have stored part of itself). */
  protected peek<T>(fn: (state: MemoryState) => T): T {
    return fn(this.#state);
  }

  protected async chainRows(tx: MemoryState, effectId: string): Promise<EntryRow[]> {
    return chainRowsOf(tx, effectId);
  }

  protected async lastRow(tx: MemoryState, effectId: string): Promise<EntryRow | undefined> {
    return tx.chains.get(effectId)?.at(-1);
  }

  protected async insertRow(tx: MemoryState, row: NewEntryRow): Promise<number> {
    // The schema's guards, for the one a caller can reach: sealing against the effect's last
    // entry under the lock already rules out a fork or a repeated hash.
    const chain = tx.chains.get(row.effectId) ?? [];
    const secondCommit = row.kind === 'COMMITTED' && chain.some((r) => r.kind === 'COMMITTED');
    if (secondCommit) throw new Error(`UNIQUE constraint failed: a second COMMITTED for effect ${row.effectId}`);
    const seq = (tx.rows.at(-1)?.seq ?? 0) + 1;
    const stored = { ...row, seq };
    tx.rows.push(stored);
    chain.push(stored);
    tx.chains.set(row.effectId, chain);
    return seq;
  }

  protected async takeClaim(tx: MemoryState, claim: ClaimRow, nowMs: number): Promise<boolean> {
    if (!claimIsFree(tx.claims.get(claim.effectId), claim.owner, nowMs)) return false;
    tx.claims.set(claim.effectId, claim);
    return true;
  }

  protected async putClaim(tx: MemoryState, claim: ClaimRow): Promise<void> {
    tx.claims.set(claim.effectId, claim);
  }

  protected async dropClaim(tx: MemoryState, effectId: string, owner: string): Promise<void> {
    if (tx.claims.get(effectId)?.owner === owner) tx.claims.delete(effectId);
  }

  protected async openDispatchRows(tx: MemoryState): Promise<EntryRow[]> {
    return openDispatchRowsOf(tx);
  }

  protected async rowsAfter(tx: MemoryState, afterSeq: number, limit: number): Promise<EntryRow[]> {
    const from = firstAbove(tx.rows, afterSeq);
    return tx.rows.slice(from, from + limit);
  }

  protected async openReservationRows(tx: MemoryState, key: string): Promise<EntryRow[]> {
    return openDispatchRowsOf(tx).filter((row) => row.reserves === key);
  }

  protected async reservationSeq(tx: MemoryState, key: string): Promise<number> {
    return tx.rows.findLast((row) => row.reserves === key)?.seq ?? 0;
  }

  protected async reservedSince(tx: MemoryState, key: string, afterSeq: number, effectId: string): Promise<boolean> {
    for (let i = firstAbove(tx.rows, afterSeq); i < tx.rows.length; i++) {
      const row = tx.rows[i]!;
      if (row.reserves === key && row.effectId !== effectId) return true;
    }
    return false;
  }

  protected async lastSeal(tx: MemoryState): Promise<Seal | undefined> {
    const last = tx.seals.at(-1);
    return last === undefined ? undefined : { ...last };
  }

  protected async insertSeal(tx: MemoryState, seal: Seal): Promise<void> {
    tx.seals.push({ ...seal });
  }

  protected async sealsBetween(tx: MemoryState, afterSeq: number, throughSeq: number): Promise<Seal[]> {
    return tx.seals.slice(firstAbove(tx.seals, afterSeq), firstAbove(tx.seals, throughSeq)).map((seal) => ({ ...seal }));
  }

  protected async entryCount(tx: MemoryState): Promise<number> {
    return tx.rows.length;
  }

  protected async sealAtSeq(tx: MemoryState, seq: number): Promise<string | undefined> {
    const seal = tx.seals[firstAbove(tx.seals, seq) - 1];
    return seal?.seq === seq ? seal.globalHash : undefined;
  }

  protected async sealBelow(tx: MemoryState, seq: number): Promise<string | undefined> {
    return tx.seals[firstAbove(tx.seals, seq - 1) - 1]?.globalHash;
  }

  protected async chainEndRows(tx: MemoryState, effectIds: readonly string[], throughSeq: number): Promise<Array<{ row: EntryRow; length: number }>> {
    const wanted = new Set(effectIds);
    const ends = new Map<string, { row: EntryRow; length: number }>();
    for (const row of tx.rows) {
      if (row.seq > throughSeq || !wanted.has(row.effectId)) continue;
      ends.set(row.effectId, { row, length: (ends.get(row.effectId)?.length ?? 0) + 1 });
    }
    return [...ends.values()];
  }

  protected async effectIdsAfter(tx: MemoryState, after: string, limit: number): Promise<string[]> {
    return [...new Set(tx.rows.map((row) => row.effectId))].filter((id) => id > after).sort().slice(0, limit);
  }
}

/** One effect's rows in seq order. */
export function chainRowsOf(state: MemoryState, effectId: string): EntryRow[] {
  return [...(state.chains.get(effectId) ?? [])];
}

/** For each effect with an open dispatch, its first DISPATCHED row not closed since, in seq order. */
export function openDispatchRowsOf(state: MemoryState): EntryRow[] {
  const open = new Map<string, EntryRow>();
  for (const row of state.rows) {
    if (row.closes === 1) open.delete(row.effectId);
    else if (row.kind === 'DISPATCHED' && !open.has(row.effectId)) open.set(row.effectId, row);
  }
  return [...open.values()].sort((a, b) => a.seq - b.seq);
}
