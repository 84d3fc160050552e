import type pg from 'pg';
import type { Guard, GuardProblem } from '../journal-guards.ts';
import { checkIn, checkOut, portErrorOfPg } from './pool.ts';

// The PostgreSQL schema's guards, as db/journal-guards.ts holds SQLite's: the triggers that refuse
// UPDATE, DELETE and TRUNCATE (with the body of the function each runs, which an owner could
// replace by one that lets everything through) and the indexes that forbid forks, a second
// COMMITTED and a repeated seq or hash. The database's owner can drop or disable any of them;
// start-up holds them against the ones the migrations make, so a journal whose guards went is
// never written to again unnoticed.

/** The tables whose triggers and indexes are guards. */
export const PG_GUARDED_TABLES = ['entries', 'journal_seals', 'journal_head', 'journal_checkpoints'] as const;

/** The body of refuse_change(), which every append-only trigger runs. */
const REFUSE_CHANGE = "BEGIN RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = 'restrict_violation'; END";
/** The body of refuse_head_backwards() (as 0004 makes it), which journal_head_forward runs: forward only, to the newest seal, counting the entries. */
const HEAD_FORWARD =
  "BEGIN IF NEW.id <> OLD.id OR NEW.seq < OLD.seq OR NEW.size < OLD.size THEN RAISE EXCEPTION 'journal_head only moves forward (seq % to %)', OLD.seq, NEW.seq USING ERRCODE = 'restrict_violation'; END IF; " +
  'IF NEW.global_hash IS DISTINCT FROM (SELECT s.global_hash FROM public.journal_seals AS s WHERE s.seq = NEW.seq) OR EXISTS (SELECT 1 FROM public.journal_seals AS s WHERE s.seq > NEW.seq) ' +
  "OR NEW.size - OLD.size <> (SELECT count(*) FROM public.entries AS e WHERE e.seq > OLD.seq AND e.seq <= NEW.seq) THEN RAISE EXCEPTION 'journal_head must name the newest seal and count the entries written (seq % to %)', OLD.seq, NEW.seq USING ERRCODE = 'restrict_violation'; END IF; RETURN NEW; END";

/** A trigger as pgGuardsOf reads it: PostgreSQL's own definition, whether it is enabled, and the function it runs. */
function trigger(name: string, table: string, event: 'UPDATE' | 'DELETE' | 'TRUNCATE', fn = 'refuse_change', body = REFUSE_CHANGE): Guard {
  const level = event === 'TRUNCATE' ? 'STATEMENT' : 'ROW';
  return { type: 'trigger', name, table, sql: `CREATE TRIGGER ${name} BEFORE ${event} ON public.${table} FOR EACH ${level} EXECUTE FUNCTION ${fn}(); enabled O; runs ${fn}: ${body}` };
}

/** An index as pg_get_indexdef prints it. */
function index(name: string, table: string, unique: boolean, columns: string, where = ''): Guard {
  return { type: 'index', name, table, sql: `CREATE ${unique ? 'UNIQUE ' : ''}INDEX ${name} ON public.${table} USING btree (${columns})${where}` };
}

/**
 * The guards the migrations in db/pg/migrations make, as PostgreSQL prints them back. A test
 * (test/db/pg-guards.test.ts) holds a freshly migrated database to exactly this list: a migration
 * that adds or changes a guard changes it too.
 */
export const EXPECTED_PG_GUARDS: readonly Guard[] = [
  index('entries_effect_seq', 'entries', false, 'effect_id, seq'),
  index('entries_hash_unique', 'entries', true, 'hash'),
  index('entries_kind', 'entries', false, 'kind'),
  trigger('entries_no_delete', 'entries', 'DELETE'),
  index('entries_no_fork', 'entries', true, "effect_id, COALESCE(prev, ''::text)"),
  trigger('entries_no_truncate', 'entries', 'TRUNCATE'),
  trigger('entries_no_update', 'entries', 'UPDATE'),
  index('entries_one_committed', 'entries', true, 'effect_id', " WHERE (kind = 'COMMITTED'::text)"),
  index('entries_pkey', 'entries', true, 'seq'),
  index('entries_reserves_seq', 'entries', false, 'reserves, seq'),
  trigger('journal_checkpoints_no_delete', 'journal_checkpoints', 'DELETE'),
  trigger('journal_checkpoints_no_truncate', 'journal_checkpoints', 'TRUNCATE'),
  trigger('journal_checkpoints_no_update', 'journal_checkpoints', 'UPDATE'),
  index('journal_checkpoints_pkey', 'journal_checkpoints', true, 'id'),
  trigger('journal_head_forward', 'journal_head', 'UPDATE', 'refuse_head_backwards', HEAD_FORWARD),
  trigger('journal_head_no_delete', 'journal_head', 'DELETE'),
  trigger('journal_head_no_truncate', 'journal_head', 'TRUNCATE'),
  index('journal_head_pkey', 'journal_head', true, 'id'),
  trigger('journal_seals_no_delete', 'journal_seals', 'DELETE'),
  trigger('journal_seals_no_truncate', 'journal_seals', 'TRUNCATE'),
  trigger('journal_seals_no_update', 'journal_seals', 'UPDATE'),
  index('journal_seals_pkey', 'journal_seals', true, 'seq'),
];

const GUARDS_SQL = `
SELECT 'trigger' AS type, t.tgname::text AS name, c.relname::text AS "table",
       pg_get_triggerdef(t.oid) || '; enabled ' || t.tgenabled::text || '; runs ' || p.proname::text || ': ' || p.prosrc AS sql
  FROM pg_trigger AS t
  JOIN pg_class AS c ON c.oid = t.tgrelid
  JOIN pg_proc AS p ON p.oid = t.tgfoid
 WHERE NOT t.tgisinternal AND c.relnamespace = 'public'::regnamespace AND c.relname = ANY($1::text[])
UNION ALL
SELECT 'index', i.relname::text, c.relname::text, pg_get_indexdef(i.oid) || CASE WHEN x.indisvalid THEN '' ELSE '; invalid' END
  FROM pg_index AS x
  JOIN pg_class AS i ON i.oid = x.indexrelid
  JOIN pg_class AS c ON c.oid = x.indrelid
 WHERE c.relnamespace = 'public'::regnamespace AND c.relname = ANY($1::text[])
 ORDER BY name`;

// The same definition in another layout is the same guard: whitespace is collapsed, nothing else.
function normalised(sql: string): string {
  return sql.replace(/\s+/g, ' ').trim();
}

/** The triggers and indexes on the guarded tables, as the database holds them now. */
export async function pgGuardsOf(client: pg.ClientBase): Promise<Guard[]> {
  const rows = (await client.query<Guard>(GUARDS_SQL, [PG_GUARDED_TABLES])).rows;
  return rows.map((row) => ({ ...row, sql: normalised(row.sql) }));
}

/** Every guard the migrations make that the database lacks or holds changed (or disabled); empty when all hold. */
export async function pgGuardProblems(pool: pg.Pool): Promise<GuardProblem[]> {
  const client = await checkOut(pool);
  try {
    const present = new Map((await pgGuardsOf(client)).map((guard) => [guard.name, guard]));
    const problems: GuardProblem[] = [];
    for (const guard of EXPECTED_PG_GUARDS) {
      const found = present.get(guard.name);
      if (found === undefined) problems.push({ guard, problem: 'missing' });
      else if (found.sql !== normalised(guard.sql) || found.table !== guard.table || found.type !== guard.type) problems.push({ guard, problem: 'changed' });
    }
    return problems;
  } catch (error) {
    throw portErrorOfPg(error);
  } finally {
    checkIn(client);
  }
}
