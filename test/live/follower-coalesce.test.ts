import { afterEach, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase, type OpenDatabase } from '../../db/open.ts';
import { JournalFollower } from '../../server/live/follower.ts';
import { cleanUpDatabases, effectIdOf, fakeClock, fields, tempDbFile } from '../support/db-journals.ts';

// A catch-up asked for while another is running resolves once everything durable before the ask
// is applied: also when the ask comes while the running one checks the stored seal at its end.
// A reader that asked after an append (the outbox planning after an agent's escalation) must find
// it folded.

const opened: OpenDatabase[] = [];
afterEach(() => {
  for (const o of opened.splice(0)) o.close();
  cleanUpDatabases();
});

/** A journal whose seal read waits, once armed, until released: the end of a catch-up held open. */
class HeldSealJournal extends SqliteJournal {
  #armed: { entered: () => void; wait: Promise<void> } | null = null;

  /** The next seal read waits for `release`; resolves once that read has begun. */
  holdNextSeal(): { entered: Promise<void>; release: () => void } {
    let entered!: () => void;
    let release!: () => void;
    const enteredPromise = new Promise<void>((resolve) => (entered = resolve));
    this.#armed = { entered, wait: new Promise<void>((resolve) => (release = resolve)) };
    return { entered: enteredPromise, release };
  }

  override async sealAt(seq: number): Promise<string | null> {
    const armed = this.#armed;
    if (armed !== null) {
      this.#armed = null;
      armed.entered();
      await armed.wait;
    }
    return super.sealAt(seq);
  }
}

describe('a catch-up asked for while one runs', () => {
  it('applies an entry appended while the running one checks its seal', async () => {
    const database = openDatabase(tempDbFile());
    opened.push(database);
    const journal = new HeldSealJournal({ db: database.db, ...fakeClock() });
    const follower = new JournalFollower(journal);
    await journal.append('PROPOSED', effectIdOf(1), fields('PROPOSED'));

    const held = journal.holdNextSeal();
    const running = follower.catchUp();
    await held.entered;
    await journal.append('PROPOSED', effectIdOf(2), fields('PROPOSED'));
    const head = await journal.head();
    const asked = follower.catchUp();
    held.release();
    await asked;
    expect(head?.seq).toBe(2);
    expect(follower.seq).toBe(2);
    await running;
  });
});
