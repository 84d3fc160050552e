import { closesDispatch } from '../server/journal/chain.ts';
import { CONFIG_CHAIN_ID, ENTRY_KINDS, EPOCH_CHAIN_ID, type Entry, type EntryKind, type EntryOf, MESSAGE_KINDS } from '../shared/entries.ts';
import { isJsonObject, type JsonObject, plain } from '../shared/json.ts';
import { limits } from '../shared/limits.ts';
import { canonical, entryHashHolds, sealEntry, storedTextHashHolds } from '../server/journal/hash.ts';
import { entryShapeProblem, isKind } from '../server/journal/shapes.ts';
import { JournalCorruptError } from '../server/journal/store.ts';
import type { EntryRow } from './schema.ts';

// The rules both journal backends share: what a caller may write, how an entry is sealed and
// stored as a row, and how a stored row is trusted again. Pure functions, no I/O.

/** A row of `entries` before SQLite (or the memory backend) gives it a `seq`. */
export type NewEntryRow = Omit<EntryRow, 'seq'>;

/** A row of `claims`: who owns an effect, until when. */
export interface ClaimRow {
  effectId: string;
  owner: string;
  expiresMs: number;
}

const ENVELOPE_KEYS = ['effect_id', 'kind', 'ts_ms', 'prev', 'hash'] as const;
const effectIdPattern = new RegExp(`^[0-9a-f]{${limits.effectIdHexChars}}$`);
const messageIdPattern = new RegExp(`^m[0-9a-f]{${limits.messageIdHexChars}}$`);
const messageKinds: ReadonlySet<string> = new Set(MESSAGE_KINDS);

/**
 * Refuse a chain id of the wrong shape: an effect's is 12 lowercase hex characters, a message's
 * `m` and 23. With a kind, also refuse a kind on the other family's chain: a message's entries
 * never land on an effect's chain, nor an effect's on a message's.
 */
export function assertEffectId(effectId: string, kind?: EntryKind): void {
  const isEffect = typeof effectId === 'string' && effectIdPattern.test(effectId);
  const isMessage = typeof effectId === 'string' && messageIdPattern.test(effectId);
  const isEpoch = effectId === EPOCH_CHAIN_ID;
  const isConfig = effectId === CONFIG_CHAIN_ID;
  // The epochs' chain holds EPOCH entries and nothing else; an EPOCH goes nowhere else. So with the config's reloads.
  if (kind !== undefined && (kind === 'EPOCH') !== isEpoch) throw new TypeError(`${kind} does not belong on the chain ${String(effectId)}`);
  if (kind !== undefined && (kind === 'CONFIG') !== isConfig) throw new TypeError(`${kind} does not belong on the chain ${String(effectId)}`);
  if (isEpoch || isConfig) return;
  if (!isEffect && !isMessage) {
    throw new TypeError(`effect id must be ${limits.effectIdHexChars} lowercase hex characters (or a message id): ${String(effectId)}`);
  }
  if (kind !== undefined && messageKinds.has(kind) !== isMessage) {
    throw new TypeError(`${kind} does not belong on ${isMessage ? 'a message' : 'an effect'}'s chain: ${effectId}`);
  }
}

/** Refuse a kind outside the closed list (a JS caller or a cast can get past the type). */
export function assertKind(kind: EntryKind): void {
  if (!ENTRY_KINDS.includes(kind)) throw new TypeError(`unknown entry kind: ${String(kind)}`);
}

/**
 * Check and normalise the kind-specific fields of an entry. The JSON round trip makes what is
 * hashed exactly what is read back; the envelope keys are refused because the store alone decides
 * them, and a caller-chosen `prev` or `hash` would forge the chain.
 */
export function normaliseFields(fields: object): JsonObject {
  if (!isJsonObject(fields)) throw new TypeError('entry fields must be a JSON object');
  const normalised = plain(fields);
  if (!isJsonObject(normalised)) throw new TypeError('entry fields must be a JSON object');
  for (const key of ENVELOPE_KEYS) {
    if (Object.hasOwn(fields, key) || Object.hasOwn(normalised, key)) {
      throw new TypeError(`field "${key}" belongs to the entry envelope and is set by the journal`);
    }
  }
  return normalised;
}

/** Refuse a claim owner or lifetime that could not mean what the caller intends. */
export function assertClaim(owner: string, ttlMs: number): void {
  if (typeof owner !== 'string' || owner.length === 0) throw new TypeError('claim owner must be a non-empty string');
  if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0) throw new TypeError(`claim ttlMs must be a positive integer: ${ttlMs}`);
}

/** Refuse a wall clock reading that is not integer milliseconds. */
export function assertTimeMs(nowMs: number): void {
  if (!Number.isSafeInteger(nowMs) || nowMs < 0) throw new TypeError(`wall clock must give integer ms: ${nowMs}`);
}


