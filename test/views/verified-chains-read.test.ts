import { describe, expect, it } from 'vitest';
import type { Entry } from '../../shared/entries.ts';
import { guardJournal } from '../../server/journal/guarded.ts';
import { JournalCorruptError, type JournalStore } from '../../server/journal/store.ts';
import { VerifiedChains } from '../../server/views/verified-chains.ts';

// A chain read for a decision is held against the chain as the views verified it when the read
// began. The follower may apply the chain's next entry while the read is on its way (a read on
// another connection of a PostgreSQL pool, from a snapshot taken a moment before that entry
// committed): the chain read then rightly lacks it, and is no damage. A chain that lacks what the
// views had verified before the read began is.

const entry = (hash: string) => ({ hash }) as unknown as Entry;

/** A follower holding one chain's tail, moved in place as it applies the chain's entries. */
function followerAt(length: number, hash: string) {
  const tail = { seq: length, length, hash };
  return { tail: () => tail, seq: length, tail_: tail };
}

/** A journal whose chain read resolves with `chain` once `during` has run: what happened while the read was on its way. */
function journalReading(chain: Entry[], during: () => void): JournalStore {
  return {
    entries: async () => {
      await Promise.resolve();
      during();
      return chain;
    },
  } as unknown as JournalStore;
}

describe('chains read while the follower moves on', () => {
  it('a chain read as the follower applies its next entry is held against the tail as it stood when the read began', async () => {
    const follower = followerAt(1, 'h1');
    const chains = new VerifiedChains(follower, (corrupt) => corrupt);
    const read = journalReading([entry('h1')], () => Object.assign(follower.tail_, { seq: 2, length: 2, hash: 'h2' }));
    const journal = guardJournal(read, { assertAvailable: () => {}, report: () => false, chainHold: (id) => chains.holdAsNow(id) });
    expect(await journal.entries('e1')).toHaveLength(1);
  });

  it('a chain that lacks an entry the views verified before the read began is refused', async () => {
    const follower = followerAt(2, 'h2');
    const chains = new VerifiedChains(follower, (corrupt) => corrupt);
    const journal = guardJournal(journalReading([entry('h1')], () => {}), { assertAvailable: () => {}, report: () => false, chainHold: (id) => chains.holdAsNow(id) });
    await expect(journal.entries('e1')).rejects.toThrow(JournalCorruptError);
    await expect(journal.entries('e1')).rejects.toThrow(/journal entry seq 2 is no longer the entry the views verified/);
  });
});
