import { afterAll, describe, expect, it } from 'vitest';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';
import type { Storage } from '../../db/port/storage.ts';
import { openStorage } from '../../db/sqlite-storage.ts';
import { CONFIG_CHAIN_ID } from '../../shared/entries.ts';
import { configEntryFields } from '../../server/config/config-at-start.ts';
import { Views } from '../../server/views/views.ts';
import { cleanUpDatabases, fakeClock, tempDbFile } from '../support/db-journals.ts';

// The config's reloads kept in their derived table on a real SQLite file: every reload is read
// from the table, the last one is held in memory, and a restart over the same file (the tables
// kept) answers both as before it and as views rebuilt from the journal.

const wall = fakeClock();
const file = tempDbFile();
const opened: Storage[] = [];
afterAll(async () => {
  for (const storage of opened) await storage.close();
  cleanUpDatabases();
});

function viewsOn(storage: Storage, derived = storage.derived): Views {
  return new Views({ journal: storage.journal({ wallClockMs: () => wall.nowMs }), inboxName: 'inbox', nowMs: () => 0, log: { fatal: () => {}, error: () => {} }, derived });
}

const reload = (n: number) =>
  configEntryFields({
    atMs: 1_000 * n,
    sha256: String(n).padStart(64, '0'),
    cause: n === 1 ? 'start' : 'reload',
    comparedWith: n === 1 ? null : String(n - 1).padStart(64, '0'),
    roster: { people: [`p${n}`], members: [] },
    changes: { peopleAdded: [`p${n}`], peopleRemoved: n === 1 ? [] : [`p${n - 1}`], joined: [], left: [] },
  });

async function answers(views: Views) {
  const { configReloads } = await views.current();
  return { all: await configReloads.all(), latest: configReloads.latest() };
}

describe('the config’s reloads on their derived table', () => {
  it('are read from the table, the last held in memory, the same across a restart and a rebuild', async () => {
    const storage = await openStorage({ file });
    opened.push(storage);
    const views = viewsOn(storage);
    expect(await views.replayAtStart()).toBeNull();
    for (let n = 1; n <= 3; n++) await views.journal.append('CONFIG', CONFIG_CHAIN_ID, reload(n));
    const before = await answers(views);
    expect(before.all.map((r) => [r.sha256.slice(-1), r.peopleAdded, r.peopleRemoved])).toEqual([
      ['1', ['p1'], []],
      ['2', ['p2'], ['p1']],
      ['3', ['p3'], ['p2']],
    ]);
    expect(before.latest).toEqual(before.all.at(-1));
    const restarted = viewsOn(storage);
    expect(await restarted.replayAtStart()).toBeNull();
    expect(await answers(restarted)).toEqual(before);
    const rebuilt = viewsOn(storage, new MemoryDerivedTables());
    expect(await rebuilt.replayAtStart()).toBeNull();
    expect(await answers(rebuilt)).toEqual(before);
  });
});
