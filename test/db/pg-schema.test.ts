import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgCheckpoints } from '../../db/pg/checkpoints.ts';
import { PgJournal } from '../../db/pg/journal.ts';
import { checkPgSchema, knownPgMigrations, migratePg } from '../../db/pg/migrate.ts';
import { openPgPool } from '../../db/pg/pool.ts';
import { StoreBusyError } from '../../db/port/errors.ts';
import { SchemaAheadError } from '../../db/schema-version.ts';
import { canonical, globalHashOf } from '../../server/journal/hash.ts';
import { effectIdOf, fakeClock, fields } from '../support/db-journals.ts';
import { APP_ROLE, dropPgDatabase, freshPgDatabase, OWNER_ROLE, type PgDatabase, postgresCluster, postgresOrSkip } from '../support/postgres.ts';

// The PostgreSQL journal's schema holds what SQLite's does (test/db/sqlite-schema.test.ts): the
// journal is append-only even for its owner, chains never fork, an effect commits once, and a
// database a newer Interlock migrated is refused. The application's role can do no more than
// append, and its connections read int8 as numbers and commit synchronously.

const available = postgresOrSkip('the PostgreSQL schema tests (test/db/pg-schema.test.ts)');

type Pool = ReturnType<typeof openPgPool>;

const eid = effectIdOf(1);
/** A raw row of entries, as a hand with SQL would write it. */
const row = (seq: number, effectId: string, kind: string, prev: string | null, hash: string) => [seq, effectId, kind, prev, hash, 0, 1, '{}', null];
/** A column of each guarded table to write back as it is. */
const keyOf: Record<string, string> = { entries: 'seq', journal_seals: 'seq', journal_checkpoints: 'id' };
const INSERT = 'INSERT INTO entries (seq, effect_id, kind, prev, hash, closes, ts_ms, body, reserves) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)';

