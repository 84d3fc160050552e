import type { ClaimRow } from '../../db/journal-rules.ts';
import { type MemoryState, MemoryJournal } from '../../db/journal-memory.ts';
import { SqliteJournal } from '../../db/journal-store.ts';
import type { EntryKind, FieldsOf } from '../../shared/entries.ts';
import {
  type AppendIfResult,
  type ChainCheck,
  type ChainEnd,
  type ClaimRequest,
  type JournalStore,
  RESERVATION_MOVED,
  type ReservationGuard,
} from '../../server/journal/store.ts';

// Stores planted with the bugs the journal's contract exists to catch, as a store over another
// database could have them. journal.test.ts shows that the contract's cases fail on each.

/**
 * The bug of the stores that check outside their write's transaction: the chain and the
 * reservations are read and checked first, through the store's own reads, and only then is the
 * transaction that writes opened. Alone it behaves; two writers interleaved both pass.
 */
async function blockerReadBefore(journal: JournalStore, effectId: string, check: ChainCheck, guard: ReservationGuard | undefined): Promise<string | null> {
  const blocker = check(await journal.entries(effectId));
  if (blocker !== null || guard === undefined) return blocker;
  const { open, seq } = await journal.reservations(guard.key);
  return seq > guard.afterSeq && open.some((entry) => entry.effect_id !== effectId) ? RESERVATION_MOVED : null;
}

export class MemoryCheckingOutside extends MemoryJournal {
  override async appendIf<K extends EntryKind>(
    kind: K,
    effectId: string,
    check: ChainCheck,
    fields: FieldsOf<K>,
    claim?: ClaimRequest,
    guard?: ReservationGuard,
  ): Promise<AppendIfResult<K>> {
    const blocker = await blockerReadBefore(this, effectId, check, guard);
    return blocker !== null ? { entry: null, blocker } : super.appendIf(kind, effectId, () => null, fields, claim);
  }
}

export class SqliteCheckingOutside extends SqliteJournal {
  override async appendIf<K extends EntryKind>(
    kind: K,
    effectId: string,
    check: ChainCheck,
    fields: FieldsOf<K>,
    claim?: ClaimRequest,
    guard?: ReservationGuard,
  ): Promise<AppendIfResult<K>> {
    const blocker = await blockerReadBefore(this, effectId, check, guard);
    return blocker !== null ? { entry: null, blocker } : super.appendIf(kind, effectId, () => null, fields, claim);
  }
}

/** Reads without waiting for a write under way: a scan can see an entry its write has not sealed yet. */
export class MemoryReadingInsideWrites extends MemoryJournal {
  protected override snapshot<T>(fn: (tx: MemoryState) => Promise<T>): Promise<T> {
    return this.peek(fn);
  }
}

/**
 * The same bug on SQLite: reads run at once on the connection, without its lock or a read
 * transaction of their own, so a read can run inside a batch the connection has open and see rows
 * not committed yet (and perhaps never).
 */
export class SqliteReadingInsideWrites extends SqliteJournal {
  protected override snapshot<T>(fn: (tx: never) => Promise<T>): Promise<T> {
    return fn(this.queries as never);
  }
}

/** Takes a claim whoever holds it: two owners can hold one effect at once. */
export class MemoryClaimingTwice extends MemoryJournal {
  protected override async takeClaim(tx: MemoryState, claim: ClaimRow): Promise<boolean> {
    await this.putClaim(tx, claim);
    return true;
  }
}

/** The same bug on SQLite. */
export class SqliteClaimingTwice extends SqliteJournal {
  // The connection's prepared queries, a type the store keeps to itself.
  protected override async takeClaim(tx: never, claim: ClaimRow): Promise<boolean> {
    await this.putClaim(tx, claim);
    return true;
  }
}

/** Gives each entry of a chain the seal two places before it, not the one right before: a chain then never holds against its seals. */
export class MemorySealBeforeWrong extends MemoryJournal {
  protected override async sealBelow(tx: MemoryState, seq: number): Promise<string | undefined> {
    return super.sealBelow(tx, seq - 1);
  }
}

/** Pages the chains' ids by the one given, itself included: a pass over every chain would read one chain twice and never end. */
export class SqliteChainIdsFromGiven extends SqliteJournal {
  override async chainIds(after: string, limit: number): Promise<string[]> {
    return super.chainIds(after.slice(0, -1), limit);
  }
}

/** Answers where each chain stands now, whatever seq it is asked at: a start past entries the follower never read would link to later ones. */
export class SqliteChainEndsAtHead extends SqliteJournal {
  override async chainEnds(effectIds: readonly string[], _throughSeq: number): Promise<ChainEnd[]> {
    return super.chainEnds(effectIds, Number.MAX_SAFE_INTEGER);
  }
}
