import Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { migrateDatabase } from './open.ts';
import * as schema from './schema.ts';

// The schema's guards are what keeps the journal append-only and unforked: the triggers that
// refuse UPDATE and DELETE, and the unique indexes (one hash, no fork, one COMMITTED). Someone
// who can write the database file can drop them; start-up holds them against the ones the
// migrations make, so a journal whose guards are gone is never written to again unnoticed.

/** The tables whose triggers and indexes are guards. */
const GUARDED_TABLES = ['entries', 'journal_seals', 'journal_checkpoints'] as const;

/** One trigger or index, as SQLite keeps it. */
export interface Guard {
  type: 'trigger' | 'index';
  name: string;
  table: string;
  sql: string;
}

/** A guard the database lacks, or holds in another form than its migration made it. */
export interface GuardProblem {
  guard: Guard;
  problem: 'missing' | 'changed';
}

let expected: readonly Guard[] | null = null;

/** The guards the migrations make, read off a database migrated in memory (once a process). */
export function expectedGuards(): readonly Guard[] {
  if (expected === null) {
    const sqlite = new Database(':memory:');
    try {
      migrateDatabase(drizzle({ client: sqlite, schema }));
      expected = guardsOf(sqlite);
    } finally {
      sqlite.close();
    }
  }
  return expected;
}

/** The triggers and explicit indexes on the guarded tables (a unique constraint's own index has no SQL and cannot be dropped). */
export function guardsOf(sqlite: Database.Database): Guard[] {
  const rows = sqlite
    .prepare<string[], Guard>(`SELECT type, name, tbl_name AS "table", sql FROM sqlite_master WHERE type IN ('trigger', 'index') AND sql IS NOT NULL AND tbl_name IN (${GUARDED_TABLES.map(() => '?').join(', ')}) ORDER BY name`)
    .all(...GUARDED_TABLES);
  return rows.map((row) => ({ ...row, sql: normalised(row.sql) }));
}

/** Every guard the migrations make that `sqlite` lacks or holds changed; empty when all hold. */
export function guardProblems(sqlite: Database.Database): GuardProblem[] {
  const present = new Map(guardsOf(sqlite).map((guard) => [guard.name, guard]));
  const problems: GuardProblem[] = [];
  for (const guard of expectedGuards()) {
    const found = present.get(guard.name);
    if (found === undefined) problems.push({ guard, problem: 'missing' });
    else if (found.sql !== guard.sql || found.table !== guard.table || found.type !== guard.type) problems.push({ guard, problem: 'changed' });
  }
  return problems;
}

/** Put back every missing or changed guard, in one transaction; for a journal that verified whole. */
export function restoreGuards(sqlite: Database.Database): GuardProblem[] {
  const problems = guardProblems(sqlite);
  sqlite.transaction(() => {
    for (const { guard, problem } of problems) {
      if (problem === 'changed') sqlite.exec(`DROP ${guard.type === 'trigger' ? 'TRIGGER' : 'INDEX'} IF EXISTS "${guard.name}"`);
      sqlite.exec(guard.sql);
    }
  })();
  return problems;
}

/** One line saying what is wrong with the guards. */
export function describeGuardProblems(problems: readonly GuardProblem[]): string {
  const named = problems.map(({ guard, problem }) => `${guard.type} ${guard.name} on ${guard.table} is ${problem}`).join(', ');
  return `the journal's append-only guards do not hold (${named}): rows may have been changed or removed while they were off`;
}

// The same statement in another layout is the same guard: whitespace is collapsed, nothing else.
function normalised(sql: string): string {
  return sql.replace(/\s+/g, ' ').trim();
}
