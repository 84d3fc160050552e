import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPgPool } from '../../db/pg/pool.ts';
import { AGENT_TOKEN, DEMO_PASSWORD } from '../support/app-world.ts';
import { dropPgDatabase, emptyPgDatabase, type PgDatabase, postgresCluster, postgresOrSkip } from '../support/postgres.ts';
import { freePort, type ServerProcess, startServerProcess, writeTestConfig } from '../support/server-process.ts';

// `npm start` on PostgreSQL, as a real process: DATABASE_URL names the application's role on a
// database an operator just created, DATABASE_MIGRATE_URL its owner. The server migrates it,
// answers an agent's refund as the README's quick start asks it, is killed with SIGKILL, and
// starts again on the same database: the refund is still known, and a new one goes through.

const available = postgresOrSkip('the server on PostgreSQL (test/db/pg-server-process.test.ts)');

describe.skipIf(!available)('the server on PostgreSQL (real process)', () => {
  let database: PgDatabase;
  let dir: string;
  let env: Record<string, string>;
  let server: ServerProcess | null = null;
  let sandboxUrl: string;

  beforeAll(async () => {
    database = await emptyPgDatabase('server_process');
    dir = mkdtempSync(join(tmpdir(), 'interlock-pg-server-'));
    const sandboxPort = await freePort();
    sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
    env = {
      PORT: String(await freePort()),
      SANDBOX_PORT: String(sandboxPort),
      DATA_DIR: join(dir, 'data'),
      INTERLOCK_CONFIG: writeTestConfig(dir, { unpaced: true }),
      DATABASE_URL: database.appUrl,
      DATABASE_MIGRATE_URL: database.ownerUrl,
    };
  }, 60_000);

  afterAll(async () => {
    server?.child.kill('SIGKILL');
    if (server !== null) await server.exited;
    if (database !== undefined) await dropPgDatabase(database);
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  const agent = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(server!.url + path, {
      method,
      headers: { authorization: `Bearer ${AGENT_TOKEN}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  /**
   * Ask for a refund as an agent does: once, then its status until the answer is final. A server
   * just started may hold no share of the Stripe budget yet and answer 202 QUEUED (waiting its
   * turn); the agent asks again, as docs/agents/http-api.md tells it to.
   */
  const refund = async (body: { request_id: string; payment_intent: string; amount: number }) => {
    let answer = await agent('POST', '/v1/refunds', body);
    const deadline = Date.now() + 30_000;
    while (answer.status === 202 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      answer = await agent('GET', `/v1/refunds/${body.request_id}`);
    }
    return answer;
  };

  /** A payment in the embedded sandbox, as the quick start makes one: its id. */
  const payment = async (amountCents: number): Promise<string> => {
    const made = await fetch(`${sandboxUrl}/_sandbox/payment-intents`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ amountCents }) });
    return ((await made.json()) as { id: string }).id;
  };

  /** GET `path` as `name`, logged in with the demo password: the status and the text. */
  const asPerson = async (name: string, path: string): Promise<{ status: number; text: string }> => {
    const login = await fetch(`${server!.url}/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, password: DEMO_PASSWORD }) });
    const cookie = String(login.headers.get('set-cookie')).split(';')[0]!;
    const response = await fetch(server!.url + path, { headers: { cookie } });
    return { status: response.status, text: await response.text() };
  };

  const entriesInDatabase = async (): Promise<number> => Number(await (await postgresCluster()).psql(database.name, 'SELECT count(*) FROM entries'));

  it('migrates the database, commits a refund, and after SIGKILL knows it and commits a new one', async () => {
    server = await startServerProcess({ ...env, LOG_LEVEL: 'warn' }, { logs: true, readyTimeoutMs: 90_000 });
    const pi = await payment(10_000);
    const first = await refund({ request_id: 'case-4471', payment_intent: pi, amount: 2000 });
    expect(first.body.status, `${JSON.stringify(first.body)} ${server.stdout()}`).toBe('COMMITTED');
    const known = await agent('GET', '/v1/refunds/case-4471');
    expect(known.body.status, `${JSON.stringify(known.body)} ${server.stdout()}`).toBe('COMMITTED');
    // Everything went to PostgreSQL: no journal file was made in the data folder.
    expect(existsSync(join(env.DATA_DIR!, 'interlock.sqlite'))).toBe(false);
    const written = await entriesInDatabase();
    expect(written).toBeGreaterThan(0);

    server.child.kill('SIGKILL');
    expect(await server.exited).toBe('SIGKILL');
    server = await startServerProcess({ ...env, LOG_LEVEL: 'warn' }, { logs: true, readyTimeoutMs: 90_000 });
    expect(await agent('GET', '/v1/refunds/case-4471')).toEqual(known);
    const again = await agent('POST', '/v1/refunds', { request_id: 'case-4471', payment_intent: pi, amount: 2000 });
    expect(again.body.status, `${JSON.stringify(again.body)} ${server.stdout()}`).toBe('DUPLICATE_IGNORED');
    const second = await refund({ request_id: 'case-4473', payment_intent: pi, amount: 1500 });
    expect(second.body.status, `${JSON.stringify(second.body)} ${server.stdout()}`).toBe('COMMITTED');
    expect(await entriesInDatabase()).toBeGreaterThan(written);
    expect(existsSync(join(env.DATA_DIR!, 'interlock.sqlite'))).toBe(false);

    // Finance's ledger CSV holds both, newest first, as the JSON pages give them.
    const page = JSON.parse((await asPerson('fin', '/api/ledger')).text) as { rows: Array<{ request_id: string }> };
    expect(page.rows.map((row) => row.request_id)).toEqual(['case-4473', 'case-4471']);
    const csv = await asPerson('fin', '/api/ledger.csv');
    expect(csv.status).toBe(200);
    const lines = csv.text.trimEnd().split('\r\n');
    expect(lines).toHaveLength(3);
    expect(lines[1]).toContain('case-4473');
    expect(lines[2]).toContain('case-4471');

    // Migrated already, the database is opened by the application's role alone: no owner's URL needed.
    server.child.kill('SIGKILL');
    await server.exited;
    const { DATABASE_MIGRATE_URL: _owner, ...appOnly } = env;
    server = await startServerProcess({ ...appOnly, LOG_LEVEL: 'warn' }, { logs: true, readyTimeoutMs: 90_000 });
    expect(await agent('GET', '/v1/refunds/case-4471')).toEqual(known);
  }, 300_000);

  it('the application role the server was given may alter, truncate or replace nothing of the schema it migrated', async () => {
    const app = openPgPool({ url: database.appUrl, max: 1 });
    try {
      const tables = (await app.query<{ name: string }>("SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")).rows.map((row) => row.name);
      expect(tables).toEqual(expect.arrayContaining(['entries', 'journal_seals', 'journal_head', 'sessions', 'grants', 'derived_rows', 'interlock_migrations']));
      for (const table of tables) {
        await expect(app.query(`ALTER TABLE ${table} ADD COLUMN planted int`), table).rejects.toThrow(/must be owner/);
        await expect(app.query(`TRUNCATE ${table}`), table).rejects.toThrow(/permission denied/);
        await expect(app.query(`DROP TABLE ${table}`), table).rejects.toThrow(/must be owner/);
      }
      await expect(app.query('ALTER TABLE entries DISABLE TRIGGER entries_no_update')).rejects.toThrow(/must be owner/);
      await expect(app.query('DROP TRIGGER entries_no_delete ON entries')).rejects.toThrow(/must be owner/);
      await expect(app.query('CREATE OR REPLACE FUNCTION refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$')).rejects.toThrow(/must be owner|permission denied/);
      await expect(app.query('CREATE TABLE planted (x int)')).rejects.toThrow(/permission denied/);
      await expect(app.query('UPDATE entries SET body = body')).rejects.toThrow(/permission denied/);
      await expect(app.query('DELETE FROM entries')).rejects.toThrow(/permission denied/);
    } finally {
      await app.end();
    }
  });
});
