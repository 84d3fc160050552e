import type { Entry, EntryFields, EntryKind } from '../../shared/entries.ts';

/** A check run inside the journal's write lock: a returned string is the blocker, and nothing is written. */
export type ChainCheck = (chain: readonly Entry[]) => string | null;

/** The result of a conditional append. */
export type AppendIfResult = { entry: Entry; blocker: null } | { entry: null; blocker: string };

/** A sender's or recoverer's ownership of an effect, until `ttlMs` from now. */
export interface ClaimRequest {
  owner: string;
  ttlMs: number;
}

/** What else an unconditional append does in its transaction. */
export interface AppendOptions {
  /** Drop the claim this owner holds on the effect, if it holds one. */
  release?: string;
}

/** An entry with its position in the whole journal. */
export interface Sequenced {
  seq: number;
  entry: Entry;
}

/**
 * The journal as the gate and the inbox use it. Every write seals the entry (wall clock `ts_ms`,
 * `prev` = hash of the effect's previous entry, `hash`) and is durable before the promise
 * resolves. `appendIf` reads the chain and writes in one exclusive transaction, so its check
 * sees every earlier append from any process.
 */
export interface JournalStore {
  /** One effect's entries, in order. */
  entries(effectId: string): Promise<Entry[]>;
  /**
   * Append unconditionally. With `release`, also drop that owner's claim in the same
   * transaction: a sender closing its dispatch frees the effect in the same durable write.
   */
  append(kind: EntryKind, effectId: string, fields: EntryFields, options?: AppendOptions): Promise<Entry>;
  /** Append only when `check(chain)` returns null; with `claim`, also set that claim in the same transaction. */
  appendIf(
    kind: EntryKind,
    effectId: string,
    check: ChainCheck,
    fields: EntryFields,
    claim?: ClaimRequest,
  ): Promise<AppendIfResult>;
  /** Take or refresh a claim; refused while another owner's claim is unexpired. */
  claim(effectId: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Drop a claim, only if `owner` holds it. */
  release(effectId: string, owner: string): Promise<void>;
  /** Effect ids with a DISPATCHED not yet closed by COMMITTED, AMBIGUOUS or a resolving REFUSED. */
  inFlight(): Promise<string[]>;
  /** Every entry after `afterSeq`, in journal order, at most `limit` of them. */
  scan(afterSeq: number, limit: number): Promise<Sequenced[]>;
}

/** Thrown when a stored entry does not match its hash or cannot be parsed: the journal fails closed. */
export class JournalCorruptError extends Error {
  readonly code = 'journal_corrupt';
}