describe.skipIf(!available)('the PostgreSQL journal schema', () => {
  let database: PgDatabase;
  let app: Pool;
  let owner: Pool;
  beforeAll(async () => {
    database = await freshPgDatabase('journal_schema');
    app = openPgPool({ url: database.appUrl, max: 2 });
    owner = openPgPool({ url: database.ownerUrl, max: 2 });
    const journal = new PgJournal({ pool: app, ...fakeClock() });
    await journal.append('PROPOSED', eid, fields('PROPOSED'));
    await journal.append('COMMITTED', eid, fields('COMMITTED'));
    await new PgCheckpoints({ pool: app }).add({ epoch: 0, size: 2, head: 'a'.repeat(64), note: 'note', signedAtMs: 1 });
  });
  afterAll(async () => {
    await Promise.all([app?.end(), owner?.end()]);
    if (database !== undefined) await dropPgDatabase(database);
  });

  it('the application role may only append: UPDATE, DELETE, TRUNCATE and DDL on the journal, its seals and checkpoints are denied it', async () => {
    for (const table of ['entries', 'journal_seals', 'journal_checkpoints']) {
      await expect(app.query(`UPDATE ${table} SET ${keyOf[table]} = ${keyOf[table]}`)).rejects.toThrow(/permission denied/);
      await expect(app.query(`DELETE FROM ${table}`)).rejects.toThrow(/permission denied/);
      await expect(app.query(`TRUNCATE ${table}`)).rejects.toThrow(/permission denied/);
    }
    await expect(app.query('DROP TRIGGER entries_no_update ON entries')).rejects.toThrow(/must be owner/);
    await expect(app.query('DROP INDEX entries_no_fork')).rejects.toThrow(/must be owner/);
    await expect(app.query('DELETE FROM journal_head')).rejects.toThrow(/permission denied/);
    await expect(app.query('CREATE TABLE mine (id int)')).rejects.toThrow(/permission denied/);
  });

  it('the owner is refused by the triggers: no UPDATE, DELETE or TRUNCATE of entries, seals or checkpoints; the head never moves back nor goes', async () => {
    for (const table of ['entries', 'journal_seals', 'journal_checkpoints']) {
      await expect(owner.query(`UPDATE ${table} SET ${keyOf[table]} = ${keyOf[table]}`)).rejects.toThrow(`${table} is append-only`);
      await expect(owner.query(`DELETE FROM ${table}`)).rejects.toThrow(`${table} is append-only`);
      await expect(owner.query(`TRUNCATE ${table}`)).rejects.toThrow(`${table} is append-only`);
    }
    await expect(owner.query('UPDATE journal_head SET seq = seq - 1, size = size - 1')).rejects.toThrow(/only moves forward/);
    await expect(owner.query('DELETE FROM journal_head')).rejects.toThrow('journal_head is append-only');
    await expect(owner.query('TRUNCATE journal_head')).rejects.toThrow('journal_head is append-only');
    expect((await app.query('SELECT count(*)::int8 AS n FROM entries')).rows[0]).toEqual({ n: 2 });
  });

  it('the head cannot be rewritten in place nor moved past the seals: it names the newest seal and counts the entries', async () => {
    const before = (await owner.query('SELECT seq, global_hash, size FROM journal_head')).rows[0];
    for (const pool of [app, owner]) {
      // Its global hash rewritten at the same seq: the next entry would chain from a forged hash.
      await expect(pool.query("UPDATE journal_head SET global_hash = repeat('f', 64)")).rejects.toThrow(/journal_head/);
      // Moved ahead of every seal and entry: the next write would leave a gap in the seqs.
      await expect(pool.query("UPDATE journal_head SET seq = seq + 5, size = size + 5, global_hash = repeat('f', 64)")).rejects.toThrow(/journal_head/);
      // Its count moved without an entry.
      await expect(pool.query('UPDATE journal_head SET size = size + 1')).rejects.toThrow(/journal_head/);
    }
    expect((await owner.query('SELECT seq, global_hash, size FROM journal_head')).rows[0]).toEqual(before);
    const journal = new PgJournal({ pool: app, ...fakeClock() });
    await journal.append('PROPOSED', effectIdOf(60), fields('PROPOSED'));
    expect(await journal.head()).toMatchObject({ seq: before.seq + 1, size: before.size + 1 });
  });

  it('refuses a forked chain (two entries after one, or two first entries), a second COMMITTED and a repeated hash', async () => {
    const [first] = (await app.query<{ hash: string }>('SELECT hash FROM entries WHERE effect_id = $1 ORDER BY seq', [eid])).rows;
    await expect(app.query(INSERT, row(100, eid, 'AUTHORIZED', first!.hash, 'f'.repeat(64)))).rejects.toThrow(/entries_no_fork/);
    await expect(app.query(INSERT, row(100, eid, 'PROPOSED', null, 'e'.repeat(64)))).rejects.toThrow(/entries_no_fork/);
    await expect(app.query(INSERT, row(100, eid, 'COMMITTED', 'd'.repeat(64), 'c'.repeat(64)))).rejects.toThrow(/entries_one_committed/);
    await expect(app.query(INSERT, row(100, effectIdOf(2), 'PROPOSED', null, first!.hash))).rejects.toThrow(/entries_hash_unique/);
    await expect(app.query(INSERT, row(100, effectIdOf(2), 'NOT_A_KIND', null, 'b'.repeat(64)))).rejects.toThrow(/entries_kind_known/);
    await expect(app.query(INSERT, row(0, effectIdOf(2), 'PROPOSED', null, 'b'.repeat(64)))).rejects.toThrow(/entries_seq_from_one/);
  });

  it('bodies are text stored exactly as written, seq and times int8, ids compared byte by byte (COLLATE "C"), in a UTF8 database', async () => {
    const journal = new PgJournal({ pool: app, ...fakeClock() });
    const entry = await journal.append('PROPOSED', effectIdOf(3), fields('PROPOSED', { effect: { z: 1, a: 'é 😀', big: 1.2345678901234567e19, tiny: 1e-7, n: 1.5 } }));
    const stored = (await app.query<{ body: string }>('SELECT body FROM entries WHERE hash = $1', [entry.hash])).rows[0]?.body;
    expect(stored).toBe(canonical(entry));
    const columns = await app.query<{ column_name: string; data_type: string; collation_name: string | null }>(
      "SELECT column_name, data_type, collation_name FROM information_schema.columns WHERE table_name = 'entries' ORDER BY ordinal_position",
    );
    expect(columns.rows.map((c) => `${c.column_name} ${c.data_type} ${c.collation_name ?? '-'}`)).toEqual([
      'seq bigint -',
      'effect_id text C',
      'kind text C',
      'prev text C',
      'hash text C',
      'closes smallint -',
      'ts_ms bigint -',
      'body text -',
      'reserves text C',
    ]);
    expect((await app.query("SELECT pg_encoding_to_char(encoding) AS encoding FROM pg_database WHERE datname = current_database()")).rows[0]).toEqual({ encoding: 'UTF8' });
  });

  it('a pool reads int8 as a number (refusing one past 2^53), commits synchronously, waits 5 s at most for a lock and 10 s idle in a transaction', async () => {
    expect((await app.query("SELECT 9007199254740991::int8 AS n, current_setting('synchronous_commit') AS sync, current_setting('lock_timeout') AS wait, current_setting('idle_in_transaction_session_timeout') AS idle")).rows[0]).toEqual({
      n: 9007199254740991,
      sync: 'on',
      wait: '5s',
      idle: '10s',
    });
    await expect(app.query('SELECT 9007199254740993::int8 AS n')).rejects.toThrow(RangeError);
  });

  it('a write that waits past the lock timeout for the head row, held elsewhere, is refused as busy, with nothing written', async () => {
    const impatient = openPgPool({ url: database.appUrl, max: 1, lockTimeoutMs: 200 });
    const holder = await owner.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT seq FROM journal_head FOR UPDATE');
      const journal = new PgJournal({ pool: impatient, ...fakeClock() });
      const before = await journal.newestSeq();
      const startedMs = Date.now();
      await expect(journal.append('PROPOSED', effectIdOf(50), fields('PROPOSED'))).rejects.toThrow(StoreBusyError);
      expect(Date.now() - startedMs).toBeGreaterThanOrEqual(190);
      await holder.query('ROLLBACK');
      expect(await journal.newestSeq()).toBe(before);
      expect(await journal.entries(effectIdOf(50))).toEqual([]);
    } finally {
      holder.release();
      await impatient.end();
    }
  });

  it('concurrent appends of one process share one transaction (group commit), in the order they were made', async () => {
    const journal = new PgJournal({ pool: app, ...fakeClock() });
    const entries = await Promise.all(Array.from({ length: 20 }, (_, i) => journal.append('PROPOSED', effectIdOf(100 + i), fields('PROPOSED', { n: i }))));
    expect(journal.commitStats.ops).toBe(20);
    expect(journal.commitStats.batches).toBeLessThan(20);
    const scanned = (await journal.scan((await journal.newestSeq()) - 20, 20)).map((s) => s.entry.hash);
    expect(scanned).toEqual(entries.map((e) => e.hash));
  });

  it('a write refused inside a group-committed batch is undone alone: the others commit at consecutive seqs, the global chain unbroken', async () => {
    const journal = new PgJournal({ pool: app, ...fakeClock() });
    const from = (await journal.head())!;
    const done = await Promise.allSettled([
      journal.append('PROPOSED', effectIdOf(70), fields('PROPOSED')),
      // A second COMMITTED of an effect: the unique index refuses it, inside the batch.
      journal.append('COMMITTED', eid, fields('COMMITTED')),
      journal.append('PROPOSED', effectIdOf(71), fields('PROPOSED')),
    ]);
    expect(done.map((d) => d.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(String((done[1] as PromiseRejectedResult).reason)).toMatch(/entries_one_committed/);
    // The batch's rows go in by one statement, which the index refuses whole: nothing of the batch
    // was written, and each write ran again in a transaction of its own.
    expect(journal.commitStats).toMatchObject({ batches: 1, retriedBatches: 1 });
    const scanned = await journal.scan(from.seq, 10);
    expect(scanned.map((s) => s.seq)).toEqual([from.seq + 1, from.seq + 2]);
    expect(scanned.map((s) => s.global)).toEqual([
      globalHashOf(from.globalHash, from.seq + 1, scanned[0]!.entry.hash),
      globalHashOf(scanned[0]!.global, from.seq + 2, scanned[1]!.entry.hash),
    ]);
    expect(await journal.head()).toEqual({ seq: from.seq + 2, globalHash: scanned[1]!.global, size: from.size + 2 });
  });
});

describe.skipIf(!available)('the PostgreSQL schema version', () => {
  it('migrators racing on a fresh database each find the whole schema; running again applies nothing', async () => {
    const cluster = await postgresCluster();
    const database = await freshPgDatabase('schema_race');
    try {
      const schemas = await Promise.all([1, 2, 3].map(() => migratePg(database.ownerUrl)));
      expect(schemas.map((s) => s.schema)).toEqual([1, 2, 3].map(() => knownPgMigrations().length));
      expect(await cluster.psql(database.name, 'SELECT count(*) FROM interlock_migrations')).toBe(`${knownPgMigrations().length}\n`);
    } finally {
      await dropPgDatabase(database);
    }
  });

  it('a database a newer Interlock migrated is refused, by the migrator and by the application, before anything is written', async () => {
    const cluster = await postgresCluster();
    const database = await freshPgDatabase('schema_ahead');
    const app = openPgPool({ url: database.appUrl, max: 1 });
    try {
      expect((await checkPgSchema(app)).schema).toBe(knownPgMigrations().length);
      const next = knownPgMigrations().length + 1;
      await cluster.psql(database.name, `INSERT INTO interlock_migrations VALUES (${next}, 'from_the_future', 0); INSERT INTO schema_versions VALUES (${next}, '9.9.9', 0)`);
      await expect(migratePg(database.ownerUrl)).rejects.toThrow(SchemaAheadError);
      await expect(migratePg(database.ownerUrl)).rejects.toThrow(`this database is at schema ${next} (Interlock 9.9.9); this Interlock knows schema ${next - 1}`);
      await expect(checkPgSchema(app)).rejects.toThrow(SchemaAheadError);
      expect(await cluster.psql(database.name, 'SELECT count(*) FROM schema_versions')).toBe('2\n');
    } finally {
      await app.end();
      await dropPgDatabase(database);
    }
  });

  it('a connection lost while the schema is checked or migrated rejects the call, never ends the process', async () => {
    const database = await freshPgDatabase('schema_conn_lost');
    const cluster = await postgresCluster();
    const app = openPgPool({ url: database.appUrl, max: 1 });
    const holder = openPgPool({ url: database.ownerUrl, max: 1 });
    const holding = await holder.connect();
    /** Terminate the backend of `application` once it waits for a lock, which `holding` keeps. */
    const terminateWaiting = async (application: string) => {
      for (let tries = 0; tries < 200; tries++) {
        const pid = (await cluster.psql('postgres', `SELECT pid FROM pg_stat_activity WHERE datname = '${database.name}' AND application_name = '${application}' AND wait_event_type = 'Lock'`)).trim();
        if (pid !== '') return void (await cluster.psql('postgres', `SELECT pg_terminate_backend(${pid})`));
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error(`${application} never waited for the lock`);
    };
    try {
      await holding.query('BEGIN');
      await holding.query('LOCK TABLE interlock_migrations IN ACCESS EXCLUSIVE MODE');
      const checked = checkPgSchema(app).then(
        () => 'resolved',
        (error: Error) => error.message,
      );
      await terminateWaiting('interlock');
      expect(await checked).toMatch(/terminat/i);
      await holding.query('ROLLBACK');
      await holding.query('BEGIN');
      await holding.query("SELECT pg_advisory_xact_lock(hashtext('interlock.migrate'))");
      const migrated = migratePg(database.ownerUrl).then(
        () => 'resolved',
        (error: Error) => error.message,
      );
      await terminateWaiting('interlock-migrate');
      expect(await migrated).toMatch(/terminat/i);
      await holding.query('ROLLBACK');
      // The pool goes on: the next check takes a new connection.
      expect((await checkPgSchema(app)).schema).toBe(knownPgMigrations().length);
    } finally {
      holding.release();
      await Promise.all([app.end(), holder.end()]);
      await dropPgDatabase(database);
    }
  });

  it('a database not in UTF8 is refused, by the migrator and by the application, before anything is written', async () => {
    // In LATIN1 an entry with a character outside it would be refused only when written: a payment
    // journal that cannot take a customer's name is found at start, not mid-send.
    const database = await freshPgDatabase('schema_latin1');
    const cluster = await postgresCluster();
    const latin1 = `${database.name}_latin1`;
    await cluster.psql('postgres', `CREATE DATABASE ${latin1} OWNER ${OWNER_ROLE} TEMPLATE template0 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C'`);
    const app = openPgPool({ url: database.appUrl.replace(`/${database.name}`, `/${latin1}`), max: 1 });
    try {
      await expect(migratePg(database.ownerUrl.replace(`/${database.name}`, `/${latin1}`), { appRole: APP_ROLE })).rejects.toThrow(/encoding LATIN1.*UTF8/);
      expect(await cluster.psql(latin1, "SELECT to_regclass('entries') IS NULL")).toBe('t\n');
      await expect(checkPgSchema(app)).rejects.toThrow(/encoding LATIN1.*UTF8/);
    } finally {
      await app.end();
      await dropPgDatabase(database);
      await cluster.psql('postgres', `DROP DATABASE ${latin1} WITH (FORCE)`);
    }
  });

  it('a database not migrated yet is refused to the application, which may not migrate it', async () => {
    const database = await freshPgDatabase('schema_behind');
    const cluster = await postgresCluster();
    const bare = `${database.name}_bare`;
    await cluster.psql('postgres', `CREATE DATABASE ${bare} TEMPLATE template0`);
    const app = openPgPool({ url: database.appUrl.replace(`/${database.name}`, `/${bare}`), max: 1 });
    try {
      await expect(checkPgSchema(app)).rejects.toThrow(`at schema 0; this Interlock needs schema ${knownPgMigrations().length}: run the migrations`);
    } finally {
      await app.end();
      await dropPgDatabase(database);
      await cluster.psql('postgres', `DROP DATABASE ${bare} WITH (FORCE)`);
    }
  });
});
