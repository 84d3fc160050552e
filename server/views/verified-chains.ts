import type { Entry } from '../../shared/entries.ts';
import { JournalCorruptError, type JournalStore } from '../journal/store.ts';
import type { JournalFollower } from '../live/follower.ts';

/**
 * Chains as the views verified them: a chain read from the journal for a decision, shown or
 * signed, is held against the tail the follower holds for it. A chain whose tail the follower does
 * not hold (begun before its start, or let go) is cut at the follower's seq and held against its
 * seals alone: rows cut from its end are the background pass's to find (docs/internals/storage.md).
 */
export class VerifiedChains {
  readonly #follower: Pick<JournalFollower, 'tail' | 'seq'>;
  /** Make the views unavailable for `corrupt`: the error the caller is told. */
  readonly #fail: (corrupt: JournalCorruptError) => Error;

  constructor(follower: Pick<JournalFollower, 'tail' | 'seq'>, fail: (corrupt: JournalCorruptError) => Error) {
    this.#follower = follower;
    this.#fail = fail;
  }

  /**
   * A chain read from the journal after this call must extend the chain as the views verified it
   * now: the entry they applied last is still at its place. Rows removed or rewritten under the
   * running server (every hash of what is left may hold) would otherwise make a refund already
   * sent look new. The follower moves the tail in place as it applies the chain's next entries, so
   * what it held when asked is copied. A chain read on another connection (PostgreSQL's pool) may lack
   * entries the follower applies while the read is on its way, and is no less whole for it.
   */
  holdAsNow(effectId: string): (chain: readonly Entry[]) => void {
    const tail = this.#follower.tail(effectId);
    if (tail === undefined) return () => {};
    const held = { seq: tail.seq, length: tail.length, hash: tail.hash };
    return (chain) => {
      if (chain[held.length - 1]?.hash === held.hash) return;
      throw new JournalCorruptError(`journal entry seq ${held.seq} is no longer the entry the views verified: the chain was cut or rewritten behind the journal`, { seq: held.seq, effectId });
    };
  }

  /** One chain as far as the views verified it (`CaughtUp.chain`), read through the views' guarded journal. */
  async read(journal: Pick<JournalStore, 'sealedChain'>, effectId: string): Promise<Entry[]> {
    const tail = this.#follower.tail(effectId);
    // Every entry is held against its hash, its link and its seal before anything else
    // (server/journal/seals.ts): an old row edited, even with its hash recomputed, fails its seal,
    // with no state kept here. Rows cut from the chain's end leave the rest sealed as written, so
    // the last entry the views applied must still be the very one they verified (the tail).
    // The follower moves the tail in place as it applies the chain's next entries: what it held
    // when asked is what the chain is cut at and held against, whatever a catch-up applies meanwhile.
    const held = tail === undefined ? null : { seq: tail.seq, length: tail.length, hash: tail.hash };
    const cut = held?.seq ?? this.#follower.seq;
    let chain: Entry[];
    try {
      // Cut at the last entry the views applied: entries appended since are shown after the next catch-up.
      chain = (await journal.sealedChain(effectId)).filter(({ seq }) => seq <= cut).map(({ entry }) => entry);
    } catch (error) {
      // The guard has reported it already; the caller is told the views stand failed.
      if (error instanceof JournalCorruptError) throw this.#fail(error);
      throw error;
    }
    if (held !== null && (chain.length !== held.length || chain.at(-1)?.hash !== held.hash)) {
      throw this.#fail(new JournalCorruptError(`journal entry seq ${held.seq} is no longer the entry the views verified`, { seq: held.seq, effectId }));
    }
    return chain;
  }
}
