import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXPECTED_PG_GUARDS, pgGuardProblems, pgGuardsOf } from '../../db/pg/guards.ts';
import { openPgPool } from '../../db/pg/pool.ts';
import { copyPgDatabase, dropPgDatabase, freshPgDatabase, type PgDatabase, postgresCluster, postgresOrSkip } from '../support/postgres.ts';

// The PostgreSQL journal's guards, held as SQLite's are (test/integrity/tamper.test.ts): the
// database's owner can drop, disable or replace them, and every such change is found.

const available = postgresOrSkip('the PostgreSQL guards test (test/db/pg-guards.test.ts)');

describe.skipIf(!available)('the PostgreSQL journal guards', () => {
  let template: PgDatabase;
  const made: PgDatabase[] = [];
  const pools: Array<ReturnType<typeof openPgPool>> = [];
  beforeAll(async () => {
    template = await freshPgDatabase('guards_template');
  });
  afterAll(async () => {
    await Promise.all(pools.map((pool) => pool.end()));
    for (const database of [...made, template]) if (database !== undefined) await dropPgDatabase(database);
  });

  /** A fresh copy of the migrated database after its owner ran `sql`, seen through Interlock's role. */
  const copyAfter = async (sql: string) => {
    const database = await copyPgDatabase(template, 'guards_case');
    made.push(database);
    if (sql !== '') await (await postgresCluster()).psql(database.name, sql);
    const pool = openPgPool({ url: database.appUrl, max: 1 });
    pools.push(pool);
    return pool;
  };
  const problemsAfter = async (sql: string) => (await pgGuardProblems(await copyAfter(sql))).map(({ guard, problem }) => `${guard.name} ${problem}`);

  it('a freshly migrated database holds exactly the guards the migrations make, and none is a problem', async () => {
    const pool = await copyAfter('');
    const client = await pool.connect();
    try {
      expect(await pgGuardsOf(client)).toEqual([...EXPECTED_PG_GUARDS]);
    } finally {
      client.release();
    }
    expect(await pgGuardProblems(pool)).toEqual([]);
  });

  const tampering: Array<[string, string, string[]]> = [
    ['a dropped trigger', 'DROP TRIGGER entries_no_update ON entries', ['entries_no_update missing']],
    ['a disabled trigger', 'ALTER TABLE entries DISABLE TRIGGER entries_no_delete', ['entries_no_delete changed']],
    ['a dropped index', 'DROP INDEX entries_one_committed', ['entries_one_committed missing']],
    ['an index made again weaker', "DROP INDEX entries_no_fork; CREATE UNIQUE INDEX entries_no_fork ON entries (effect_id, prev)", ['entries_no_fork changed']],
    [
      'the function every append-only trigger runs, replaced by one that lets everything through',
      'CREATE OR REPLACE FUNCTION refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN OLD; END $$',
      EXPECTED_PG_GUARDS.filter((g) => g.sql.includes('runs refuse_change')).map((g) => `${g.name} changed`),
    ],
  ];
  for (const [what, sql, expected] of tampering) {
    it(`finds ${what}`, async () => {
      expect(await problemsAfter(sql)).toEqual(expected);
    });
  }
});
