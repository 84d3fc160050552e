import { afterEach, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase, type OpenDatabase } from '../../db/open.ts';
import type { Entry } from '../../shared/entries.ts';
import { JournalFollower } from '../../server/live/follower.ts';
import type { ChainEnd, JournalHead, JournalStore } from '../../server/journal/store.ts';
import { cleanUpDatabases, fakeClock } from '../support/db-journals.ts';
import { resealFrom, rewriteEntry, tamper, writeJournal } from '../support/tamper.ts';

// The follower started at a position reads only the entries after it, links a chain begun before
// it to the chain's last entry as the journal holds it (one read a page), and holds the tails of
// the chains that moved most recently only.

const opened: OpenDatabase[] = [];
afterEach(() => {
  for (const o of opened.splice(0)) o.close();
  cleanUpDatabases();
});

/** 40 chains of three entries, interleaved: chain n at seqs n, 40 + n and 80 + n. */
const CHAINS = 40;

/** A journal counting its `chainEnds` calls. */
class CountedJournal extends SqliteJournal {
  chainEndsCalls = 0;

  override chainEnds(effectIds: readonly string[], throughSeq: number): Promise<ChainEnd[]> {
    this.chainEndsCalls += 1;
    return super.chainEnds(effectIds, throughSeq);
  }
}

function journalOf(file: string): CountedJournal {
  const database = openDatabase(file);
  opened.push(database);
  return new CountedJournal({ db: database.db, ...fakeClock() });
}

/** Every entry a follower hands on, with its seq. */
function heard(follower: JournalFollower): Array<[number, Entry]> {
  const entries: Array<[number, Entry]> = [];
  follower.on('entry', (entry, seq) => entries.push([seq, entry]));
  return entries;
}

/** Where the journal stood at `seq`, read from its seals. */
async function positionAt(journal: JournalStore, seq: number): Promise<JournalHead> {
  return { seq, size: seq, globalHash: (await journal.sealAt(seq)) ?? '' };
}

describe('a follower started at a position', () => {
  it('reads only the entries after it, and ends where a follower from seq 0 ends, with the same entries past it', async () => {
    const file = await writeJournal(CHAINS);
    const journal = journalOf(file);
    const whole = new JournalFollower(journal);
    const wholeHeard = heard(whole);
    await whole.catchUp();
    const started = new JournalFollower(journal);
    const startedHeard = heard(started);
    started.startAt(await positionAt(journal, 100));
    journal.chainEndsCalls = 0;
    await started.catchUp();
    expect(started.entriesRead).toBe(3 * CHAINS - 100);
    expect(whole.entriesRead).toBe(3 * CHAINS);
    expect(started.head).toEqual(whole.head);
    expect(startedHeard).toEqual(wholeHeard.filter(([seq]) => seq > 100));
    // Every chain the tail touches began before the start: its tail is the journal's, the length counted.
    const last = wholeHeard.at(-1)?.[1].effect_id ?? '';
    expect(started.tail(last)).toEqual(whole.tail(last));
    expect(started.tail(last)?.length).toBe(3);
    // The chains of the page were looked up together: one read, not one per entry.
    expect(journal.chainEndsCalls).toBe(1);
  });

  it('refuses an entry after the start that does not link to its chain’s last entry before it, rewritten with every seal after it', async () => {
    const file = await writeJournal(CHAINS);
    // Seq 110 is chain 30's third entry; its second, at seq 70, is before the start.
    tamper(file, (sqlite) => {
      rewriteEntry(sqlite, 110, { prev: 'f'.repeat(64) });
      resealFrom(sqlite, 110);
    });
    const journal = journalOf(file);
    const started = new JournalFollower(journal);
    started.startAt(await positionAt(journal, 100));
    await expect(started.catchUp()).rejects.toThrow('journal entry seq 110 does not link to the entry before it in its chain');
  });

  it('refuses a first entry that does not follow the global hash it was started at', async () => {
    const file = await writeJournal(CHAINS);
    const journal = journalOf(file);
    const started = new JournalFollower(journal);
    started.startAt({ ...(await positionAt(journal, 100)), globalHash: 'a'.repeat(64) });
    await expect(started.catchUp()).rejects.toThrow('journal entry seq 101 breaks the global chain');
  });

  it('refuses a position at the head whose global hash is not the seal stored there', async () => {
    const file = await writeJournal(CHAINS);
    const journal = journalOf(file);
    const started = new JournalFollower(journal);
    started.startAt({ ...(await positionAt(journal, 3 * CHAINS)), globalHash: 'a'.repeat(64) });
    await expect(started.catchUp()).rejects.toThrow(`the journal's global seal at seq ${3 * CHAINS} is not the global chain the views recomputed`);
  });

  it('starts only before its first catch-up, at a seq no smaller than its size', async () => {
    const journal = journalOf(await writeJournal(2));
    const follower = new JournalFollower(journal);
    expect(() => follower.startAt({ seq: 2, size: 3, globalHash: 'a'.repeat(64) })).toThrow(RangeError);
    await follower.catchUp();
    expect(() => follower.startAt(follower.head ?? { seq: 0, size: 0, globalHash: '' })).toThrow('before its first catch-up');
  });
});

describe('a follower holding few tails', () => {
  it('holds the chains that moved last only, and links a chain let go to its entries as the journal holds them, a read a page', async () => {
    const file = await writeJournal(CHAINS);
    const journal = journalOf(file);
    const follower = new JournalFollower(journal, async () => {}, { tailsHeldMax: 5, pageEntries: 30 });
    const whole = new JournalFollower(journal);
    await whole.catchUp();
    await follower.catchUp();
    expect(follower.tailsHeld).toBe(5);
    expect(follower.head).toEqual(whole.head);
    // The five chains that moved last, each where it stood.
    for (let n = CHAINS - 4; n <= CHAINS; n++) {
      const id = (await journal.scan(80 + n - 1, 1))[0]?.entry.effect_id ?? '';
      expect(follower.tail(id)).toEqual(whole.tail(id));
    }
    // Four pages of 30: the first begins chains 1-30, the second chains 31-40 and moves chains 1-20
    // let go in the first; each page after it reads the chains it moves together, not one per entry.
    expect(journal.chainEndsCalls).toBe(3);
  });

  it('refuses a broken link on a chain whose tail it let go', async () => {
    const file = await writeJournal(CHAINS);
    tamper(file, (sqlite) => {
      rewriteEntry(sqlite, 110, { prev: 'f'.repeat(64) });
      resealFrom(sqlite, 110);
    });
    const follower = new JournalFollower(journalOf(file), async () => {}, { tailsHeldMax: 5, pageEntries: 30 });
    await expect(follower.catchUp()).rejects.toThrow('journal entry seq 110 does not link to the entry before it in its chain');
  });
});
