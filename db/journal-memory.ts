import { AsyncLock } from './async-lock.ts';
import { type ClaimRow, claimIsFree, type NewEntryRow } from './journal-rules.ts';
import { ChainedJournal, type Seal } from './journal-base.ts';
import type { EntryRow } from './schema.ts';

/** What a journal needs besides its storage: the wall clock that stamps `ts_ms` and times claims. */
export interface JournalClock {
  wallClockMs: () => number;
}

/** The memory backend's whole state. */
export interface MemoryState {
  rows: EntryRow[];
  seals: Seal[];
  claims: Map<string, ClaimRow>;
}

/**
 * The same journal held in arrays, for fast pure tests and experiments. Rows keep the entry as
 * JSON text like SQLite does, so a caller mutating a returned entry cannot change the journal,
 * and every read goes through the same checks. One lock orders every call: a write's steps may
 * yield, and no other write or read runs until it has finished (or been rolled back).
 */
export class MemoryJournal extends ChainedJournal<MemoryState> {
  readonly #state: MemoryState = { rows: [], seals: [], claims: new Map() };
  readonly #lock = new AsyncLock();

  constructor(options: JournalClock) {
    super(options.wallClockMs);
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
        this.#state.rows.length = rowCount;
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
    return tx.rows.findLast((row) => row.effectId === effectId);
  }

  protected async insertRow(tx: MemoryState, row: NewEntryRow): Promise<number> {
    // The schema's guards, for the one a caller can reach: sealing against the effect's last
    // entry under the lock already rules out a fork or a repeated hash.
    const secondCommit = row.kind === 'COMMITTED' && tx.rows.some((r) => r.effectId === row.effectId && r.kind === 'COMMITTED');
    if (secondCommit) throw new Error(`UNIQUE constraint failed: a second COMMITTED for effect ${row.effectId}`);
    const seq = (tx.rows.at(-1)?.seq ?? 0) + 1;
    tx.rows.push({ ...row, seq });
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
    return tx.rows.filter((row) => row.seq > afterSeq).slice(0, limit);
  }

  protected async openReservationRows(tx: MemoryState, key: string): Promise<EntryRow[]> {
    return openDispatchRowsOf(tx).filter((row) => row.reserves === key);
  }

  protected async reservationSeq(tx: MemoryState, key: string): Promise<number> {
    return tx.rows.findLast((row) => row.reserves === key)?.seq ?? 0;
  }

  protected async reservedSince(tx: MemoryState, key: string, afterSeq: number, effectId: string): Promise<boolean> {
    return tx.rows.some((row) => row.reserves === key && row.seq > afterSeq && row.effectId !== effectId);
  }

  protected async lastSeal(tx: MemoryState): Promise<Seal | undefined> {
    const last = tx.seals.at(-1);
    return last === undefined ? undefined : { ...last };
  }

  protected async insertSeal(tx: MemoryState, seal: Seal): Promise<void> {
    tx.seals.push({ ...seal });
  }

  protected async sealsBetween(tx: MemoryState, afterSeq: number, throughSeq: number): Promise<Seal[]> {
    return tx.seals.filter((seal) => seal.seq > afterSeq && seal.seq <= throughSeq).map((seal) => ({ ...seal }));
  }

  protected async entryCount(tx: MemoryState): Promise<number> {
    return tx.rows.length;
  }

  protected async sealAtSeq(tx: MemoryState, seq: number): Promise<string | undefined> {
    return tx.seals.find((seal) => seal.seq === seq)?.globalHash;
  }

  protected async sealBelow(tx: MemoryState, seq: number): Promise<string | undefined> {
    return tx.seals.findLast((seal) => seal.seq < seq)?.globalHash;
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
  return state.rows.filter((row) => row.effectId === effectId);
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
