import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';
import type { DerivedChange, DerivedTables } from '../../db/port/derived.ts';
import type { Storage } from '../../db/port/storage.ts';
import { openStorage } from '../../db/sqlite-storage.ts';
import { startInterlock } from '../../server/app/runtime.ts';
import { parseEnv } from '../../server/config/env.ts';
import { rebuildViews } from '../../server/views/rebuild.ts';
import { VIEWS_VERSION } from '../../server/views/version.ts';
import { Views } from '../../server/views/views.ts';
import { JournalDamagedError } from '../../server/integrity/damage.ts';
import { checkJournalAtStart } from '../../server/integrity/start-check.ts';
import { refundChain } from '../support/ledger-journal.ts';
import { tamper } from '../support/tamper.ts';

// Derived tables are rebuilt at start when they are missing, of another views version, or not
// this journal's (their cursor past the journal's head, or the journal's seal at their cursor not
// their global hash): the server listens meanwhile, `/readyz` telling the progress, and a journal
// an earlier Interlock wrote is copied first.

const dir = mkdtempSync(join(tmpdir(), 'interlock-rebuild-at-start-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A journal file of refunds `from`..`to` (4 entries each), written with no derived tables, as an earlier Interlock left it. */
async function journalFile(name: string, from: number, to: number): Promise<string> {
  const file = join(dir, name);
  const storage = await openStorage({ file });
  const journal = storage.journal({ wallClockMs: () => Date.now() });
  for (let first = from; first <= to; first += 1_000) {
    const chains = Array.from({ length: Math.min(1_000, to - first + 1) }, (_, i) => refundChain(first + i));
    await journal.appendSealed(chains.flat());
  }
  await storage.close();
  return file;
}

/** Lay `source`'s tables, rows and cursor as they stand, over `target`'s: a file copied or restored under them. */
async function copyTables(source: DerivedTables, target: DerivedTables): Promise<void> {
  const cursor = await source.cursor();
  const changes: DerivedChange[] = [];
  for (const { view } of await source.digests()) {
    for (const row of await source.list(view, { direction: 'asc', limit: 1_000_000 })) changes.push({ view, key: row.key, row });
  }
  await target.reset(VIEWS_VERSION);
  expect(await target.advance({ fromSeq: 0, to: cursor!, changes })).toBe(true);
}

/** What a start's replay logs and leaves in the tables of `storage`. */
async function replayAtStart(storage: Storage) {
  const info: string[] = [];
  const views = new Views({ journal: storage.journal({ wallClockMs: () => Date.now() }), inboxName: 'inbox', nowMs: () => 0, log: { fatal: () => {}, error: () => {}, info: (_fields, message) => info.push(message) }, derived: storage.derived });
  expect(await views.replayAtStart()).toBeNull();
  return { info, cursor: await storage.derived.cursor(), digests: await storage.derived.digests() };
}

/** The digests of the journal's tables rebuilt from scratch, apart. */
async function fromScratch(storage: Storage) {
  return (await rebuildViews({ journal: storage.journal({ wallClockMs: () => Date.now() }), tables: new MemoryDerivedTables(), inboxName: 'inbox' })).digests;
}

describe("tables that are not this journal's are rebuilt at start", () => {
  it("tables built on another journal's history, copied across, fail the seal at their cursor", async () => {
    const mine = await openStorage({ file: await journalFile('mine.sqlite', 1, 30) });
    const theirs = await openStorage({ file: await journalFile('theirs.sqlite', 101, 110) });
    try {
      await rebuildViews({ journal: theirs.journal({ wallClockMs: () => Date.now() }), tables: theirs.derived, inboxName: 'inbox' });
      await copyTables(theirs.derived, mine.derived);
      expect((await mine.derived.cursor())?.seq).toBe(40);
      const started = await replayAtStart(mine);
      expect(started.info[0]).toContain("do not match the journal's seal at their cursor");
      expect(started.info[1]).toMatch(/^rebuilt the views' derived tables from 120 journal entries/);
      expect(started.cursor?.seq).toBe(120);
      expect(started.digests).toEqual(await fromScratch(mine));
    } finally {
      await mine.close();
      await theirs.close();
    }
  });

  it("tables whose cursor stands past the journal's head (an older copy of the journal under them) are rebuilt", async () => {
    const longer = await openStorage({ file: await journalFile('longer.sqlite', 1, 30) });
    const shorter = await openStorage({ file: await journalFile('shorter.sqlite', 1, 10) });
    try {
      await rebuildViews({ journal: longer.journal({ wallClockMs: () => Date.now() }), tables: longer.derived, inboxName: 'inbox' });
      await copyTables(longer.derived, shorter.derived);
      const started = await replayAtStart(shorter);
      expect(started.info[0]).toContain("stand past the journal's head");
      expect(started.cursor?.seq).toBe(40);
      expect(started.digests).toEqual(await fromScratch(shorter));
    } finally {
      await longer.close();
      await shorter.close();
    }
  });

  it("the journal's own tables, behind its head, are kept and caught up with no rebuild", async () => {
    const shorter = await openStorage({ file: await journalFile('own-short.sqlite', 1, 10) });
    const longer = await openStorage({ file: await journalFile('own-long.sqlite', 1, 30) });
    try {
      await rebuildViews({ journal: shorter.journal({ wallClockMs: () => Date.now() }), tables: shorter.derived, inboxName: 'inbox' });
      await copyTables(shorter.derived, longer.derived);
      const started = await replayAtStart(longer);
      expect(started.info).toEqual([]);
      expect(started.cursor?.seq).toBe(120);
      expect(started.digests).toEqual(await fromScratch(longer));
    } finally {
      await shorter.close();
      await longer.close();
    }
  });
});

describe('the copy before the first rebuild', () => {
  it('is taken for a journal with no tables at all, and not for tables of another views version (a cache)', async () => {
    const copies = (name: string) => readdirSync(dir).filter((file) => file.startsWith(`${name}.before-views-`));
    const started = async (name: string, tables: (storage: Storage) => Promise<void>) => {
      const storage = await openStorage({ file: await journalFile(name, 1, 5) });
      const info: string[] = [];
      try {
        await tables(storage);
        const journal = storage.journal({ wallClockMs: () => Date.now() });
        const views = new Views({ journal, inboxName: 'inbox', nowMs: () => 0, log: { fatal: () => {}, error: () => {}, info: (_fields, message) => info.push(message) }, derived: storage.derived });
        expect((await checkJournalAtStart({ storage, journal: views.journal, views, log: { info: (_fields, message) => info.push(message) } })).size).toBe(20);
        return info;
      } finally {
        await storage.close();
      }
    };
    const none = await started('none.sqlite', async () => {});
    expect(copies('none.sqlite')).toHaveLength(1);
    expect(none[0]).toBe(`the journal has no derived tables yet (written by an earlier Interlock): the database before they are built is at ${join(dir, copies('none.sqlite')[0]!)}`);
    const older = await started('older.sqlite', (storage) => storage.derived.reset('views-0'));
    expect(copies('older.sqlite')).toEqual([]);
    expect(older[0]).toContain('were written by another version of the views');
  });
});

describe('a server whose journal has no derived tables yet', () => {
  it('listens while it rebuilds them: /readyz 503 not_ready with the progress, /healthz 200, a copy beside the journal first', async () => {
    const file = await journalFile('earlier.sqlite', 1, 2_500);
    const lines: Array<{ msg: string; event?: string; backup?: string }> = [];
    let url: string | null = null;
    const logStream = {
      write(line: string) {
        const parsed = JSON.parse(line) as { msg: string };
        lines.push(parsed);
        url ??= /^Interlock on (\S+);/.exec(parsed.msg)?.[1] ?? null;
      },
    };
    const env = parseEnv({ DB_PATH: file, DATA_DIR: `${file}.data`, PORT: '0', SANDBOX_PORT: '0', SANDBOX_DEMO: '0', LOG_LEVEL: 'info' });
    const starting = startInterlock(env, { logStream });
    const answers: Array<{ status: number; body: { error?: { code: string }; rebuild?: { reason: string; entries: number; size: number; percent: number; seconds: number } } }> = [];
    let healthz: number | null = null;
    let metrics = '';
    let metricsDuring = false;
    let started = false;
    void starting.then(() => (started = true), () => (started = true));
    while (!started) {
      if (url !== null) {
        const answer = await fetch(`${url}/readyz`);
        answers.push({ status: answer.status, body: (await answer.json()) as (typeof answers)[number]['body'] });
        if (answers.at(-1)?.body.rebuild !== undefined && healthz === null) {
          healthz = (await fetch(`${url}/healthz`)).status;
          metrics = await (await fetch(`${url}/metrics`)).text();
          metricsDuring = !lines.some(({ event }) => event === 'views_rebuild_done');
        }
      } else await new Promise((resolve) => setTimeout(resolve, 2));
    }
    const running = await starting;
    try {
      const during = answers.filter(({ body }) => body.rebuild !== undefined);
      expect(during.length).toBeGreaterThan(0);
      for (const { status, body } of during) {
        expect([status, body.error?.code, body.rebuild?.reason, body.rebuild?.size]).toEqual([503, 'not_ready', 'missing', 10_000]);
        expect(body.rebuild!.entries).toBeLessThanOrEqual(10_000);
        expect(body.rebuild!.percent).toBe(Math.floor((body.rebuild!.entries / 10_000) * 1_000) / 10);
        expect(body.rebuild!.seconds).toBeGreaterThanOrEqual(0);
      }
      // Polled from the moment it listens: the first answer comes before the last page is folded.
      expect(during[0]!.body.rebuild!.entries).toBeLessThan(10_000);
      expect(healthz).toBe(200);
      // /metrics answers during the rebuild too, with the journal's size, rather than wait for its end.
      expect(metricsDuring).toBe(true);
      expect(metrics).toMatch(/^interlock_journal_entries 10000$/m);
      expect((await fetch(`${running.url}/readyz`)).status).toBe(200);
      const events = lines.map(({ event }) => event).filter((event) => event?.startsWith('views_'));
      expect(events).toEqual(['views_backup', 'views_rebuild_started', 'views_rebuild_done']);
      expect(lines.find(({ event }) => event === 'views_rebuild_done')?.msg).toMatch(/^rebuilt the views' derived tables from 10000 journal entries in [0-9.]+ s \([0-9]+ entries\/s\)$/);
      const backup = lines.find(({ event }) => event === 'views_backup')?.backup;
      expect(backup).toMatch(new RegExp(`^${file.replace(/[.]/g, '\\.')}\\.before-views-.*\\.sqlite$`));
      expect(existsSync(backup!)).toBe(true);
      const copy = await openStorage({ file: backup! });
      try {
        expect([(await copy.journal({ wallClockMs: () => 0 }).head())?.size, await copy.derived.cursor()]).toEqual([10_000, null]);
      } finally {
        await copy.close();
      }
    } finally {
      await running.close();
    }
    // The next start finds its own tables: no rebuild, no copy.
    lines.length = 0;
    const again = await startInterlock(env, { logStream });
    await again.close();
    expect(lines.filter(({ event }) => event?.startsWith('views_'))).toEqual([]);
    expect(readdirSync(dir).filter((name) => name.startsWith('earlier.sqlite.before-views-'))).toHaveLength(1);
  }, 120_000);

  it('a journal the rebuild finds damaged is refused as before, and the server it listened with is closed', async () => {
    const file = await journalFile('damaged.sqlite', 1, 10);
    tamper(file, (sqlite) => sqlite.prepare('UPDATE entries SET ts_ms = ts_ms + 1 WHERE seq = 30').run());
    let url: string | null = null;
    const logStream = {
      write(line: string) {
        url ??= /^Interlock on (\S+);/.exec((JSON.parse(line) as { msg: string }).msg)?.[1] ?? null;
      },
    };
    const env = parseEnv({ DB_PATH: file, DATA_DIR: `${file}.data`, PORT: '0', SANDBOX_PORT: '0', SANDBOX_DEMO: '0', LOG_LEVEL: 'info' });
    const refused = await startInterlock(env, { logStream }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(JournalDamagedError);
    expect((refused as JournalDamagedError).site?.seq).toBe(30);
    expect(url).not.toBeNull();
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  }, 60_000);

  it('journal routes wait for the whole check: a journal whose checkpoint fails after the rebuild shows them nothing', async () => {
    const file = await journalFile('checkpointed.sqlite', 1, 2_500);
    // A first start builds the tables and signs a checkpoint with its data folder's key.
    const first = await startInterlock(parseEnv({ DB_PATH: file, DATA_DIR: `${file}.data`, PORT: '0', SANDBOX_PORT: '0', SANDBOX_DEMO: '0', LOG_LEVEL: 'silent' }));
    await first.close();
    // The tables gone, and a data folder whose new key the checkpoint does not verify with.
    tamper(file, (sqlite) => sqlite.exec('DELETE FROM derived_cursor; DELETE FROM derived_rows; DELETE FROM derived_digests; DELETE FROM derived_marks'));
    let url: string | null = null;
    const logStream = {
      write(line: string) {
        url ??= /^Interlock on (\S+);/.exec((JSON.parse(line) as { msg: string }).msg)?.[1] ?? null;
      },
    };
    const env = parseEnv({ DB_PATH: file, DATA_DIR: `${file}.other`, PORT: '0', SANDBOX_PORT: '0', SANDBOX_DEMO: '0', LOG_LEVEL: 'info' });
    let settled = false;
    const starting = startInterlock(env, { logStream }).catch((error: unknown) => error);
    void starting.then(() => (settled = true));
    let asked: Promise<{ status: number; code: string }> | null = null;
    while (!settled && asked === null) {
      if (url !== null && (await (await fetch(`${url}/readyz`)).json()).rebuild !== undefined) {
        const headers = { authorization: 'Bearer sk_agent_demo_support_bot' };
        asked = fetch(`${url}/v1/refunds/no-such-request`, { headers }).then(async (answer) => ({ status: answer.status, code: ((await answer.json()) as { error: { code: string } }).error.code }));
      } else await new Promise((resolve) => setTimeout(resolve, 2));
    }
    const refused = await starting;
    expect(refused).toBeInstanceOf(JournalDamagedError);
    expect((refused as JournalDamagedError).code).toBe('checkpoint_invalid');
    expect(asked).not.toBeNull();
    expect(await asked).toEqual({ status: 503, code: 'not_ready' });
  }, 60_000);
});
