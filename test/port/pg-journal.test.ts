import { afterEach, beforeAll, beforeEach, describe } from 'vitest';
import { PgJournal } from '../../db/pg/journal.ts';
import { openPgPool } from '../../db/pg/pool.ts';
import { fileURLToPath } from 'node:url';
import type { FakeClock } from '../support/db-journals.ts';
import { raceProcesses } from '../support/db-race.ts';
import { copyPgDatabase, dropPgDatabase, freshPgDatabase, type PgDatabase, postgresOrSkip } from '../support/postgres.ts';
import { describeJournalContract, type JournalMaker } from './journal.contract.ts';

// The journal contract on PostgreSQL: every case on a fresh database (a copy of one migrated
// template), through Interlock's own role; two handles are two pools, and the cases across
// processes race real processes, each with its own pool.

const available = postgresOrSkip('the PostgreSQL journal contract (test/port/pg-journal.test.ts)');
const racerScript = fileURLToPath(new URL('./support/pg-race-child.ts', import.meta.url));

type Pool = ReturnType<typeof openPgPool>;

let template: PgDatabase;
let database: PgDatabase | null = null;
const pools: Pool[] = [];

function journalOn(url: string, clock: FakeClock): PgJournal {
  const pool = openPgPool({ url, max: 4 });
  pools.push(pool);
  return new PgJournal({ pool, wallClockMs: clock.wallClockMs });
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
});
