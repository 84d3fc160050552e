import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../db/open.ts';
import { loadConfigFile } from '../../server/config/load.ts';
import { buildAppWorld } from '../support/app-world.ts';
import { clientFor, freePort, type ServerProcess, startServerProcess, withoutPerson, writeTestConfig } from '../support/server-process.ts';

// The config edited while the server was down: the next start journals it as a reload does (who
// came and went, the file's hash) before anything else, lapses the approvals it took away, and the
// views rebuilt from the journal are the ones the server shows. A real process, killed and started.

const dir = mkdtempSync(join(tmpdir(), 'interlock-start-config-'));
let server: ServerProcess | null = null;
afterAll(() => {
  server?.child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

type Row = { seq: number; kind: string; effect_id: string; body: string };

function journalRows(dataDir: string): Row[] {
  const database = openDatabase(join(dataDir, 'interlock.sqlite'));
  try {
    return database.sqlite.prepare('SELECT seq, kind, effect_id, body FROM entries ORDER BY seq').all() as Row[];
  } finally {
    database.close();
  }
}

const sha256Of = (text: string) => createHash('sha256').update(text).digest('hex');

describe('a config edited while the server was down (real process)', () => {
  it('the next start journals who left before anything else, lapses their unsent approval, and a rebuild equals the views', async () => {
    const config = writeTestConfig(dir, { unpaced: true });
    const first = readFileSync(config, 'utf8');
    const sandboxPort = await freePort();
    const env = { PORT: String(await freePort()), SANDBOX_PORT: String(sandboxPort), DATA_DIR: join(dir, 'data'), INTERLOCK_CONFIG: config };
    // The first start dies right after bea's approval is journaled, before its send: an approval left unsent.
    server = await startServerProcess({ ...env, INTERLOCK_KILL_AT: 'before_dispatch' });
    const api = clientFor(server.url);
    const made = await fetch(`http://127.0.0.1:${sandboxPort}/_sandbox/payment-intents`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ amountCents: 10_000 }) });
    const pi = String(((await made.json()) as { id: string }).id);
    const asked = await api.agent('POST', '/v1/refunds', { request_id: 'left-while-down', payment_intent: pi, amount: 8_000 });
    expect(asked.body.status).toBe('QUEUED');
    const effectId = String(asked.body.effect_id);
    const [item] = (await api.as('bea', 'GET', '/api/inbox')).body.items as { escalation: string }[];
    await api.as('bea', 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation: item!.escalation }).catch(() => null);
    expect(await server.exited).toBe('SIGKILL');
    server = null;

    // While it is down, bea leaves: out of ap-leads and out of people.
    const second = withoutPerson(first, 'bea');
    writeFileSync(config, second);
    server = await startServerProcess(env);
    api.rebase(server.url);

    const rows = journalRows(env.DATA_DIR);
    const configs = rows.filter((row) => row.kind === 'CONFIG');
    expect(configs.map((row) => JSON.parse(row.body))).toEqual([
      // The journal's first start names the file it started on, with no one added or removed.
      expect.objectContaining({ cause: 'start', sha256: sha256Of(first), compared_with: null, people_added: [], people_removed: [], people: expect.arrayContaining(['ana', 'bea']) }),
      // The start after the edit names who left, compared with the file before.
      expect.objectContaining({
        cause: 'start',
        sha256: sha256Of(second),
        compared_with: sha256Of(first),
        people_removed: ['bea'],
        left: [{ group: 'ap-leads', name: 'bea' }],
        people_added: [],
        joined: [],
      }),
    ]);
    // Her approval lapsed after that entry, refused on the lease with nothing sent, and the item is back before ap-leads.
    const refused = rows.filter((row) => row.effect_id === effectId && row.kind === 'REFUSED');
    expect(refused.map((row) => JSON.parse(row.body).code)).toEqual(['lease']);
    expect(refused[0]!.seq).toBeGreaterThan(configs[1]!.seq);
    expect(rows.filter((row) => row.kind === 'DISPATCHED')).toEqual([]);
    const shown = (await api.as('ana', 'GET', `/api/items/${effectId}`)).body;
    expect(shown).toMatchObject({ state: 'ESCALATED' });
    const inbox = (await api.as('ana', 'GET', '/api/inbox')).body;
    expect(inbox.items).toEqual([expect.objectContaining({ effect_id: effectId, reason: 'approver_removed' })]);

    const before = { inbox: withoutClock(inbox), closed: (await api.as('ana', 'GET', '/api/closed')).body };
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe('0');
    server = null;

    // Rebuilt in process from the journal alone, on the same file: the same views, and nothing more journaled.
    const loaded = loadConfigFile(config);
    const rebuilt = await buildAppWorld({ dir: env.DATA_DIR, config: loaded.config, configSha256: loaded.sha256 });
    try {
      const ana = await rebuilt.login('ana');
      const again = (await rebuilt.as(ana, 'GET', '/api/inbox')).json();
      expect({ inbox: withoutClock(again), closed: (await rebuilt.as(ana, 'GET', '/api/closed')).json() }).toEqual(before);
    } finally {
      await rebuilt.close();
    }
    expect(journalRows(env.DATA_DIR).filter((row) => row.kind === 'CONFIG')).toHaveLength(2);
  }, 60_000);
});

/** The inbox without the moving clock and the display cache of current facts. */
function withoutClock(inbox: { items?: unknown[] }) {
  return { ...inbox, now_ms: undefined, items: (inbox.items ?? []).map((item) => ({ ...(item as object), current: undefined })) };
}
