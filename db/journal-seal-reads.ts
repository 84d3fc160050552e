import { JournalCorruptError, type SealedEntry } from '../server/journal/store.ts';
import { type CheckedBodies, chainOfRows } from './journal-rules.ts';
import type { EntryRow } from './schema.ts';

// The journal's reads that pair entries with the global chain's rows (`journal_seals`): a page of
// the whole journal in seq order, and one chain with each entry's seal and the seal before it.

/** One row of the global chain: the global hash of the entry at `seq`. */
export interface Seal {
  seq: number;
  globalHash: string;
}

/**
 * Each row with the global hash stored at its seq. Both lists are in seq order over the same
 * range, so every entry must have its seal and every seal its entry: an entry without one was
 * inserted behind the journal's back, a seal without one marks an entry removed.
 */
export function pairWithSeals(rows: readonly EntryRow[], seals: readonly Seal[]): Array<{ row: EntryRow; global: string }> {
  const paired: Array<{ row: EntryRow; global: string }> = [];
  let s = 0;
  for (const row of rows) {
    const seal = seals[s];
    if (seal !== undefined && seal.seq < row.seq) {
      throw new JournalCorruptError(`journal seq ${seal.seq} has a global seal but no entry: an entry was removed`, { seq: seal.seq, effectId: 'unknown' });
    }
    if (seal === undefined || seal.seq !== row.seq) {
      throw new JournalCorruptError(`journal entry seq ${row.seq} has no global seal: it was not written by the journal`, { seq: row.seq, effectId: row.effectId });
    }
    paired.push({ row, global: seal.globalHash });
    s += 1;
  }
  return paired;
}

/** The seal reads one chain needs, run inside the read's snapshot. */
export interface SealLookups {
  /** The global hash stored at `seq`, undefined for none. */
  at(seq: number): Promise<string | undefined>;
  /** The global hash stored at the newest seq below `seq`, undefined for none. */
  below(seq: number): Promise<string | undefined>;
}

/**
 * One chain's rows (every hash and link checked) with each entry's stored seal and the seal
 * before it; what the seals say is the reader's to judge (server/journal/seals.ts).
 */
export async function sealedChainOf(rows: readonly EntryRow[], seals: SealLookups, verified?: CheckedBodies): Promise<SealedEntry[]> {
  const chain = chainOfRows(rows, verified);
  const sealed: SealedEntry[] = [];
  for (const [i, row] of rows.entries()) {
    const { seq } = row;
    const entry = chain[i];
    if (entry === undefined) break;
    const global = await seals.at(seq);
    if (global === undefined) throw new JournalCorruptError(`journal entry seq ${seq} has no global seal: it was not written by the journal`, { seq, effectId: entry.effect_id });
    sealed.push({ seq, entry, global, previousGlobal: (await seals.below(seq)) ?? null });
  }
  return sealed;
}
