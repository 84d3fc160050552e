import type { Entry } from '../../shared/entries.ts';
import { entryHashHolds, globalHashOf } from './hash.ts';
import { JournalCorruptError, type SealedEntry } from './store.ts';

/**
 * A chain read for showing or signing, held entry by entry against its hashes and the global
 * chain, with no state kept between reads: each entry links to the one before it in the chain,
 * and its stored seal is the global hash of its own hash on the seal before it. An old row edited
 * with its hash recomputed keeps its link only at the chain's end, and never keeps its seal; rows
 * and seals rewritten together from there on are the follower's to catch, against the head it
 * recomputed (server/live/follower.ts). The entries, in order, once every one holds.
 */
export function checkSealedChain(effectId: string, sealed: readonly SealedEntry[]): Entry[] {
  const chain: Entry[] = [];
  let previousSeq = 0;
  for (const { seq, entry, global, previousGlobal } of sealed) {
    const where = { seq, effectId };
    if (entry.effect_id !== effectId) throw new JournalCorruptError(`journal entry seq ${seq} is stored on chain ${effectId} but belongs to ${entry.effect_id}`, where);
    if (!entryHashHolds(entry)) throw new JournalCorruptError(`journal entry seq ${seq} does not match its hash`, where);
    if (seq <= previousSeq) throw new JournalCorruptError(`journal entry seq ${seq} comes after seq ${previousSeq} in its chain`, where);
    if (entry.prev !== (chain.at(-1)?.hash ?? null)) throw new JournalCorruptError(`journal entry seq ${seq} does not link to the entry before it in its chain`, where);
    if (global !== globalHashOf(previousGlobal, seq, entry.hash)) {
      throw new JournalCorruptError(`journal entry seq ${seq} is not the entry its global seal sealed: it was changed after it was written`, where);
    }
    chain.push(entry);
    previousSeq = seq;
  }
  return chain;
}
