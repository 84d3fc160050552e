import { afterEach, beforeAll, beforeEach, describe, it } from 'vitest';
import { PgJournal } from '../../db/pg/journal.ts';
import { openPgPool } from '../../db/pg/pool.ts';
import { fileURLToPath } from 'node:url';
import type { FakeClock } from '../support/db-journals.ts';
import { raceProcesses } from '../support/db-race.ts';
import { copyPgDatabase, dropPgDatabase, freshPgDatabase, type PgDatabase, postgresOrSkip } from '../support/postgres.ts';
import { describeJournalContract, type JournalMaker, journalCases } from './journal.contract.ts';
import { PgBlindToItsBatch } from './planted-pg-journals.ts';

// The journal contract on PostgreSQL: every case on a fresh database (a copy of one migrated
// template), through Interlock's own role; two handles are two pools, and the cases across
// processes race real processes, each with its own pool.

const available = postgresOrSkip('the PostgreSQL journal contract (test/port/pg-journal.test.ts)');
const racerScript = fileURLToPath(new URL('./support/pg-race-child.ts', import.meta.url));

type Pool = ReturnType<typeof openPgPool>;

let template: PgDatabase;
let database: PgDatabase | null = null;
const pools: Pool[] = [];

function journalOn(url: string, clock: FakeClock, Journal: typeof PgJournal = PgJournal): PgJournal {
  const pool = openPgPool({ url, max: 4 });
  pools.push(pool);
  return new Journal({ pool, wallClockMs: clock.wallClockMs });
}

function current(): PgDatabase {
  if (database === null) throw new Error('no database for this case');
  return database;
}

const pgMaker: JournalMaker = {
  name: 'PgJournal',
  open: (clock) => journalOn(current().appUrl, clock),
  openTwo: (clock) => [journalOn(current().appUrl, clock), journalOn(current().appUrl, clock)],
  race: async (op, effectId, owners) => {
    const { appUrl } = current();
    const outcomes = await raceProcesses(appUrl, op, effectId, owners, racerScript);
    return { outcomes, journal: journalOn(appUrl, { wallClockMs: () => Date.now(), advance: () => {}, nowMs: 0 }) };
  },
};

describe.skipIf(!available)('PostgreSQL', () => {
  beforeAll(async () => {
    template = await freshPgDatabase('journal_template');
  });
  beforeEach(async () => {
    database = await copyPgDatabase(template, 'journal_case');
  });
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((pool) => pool.end()));
    if (database !== null) await dropPgDatabase(database);
    database = null;
  });
  describeJournalContract(pgMaker);

  // The cases a batch blind to its own writes must fail: they are what tell it from the real one.
  const blindMaker: JournalMaker = { ...pgMaker, name: 'PgJournal blind to its own batch', open: (clock) => journalOn(current().appUrl, clock, PgBlindToItsBatch) };
  describe('the journal contract fails a PostgreSQL batch blind to its own writes', () => {
    // (Two dispatches of one effect in a blind batch are still caught: the no-fork index refuses
    // the batch, and each write runs again alone. A reservation has no such index.)
    for (const name of [
      'appendIf with a guard: two effects on one payment, checked against the same read, written at once through one handle: one is written, the other is RESERVATION_MOVED',
    ]) {
      const run = journalCases[name];
      if (run === undefined) throw new Error(`no contract case is named ${name}`);
      it.fails(`${blindMaker.name}: ${name}`, () => run(blindMaker), 30_000);
    }
  });
});
