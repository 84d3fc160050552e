import type { Dispatched, Entry, EntryKind, EntryOf, FieldsOf } from '../../shared/entries.ts';

/** A check run inside the journal's write lock: a returned string is the blocker, and nothing is written. */
export type ChainCheck = (chain: readonly Entry[]) => string | null;

/** The result of a conditional append. */
export type AppendIfResult<K extends EntryKind = EntryKind> = { entry: EntryOf<K>; blocker: null } | { entry: null; blocker: string };

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

/**
 * The dispatches on one reserved thing (a refund's payment intent), read before the facts are:
 * an open DISPATCHED counts as already done by whoever checks the facts next.
 */
export interface Reservations {
  /** The open DISPATCHED entries that reserve the key, one per effect, oldest first. */
  open: Dispatched[];
  /** The seq of the newest DISPATCHED that ever reserved the key (0 for none), read before `open`. */
  seq: number;
}

/**
 * A dispatch's promise that it was checked against every reservation of `key` up to `afterSeq`:
 * the DISPATCHED is written only if no other effect's DISPATCHED reserved the key since.
 */
export interface ReservationGuard {
  key: string;
  afterSeq: number;
}

/** The blocker an append under a guard gets when another dispatch reserved the key since it was read. */
export const RESERVATION_MOVED = 'reservation_moved';

/** An entry with its position in the whole journal. */
export interface Sequenced {
  seq: number;
  entry: Entry;
  /** The entry's global hash as stored (`globalHashOf`); whoever follows the whole journal checks it. */
  global: string;
}

/** An entry of one chain with its place in the global chain, as stored: what a chain shown or signed is checked against. */
export interface SealedEntry {
  seq: number;
  entry: Entry;
  /** The global hash stored at `seq`. */
  global: string;
  /** The global hash stored at the newest seq below it: null for the journal's first entry. */
  previousGlobal: string | null;
}

/** Where one chain stood at one of its entries: that entry's seq and hash, and how many entries of the chain reach it. */
export interface ChainEnd {
  effectId: string;
  seq: number;
  hash: string;
  length: number;
}

/** Chains asked of `chainEnds` in one call, at most. */
export const CHAIN_ENDS_MAX = 10_000;
/** Chains one `sealedChains` call reads at most. */
export const SEALED_CHAINS_MAX = 200;

/** The newest entry of the global chain: its seq, the global hash there, and how many entries the journal holds. */
export interface JournalHead {
  seq: number;
  globalHash: string;
  size: number;
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
  append<K extends EntryKind>(kind: K, effectId: string, fields: FieldsOf<K>, options?: AppendOptions): Promise<EntryOf<K>>;
  /**
   * Append only when `check(chain)` returns null; with `claim`, also set that claim in the same
   * transaction; with `guard`, only when no other effect's DISPATCHED reserved `guard.key` after
   * `guard.afterSeq` (else the blocker is RESERVATION_MOVED and nothing is written).
   */
  appendIf<K extends EntryKind>(
    kind: K,
    effectId: string,
    check: ChainCheck,
    fields: FieldsOf<K>,
    claim?: ClaimRequest,
    guard?: ReservationGuard,
  ): Promise<AppendIfResult<K>>;
  /** The dispatches that reserve `key`: the open ones, and how far a guard must look. */
  reservations(key: string): Promise<Reservations>;
  /** Take or refresh a claim; refused while another owner's claim is unexpired. */
  claim(effectId: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Drop a claim, only if `owner` holds it. */
  release(effectId: string, owner: string): Promise<void>;
  /** Effect ids with a DISPATCHED not yet closed by COMMITTED, AMBIGUOUS or a resolving REFUSED. */
  inFlight(): Promise<string[]>;
  /**
   * Every entry after `afterSeq`, in journal order, at most `limit` of them, each with its global
   * hash; an entry without one, or one left without its entry, is a corrupt journal.
   */
  scan(afterSeq: number, limit: number): Promise<Sequenced[]>;
  /** The newest entry of the global chain as stored, or null for an empty journal. */
  head(): Promise<JournalHead | null>;
  /** The seq of the newest entry of the global chain as stored, 0 for an empty journal: `head` without counting the entries. */
  newestSeq(): Promise<number>;
  /**
   * One effect's entries, in order, each with its stored seal and the seal before it, from one
   * snapshot (every hash and link checked as `entries` does; an entry without a seal is corrupt).
   */
  sealedChain(effectId: string): Promise<SealedEntry[]>;
  /**
   * Optional: several chains as `sealedChain` answers each, in the order asked, all from one
   * snapshot (at most SEALED_CHAINS_MAX ids): the background pass reads a batch of chains at once.
   * A store without it is read a chain at a time.
   */
  sealedChains?(effectIds: readonly string[]): Promise<SealedEntry[][]>;
  /** The global hash stored at `seq`, null when none is. */
  sealAt(seq: number): Promise<string | null>;
  /**
   * Where each of `effectIds` stood at `throughSeq`: its last entry at or below it (its hash
   * checked against its body, as every read does) and how many entries it had by then. A chain
   * with no entry at or below it is left out. At most CHAIN_ENDS_MAX ids; the order is the store's.
   */
  chainEnds(effectIds: readonly string[], throughSeq: number): Promise<ChainEnd[]>;
  /** The ids of the chains after `after` (an empty string for the first), in ascending order, at most `limit`. */
  chainIds(after: string, limit: number): Promise<string[]>;
}

/** Thrown when a stored entry does not match its hash or its shape, or cannot be parsed: the journal fails closed. */
export class JournalCorruptError extends Error {
  readonly code = 'journal_corrupt';
  /** The journal sequence number of the stored row that failed. */
  readonly seq: number;
  /** The effect id the row is stored under. */
  readonly effectId: string;

  constructor(message: string, where: { seq: number; effectId: string }) {
    super(message);
    this.seq = where.seq;
    this.effectId = where.effectId;
  }
}
