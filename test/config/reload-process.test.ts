import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { openDatabase } from '../../db/open.ts';
import { loadConfigFile } from '../../server/config/load.ts';
import { verifyJournalFile } from '../../server/integrity/verify-journal.ts';
import { PID_FILE, type ReloadAnswer, readReloadAnswer } from '../../server/app/reload-files.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';
import { clientFor, freePort, type ServerProcess, startServerProcess, withoutPerson, writeTestConfig, compiledEntry } from '../support/server-process.ts';

// `npm run reload` against a real server process: SIGHUP reloads the file, a removed person's
// session and live feed end, a bad file is refused with the old config kept, the reload is in the
// journal, and the views rebuilt from it are the ones the server showed. SIGTERM still stops it gracefully.

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'interlock-reload-process-'));
let server: ServerProcess | null = null;
afterAll(async () => {
  server?.child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** `npm run reload` as an operator runs it: its exit code and what it printed. */
function runReload(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--enable-source-maps', compiledEntry('reload')], { cwd: repoRoot, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

/** What people are shown, without the moving clock and the display cache of current facts. */
async function views(api: Pick<ReturnType<typeof clientFor>, 'as'>) {
  const inbox = (await api.as('ana', 'GET', '/api/inbox')).body;
  const items = (inbox.items ?? []).map((item) => ({ ...(item as object), current: undefined }));
  return {
    inbox: { ...inbox, now_ms: undefined, items },
    closed: (await api.as('ana', 'GET', '/api/closed')).body,
    directory: (await api.as('ana', 'GET', '/api/directory')).body,
    scoreboard: (await api.as('fin', 'GET', '/api/scoreboard')).body.board,
  };
}

describe('npm run reload and SIGHUP (real process)', () => {
  it('reloads on SIGHUP, ends a removed person’s session and feed, refuses a bad file, and the journal rebuilds the same views', async () => {
    const config = writeTestConfig(dir, { unpaced: true });
    const sandboxPort = await freePort();
    const env = { PORT: String(await freePort()), SANDBOX_PORT: String(sandboxPort), DATA_DIR: join(dir, 'data'), INTERLOCK_CONFIG: config, LOG_LEVEL: 'info' };
    server = await startServerProcess(env, { logs: true });
    expect(readFileSync(join(env.DATA_DIR, PID_FILE), 'utf8').trim()).toBe(String(server.child.pid));
    const api = clientFor(server.url);
    // An item for ap-leads (over $50), and bea's feed open on it.
    const made = await fetch(`http://127.0.0.1:${sandboxPort}/_sandbox/payment-intents`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ amountCents: 10_000 }) });
    const pi = String(((await made.json()) as { id: string }).id);
    expect((await api.agent('POST', '/v1/refunds', { request_id: 'reload-1', payment_intent: pi, amount: 8_000 })).body.status).toBe('QUEUED');
    expect((await api.as('bea', 'GET', '/api/inbox')).body.items).toHaveLength(1);
    const beaCookie = await loginCookie(server.url, 'bea');
    const feed = new WebSocket(`${server.url.replace('http', 'ws')}/api/live`, { headers: { cookie: beaCookie } });
    const feedClosed = new Promise<number>((resolve) => feed.once('close', (code) => resolve(code)));
    await new Promise((resolve) => feed.once('message', resolve));

    // bea leaves: the command prints what changed, her session and feed end.
    const good = withoutPerson(readFileSync(config, 'utf8'), 'bea');
    writeFileSync(config, good);
    const reloaded = await runReload(env);
    expect(reloaded).toMatchObject({ code: 0 });
    expect(reloaded.stdout).toContain('people removed: bea');
    expect(reloaded.stdout).toContain('left: bea in ap-leads');
    expect(reloaded.stdout).toContain('sessions ended: 2');
    expect(await feedClosed).toBe(4401);
    expect((await fetch(`${server.url}/api/inbox`, { headers: { cookie: beaCookie } })).status).toBe(401);
    expect((await api.as('ana', 'GET', '/api/inbox')).body.items).toHaveLength(1);

    // A bad file: refused, said in the answer and in the log, and the config in force stays.
    writeFileSync(config, good.replace('ap-leads: [ana]', 'ap-leads: [ana, nobody]'));
    server.child.kill('SIGHUP');
    const refused = await answered(env.DATA_DIR, 2);
    expect(refused).toMatchObject({ outcome: 'refused', why: expect.stringMatching(/groups\.ap-leads/) });
    const running = server;
    await until(() => running.stdout().includes('config reload refused'));
    expect(server.stdout()).toContain('config reload refused, the config in force stays');
    expect((await api.as('ana', 'GET', '/api/directory')).body.people).not.toContainEqual(expect.objectContaining({ name: 'bea' }));
    writeFileSync(config, good);

    // SIGTERM stops it gracefully, and says so; the pid file goes with it.
    const before = await views(api);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe('0');
    expect(existsSync(join(env.DATA_DIR, PID_FILE))).toBe(false);
    server = null;

    // The journal holds the reload with the file's hash; a restart rebuilds the same views.
    const database = openDatabase(join(env.DATA_DIR, 'interlock.sqlite'));
    const rows = database.sqlite.prepare("SELECT body FROM entries WHERE kind = 'CONFIG'").all() as { body: string }[];
    database.close();
    expect(rows.map((row) => JSON.parse(row.body))).toEqual([
      expect.objectContaining({ cause: 'start', compared_with: null }),
      expect.objectContaining({ cause: 'reload', sha256: createHash('sha256').update(good).digest('hex'), people_removed: ['bea'], left: [{ group: 'ap-leads', name: 'bea' }] }),
    ]);
    // The journal holding it passes the integrity check a start makes (chains, global chain, replay).
    expect(await verifyJournalFile(join(env.DATA_DIR, 'interlock.sqlite'))).toMatchObject({ valid: true });
    // Rebuilt in process from the journal the server wrote, with the file in force.
    const rebuilt = await buildAppWorld({ dir: env.DATA_DIR, config: loadConfigFile(config).config });
    try {
      expect(await views(inProcess(rebuilt))).toEqual(before);
    } finally {
      await rebuilt.close();
    }
  }, 60_000);
});

/** Wait (at most 10 s) until `done`, as a log line reaches the pipe. */
async function until(done: () => boolean): Promise<void> {
  for (const deadline = Date.now() + 10_000; !done() && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 50));
}

/** The reload answer numbered `n` of the running server, once it is written. */
async function answered(dataDir: string, n: number): Promise<ReloadAnswer> {
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
    const answer = readReloadAnswer(dataDir);
    if (answer !== null && answer.n >= n) return answer;
  }
  throw new Error(`no reload answer ${n}`);
}

/** The people's calls of `clientFor`, answered in process by a world's app. */
function inProcess(world: AppWorld): Pick<ReturnType<typeof clientFor>, 'as'> {
  const logins = new Map<string, { cookie: string; csrf: string }>();
  return {
    async as(name, method, path) {
      if (!logins.has(name)) logins.set(name, await world.login(name));
      const response = await world.as(logins.get(name)!, method, path);
      return { status: response.statusCode, body: response.json() };
    },
  };
}

async function loginCookie(url: string, name: string): Promise<string> {
  const login = await fetch(`${url}/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, password: 'interlock-demo' }) });
  return String(login.headers.get('set-cookie')).split(';')[0]!;
}