/** True when `owner` may take the claim now: none held, held by itself, or the holder's has expired. */
export function claimIsFree(held: ClaimRow | undefined, owner: string, nowMs: number): boolean {
  // A claim expiring exactly now counts as expired, as on every backend of the spec (§2.5).
  return held === undefined || held.owner === owner || held.expiresMs <= nowMs;
}

/**
 * Seal the next entry of an effect, chained to `last` (the effect's newest entry, if any). The
 * sealed entry must have its kind's shape: a writer that builds another is our bug, caught here
 * before anything is stored.
 */
export function sealNext<K extends EntryKind>(kind: K, effectId: string, fields: JsonObject, last: Entry | undefined, tsMs: number): EntryOf<K> {
  const sealed = sealEntry({ ...fields, effect_id: effectId, kind, ts_ms: tsMs, prev: last?.hash ?? null });
  if (!isEntryValue(sealed) || !isKind(sealed, kind)) throw new TypeError(`a ${kind} entry must have its kind's shape: ${entryShapeProblem(sealed)}`);
  return sealed;
}

/** The row that stores a sealed entry. */
export function rowOf(entry: Entry): NewEntryRow {
  return {
    effectId: entry.effect_id,
    kind: entry.kind,
    prev: entry.prev,
    hash: entry.hash,
    closes: closesDispatch(entry) ? 1 : 0,
    tsMs: entry.ts_ms,
    // Canonical, so a read checks the hash over the stored text itself (storedTextHashHolds).
    body: canonical(entry),
    reserves: reservesOf(entry),
  };
}

/** What a DISPATCHED reserves (its `reserves` field), or null for any other entry. */
export function reservesOf(entry: Pick<Entry, 'kind'> & JsonObject): string | null {
  return entry.kind === 'DISPATCHED' && typeof entry.reserves === 'string' ? entry.reserves : null;
}

/** Row bodies a journal remembers as checked: a few MiB of the most recent rows. */
export const verifiedBodiesMax = 8_192;

/**
 * Row bodies already found to match their hash, by seq. Whether a body's hash holds depends on
 * its text alone, so a row read again with the very same text needs no second hash: a write
 * chains to the entry the previous write made, and a check re-reads the chain it just extended.
 * A body that differs in any character is checked from scratch. The oldest are forgotten first.
 */
export class VerifiedBodies implements CheckedBodies {
  readonly #bodies = new Map<number, string>();
  /**
   * The seqs remembered, oldest first, as a ring: the next to forget is at `#oldest`. Asking the
   * map for its first key after deleting from its front walks over every deleted slot, which made
   * `remember` a few microseconds a row in the background pass's reads.
   */
  readonly #order: number[] = [];
  #oldest = 0;

  /**
   * The same memory, consulted but never added to: for a scan, which reads each row once. Keeping
   * every scanned body alive a while longer would only make the garbage collector copy it.
   */
  readonly lookupOnly: CheckedBodies = {
    holds: (seq, body) => this.holds(seq, body),
    remember: () => {},
  };

  holds(seq: number, body: string): boolean {
    return this.#bodies.get(seq) === body;
  }

