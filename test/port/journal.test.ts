import { afterEach, describe, it } from 'vitest';
import { MemoryJournal, SqliteJournal } from '../../db/journal-store.ts';
import type { JournalStore } from '../../server/journal/store.ts';
import { cleanUpDatabases, type FakeClock, fakeClock, openTempDatabase, tempDbFile } from '../support/db-journals.ts';
import { raceProcesses } from '../support/db-race.ts';
import { describeJournalContract, type JournalMaker, journalCases } from './journal.contract.ts';
import {
  MemoryCheckingOutside,
  MemoryClaimingTwice,
  MemoryReadingInsideWrites,
  MemorySealBeforeWrong,
  SqliteChainEndsAtHead,
  SqliteChainIdsFromGiven,
  SqliteCheckingOutside,
  SqliteClaimingTwice,
  SqliteReadingInsideWrites,
} from './planted-journals.ts';

afterEach(cleanUpDatabases);

type SqliteKind = new (options: { db: ReturnType<typeof openTempDatabase>['db'] } & FakeClock) => JournalStore;
type MemoryKind = new (options: FakeClock) => JournalStore;

/** Memory journals of `kind`: one store, which is also both handles of `openTwo`. */
function memoryMaker(name: string, kind: MemoryKind): JournalMaker {
  return {
    name,
    open: (clock) => new kind(clock),
    openTwo: (clock) => {
      const journal = new kind(clock);
      return [journal, journal];
    },
  };
}

/** SQLite journals of `kind` on fresh temp files; `openTwo` opens two connections on one file. */
function sqliteMaker(name: string, kind: SqliteKind, races: boolean): JournalMaker {
  const onFile = (file: string, clock: FakeClock) => new kind({ db: openTempDatabase(file).db, ...clock });
  return {
    name,
    open: (clock) => onFile(tempDbFile(), clock),
    openTwo: (clock) => {
      const file = tempDbFile();
      return [onFile(file, clock), onFile(file, clock)];
    },
    // Each racer is a separate node process with its own connection, so only SQLite's file locks
    // (BEGIN IMMEDIATE) stand between them; the file is fresh, so they also race to migrate it.
    ...(races
      ? {
          race: async (op: 'dispatch' | 'claim', effectId: string, owners: string[]) => {
            const file = tempDbFile();
            const outcomes = await raceProcesses(file, op, effectId, owners);
            return { outcomes, journal: onFile(file, fakeClock()) };
          },
        }
      : {}),
  };
}

describeJournalContract(memoryMaker('MemoryJournal', MemoryJournal));
describeJournalContract(sqliteMaker('SqliteJournal', SqliteJournal, true));

/** The cases each planted bug must fail: the contract is what tells such a store from a good one. */
const planted: Array<{ maker: JournalMaker; fails: string[] }> = [
  ...[memoryMaker('MemoryJournal checking outside its transaction', MemoryCheckingOutside), sqliteMaker('SqliteJournal checking outside its transaction', SqliteCheckingOutside, false)].map((maker) => ({
    maker,
    fails: [
      'appendIf: 8 concurrent calls on one effect through one handle write exactly one DISPATCHED',
      'appendIf: calls on one effect through two handles, interleaved, write exactly one DISPATCHED, whose claim is its writer’s',
      'appendIf with a guard: two effects on one payment, each checked against the same read through its own handle: one is written, the other is RESERVATION_MOVED',
    ],
  })),
  ...[memoryMaker('MemoryJournal taking a claim twice', MemoryClaimingTwice), sqliteMaker('SqliteJournal taking a claim twice', SqliteClaimingTwice, false)].map((maker) => ({
    maker,
    fails: [
      'claim: when another owner holds it unexpired (held by w1 for 100 ms, asked after 99 ms by w2), granted = false',
      'release: only the owner drops its claim',
      'claim: claims of one effect by six owners through two handles, interleaved, grant it to exactly one',
    ],
  })),
  {
    maker: memoryMaker('MemoryJournal reading inside a write under way', MemoryReadingInsideWrites),
    fails: ['reads through one handle while the other writes see whole writes only: every entry with its seal, the head on an entry'],
  },
  {
    // On SQLite the other handle is another connection, which sees committed rows only whatever the
    // store does: the case reading through the writing handle is the one that catches it.
    maker: sqliteMaker('SqliteJournal reading inside a write under way', SqliteReadingInsideWrites, false),
    fails: ['a read through the writing handle, asked while its write is under way, sees only committed entries: nothing another handle cannot see after it'],
  },
  {
    maker: memoryMaker('MemoryJournal giving each entry the wrong seal before it', MemorySealBeforeWrong),
    fails: ['sealedChain: each entry of the chain with its seq, its seal and the seal of the entry before it in the journal, which the check holds'],
  },
  {
    maker: sqliteMaker('SqliteJournal paging chain ids from the one given', SqliteChainIdsFromGiven, false),
    fails: ['chainIds: every chain once, in ascending order, a page at a time after the last id given'],
  },
  {
    maker: sqliteMaker('SqliteJournal answering where chains stand now, whatever the seq asked', SqliteChainEndsAtHead, false),
    fails: ['chainEnds: each chain asked, where it stood at a seq: its last entry at or below it and how many entries it had; none for a chain not begun'],
  },
];

describe('the journal contract fails a store planted with a bug', () => {
  for (const { maker, fails } of planted) {
    for (const name of fails) {
      const run = journalCases[name];
      if (run === undefined) throw new Error(`no contract case is named ${name}`);
      it.fails(`${maker.name}: ${name}`, () => run(maker));
    }
  }
});