  remember(seq: number, body: string): void {
    if (!this.#bodies.has(seq)) {
      if (this.#order.length < verifiedBodiesMax) this.#order.push(seq);
      else {
        this.#bodies.delete(this.#order[this.#oldest] ?? seq);
        this.#order[this.#oldest] = seq;
        this.#oldest = (this.#oldest + 1) % verifiedBodiesMax;
      }
    }
    this.#bodies.set(seq, body);
  }
}

/** Row bodies known to match their hash, as `entryOfRow` consults and tells them. */
export interface CheckedBodies {
  holds(seq: number, body: string): boolean;
  remember(seq: number, body: string): void;
  /**
   * A memory that keeps what each body was trusted as: the entry (frozen to its depths, answered
   * to every read of the row) `entryOfRow` made of this very body at this seq before, if kept.
   */
  entryOf?(seq: number, body: string): Entry | undefined;
  /** Keep the entry a body was trusted as, for `entryOf`; answers the entry to hand out (frozen). */
  keepEntry?(seq: number, body: string, entry: Entry): Entry;
}

/**
 * Trust a stored row again: its body must parse to an entry whose hash holds and whose envelope
 * agrees with every column SQL searches by. Anything else throws, naming the seq: the journal
 * fails closed rather than skip or guess. With `verified`, a body checked before is not hashed
 * again (it is still parsed, so the caller gets an entry of its own, and checked against the row).
 */
export function entryOfRow(row: EntryRow, verified?: CheckedBodies): Entry {
  // The journal numbers entries from 1; a row below that was put there by hand, where reading the
  // journal in order (the replay, the global chain, the checkpoints) never looks.
  if (!(row.seq >= 1)) throw corruptRow(row, "is stored outside the journal's order (its entries are numbered from 1)");
  const kept = verified?.entryOf?.(row.seq, row.body);
  if (kept !== undefined) {
    // The same text was parsed, shaped and hashed before: what is left is whether the columns agree.
    if (!agreesWithColumns(kept, row)) throw corruptRow(row, 'disagrees with its columns');
    return kept;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(row.body);
  } catch {
    throw corruptRow(row, 'is not valid JSON');
  }
  if (!isJsonObject(parsed)) throw corruptRow(row, 'is not a sealed entry');
  if (!isEntryValue(parsed)) throw corruptRow(row, `is not a sealed entry: ${entryShapeProblem(parsed)}`);
  if (verified === undefined || !verified.holds(row.seq, row.body)) {
    // The stored text is the canonical JSON the hash covers; a body in another form (written
    // before bodies were canonical) is checked by re-serialising the parsed entry.
    if (!storedTextHashHolds(row.body, parsed.hash) && !entryHashHolds(parsed)) throw corruptRow(row, 'does not match its hash');
    verified?.remember(row.seq, row.body);
  }
  if (!agreesWithColumns(parsed, row)) throw corruptRow(row, 'disagrees with its columns');
  return verified?.keepEntry?.(row.seq, row.body, parsed) ?? parsed;
}

/** True when an entry's envelope agrees with every column SQL searches its row by. */
function agreesWithColumns(entry: Entry, row: EntryRow): boolean {
  return (
    entry.effect_id === row.effectId &&
    entry.kind === row.kind &&
    entry.prev === row.prev &&
    entry.hash === row.hash &&
    entry.ts_ms === row.tsMs &&
    closesDispatch(entry) === (row.closes === 1) &&
    reservesOf(entry) === (row.reserves ?? null)
  );
}

function corruptRow(row: EntryRow, why: string): JournalCorruptError {
  return new JournalCorruptError(`journal entry seq ${row.seq} ${why}`, { seq: row.seq, effectId: row.effectId });
}

/** A row of `entries` as SQLite returns it: the columns in their order in the table. */
type EntryTuple = [
  seq: EntryRow['seq'],
  effectId: EntryRow['effectId'],
  kind: EntryRow['kind'],
  prev: EntryRow['prev'],
  hash: EntryRow['hash'],
  closes: EntryRow['closes'],
  tsMs: EntryRow['tsMs'],
  body: EntryRow['body'],
  reserves: EntryRow['reserves'],
];

const entryKinds: ReadonlySet<unknown> = new Set(ENTRY_KINDS);

/** True for a row whose columns hold what the schema declares: its NOT NULLs, CHECKs and types held. */
function isEntryTuple(row: unknown[]): row is EntryTuple {
  return (
    row.length === 9 &&
    typeof row[0] === 'number' &&
    typeof row[1] === 'string' &&
    entryKinds.has(row[2]) &&
    (row[3] === null || typeof row[3] === 'string') &&
    typeof row[4] === 'string' &&
    typeof row[5] === 'number' &&
    typeof row[6] === 'number' &&
    typeof row[7] === 'string' &&
    (row[8] === null || typeof row[8] === 'string')
  );
}

/**
 * A row of `entries` read as a tuple (the column order of the table), as the row drizzle would
 * have mapped it, once its columns hold what the schema declares; else the journal is corrupt.
 */
export function entryRowOfTuple(t: unknown[]): EntryRow {
  if (!isEntryTuple(t)) throw new JournalCorruptError(`journal entry seq ${String(t[0])} has columns the schema does not allow`, { seq: Number(t[0]), effectId: String(t[1]) });
  return { seq: t[0], effectId: t[1], kind: t[2], prev: t[3], hash: t[4], closes: t[5], tsMs: t[6], body: t[7], reserves: t[8] };
}

/** Trust one effect's rows (in seq order) as a chain: each entry must link to the one before it. */
export function chainOfRows(rows: readonly EntryRow[], verified?: CheckedBodies): Entry[] {
  const chain: Entry[] = [];
  for (const row of rows) chain.push(linkedEntryOfRow(row, chain.at(-1)?.hash ?? null, verified));
  return chain;
}

/** Trust a row as the next entry of its chain (`entryOfRow`): it must link to `prevHash`, null for a chain's first. */
export function linkedEntryOfRow(row: EntryRow, prevHash: string | null, verified?: CheckedBodies): Entry {
  const entry = entryOfRow(row, verified);
  if (entry.prev !== prevHash) {
    throw new JournalCorruptError(`journal entry seq ${row.seq} does not link to the entry before it`, { seq: row.seq, effectId: row.effectId });
  }
  return entry;
}

/** True for a JSON object whose shape check passed (entryShapeProblem), as the type of an entry. */
function isEntryValue(value: JsonObject): value is JsonObject & Entry {
  return entryShapeProblem(value) === null;
}
