import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase, type OpenDatabase } from '../../db/open.ts';
import { DIGEST_MARK_EVERY } from '../../db/port/derived.ts';
import { JournalUnavailableError } from '../../server/views/failures.ts';
import { cleanUpDatabases, fakeClock, makeTempDir } from '../support/db-journals.ts';
import { appendRefunds, confirmedPastTheMark, passOver, viewsOn } from '../support/derived-check-world.ts';
import { refundEffectId } from '../support/ledger-journal.ts';
import { tamper } from '../support/tamper.ts';
import { type AppWorld, buildAppWorld, testConfig } from '../support/app-world.ts';
import { join } from 'node:path';

// The derived tables held against the journal by the background pass: at the newest mark (seq
// 10,000 here) each table's digest is recomputed from the journal alone, chain by chain, each
// chain cut at the mark; a chain that did not move since is held against the table's row. A
// table that differs fails closed: the views answer 503 until the tables are rebuilt.

let opened: OpenDatabase | null = null;
let world: AppWorld | null = null;
afterEach(async () => {
  opened?.close();
  opened = null;
  await world?.close();
  world = null;
  cleanUpDatabases();
});

/**
 * A journal file of 2,500 committed refunds (10,000 entries: a mark at 10,000), its views caught
 * up and writing their tables beside it, then refund 1 confirmed late (seq 10,001): built once,
 * closed, and copied for each case.
 */
let template = '';
beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-derived-check-'));
  template = join(dir, 'interlock.sqlite');
  const built = openDatabase(template);
  try {
    await confirmedPastTheMark(viewsOn(built));
  } finally {
    built.close();
  }
});
afterAll(() => rmSync(join(template, '..'), { recursive: true, force: true }));

/** A copy of the template, its views started over it as a server starts them, and a pass over them with the derived tables' check. */
async function markedServer() {
  const file = join(makeTempDir(), 'interlock.sqlite');
  copyFileSync(template, file);
  opened = openDatabase(file);
  const fatal: Array<{ fields: object; message: string }> = [];
  const { tables, views } = viewsOn(opened, { fatal: (fields, message) => fatal.push({ fields, message }), error: () => {} });
  expect(await views.replayAtStart()).toBeNull();
  expect((await views.current()).seq).toBe(DIGEST_MARK_EVERY + 1);
  const { pass, counts } = passOver(views);
  return { file, tables, views, pass, counts, fatal };
}

// Each case passes over 10,000 entries and five views' tables: a few seconds on a loaded two-core
// machine.
describe('the derived tables checked against the journal at their newest mark', { timeout: 60_000 }, () => {
  it('tables that agree pass, though a chain moved after the mark (each chain is cut at it)', async () => {
    const { pass, counts, views, tables } = await markedServer();
    // The late confirmation moved the ledger's digest past the mark's: only a chain cut at the mark agrees with it.
    const [mark] = await tables.marks();
    expect((await tables.digests()).find((d) => d.view === 'ledger')?.sum).not.toBe(mark?.digests.find((d) => d.view === 'ledger')?.sum);
    expect(await pass.run()).toBe(true);
    expect(counts).toMatchObject({ passes: 1, derivedChecks: 1, derivedMismatches: 0, damage: 0 });
    expect(views.unavailable).toBeNull();
  });

  const changed: Array<[string, string, string, unknown[]]> = [
    ['a row’s body edited', 'ledger', "UPDATE derived_rows SET body = json_set(body, '$.amount_asked_minor', 1) WHERE view = 'ledger' AND key = ?", [refundEffectId(7)]],
    ['a row removed', 'ledger', "DELETE FROM derived_rows WHERE view = 'ledger' AND key = ?", [refundEffectId(7)]],
    ['the mark’s digest changed', 'ledger', "UPDATE derived_marks SET sum = ? WHERE view = 'ledger'", ['1'.repeat(64)]],
    ['an inbox row’s summary edited', 'inbox', "UPDATE derived_rows SET body = json_set(body, '$.groups', json_array('risk')) WHERE view = 'inbox' AND key = ?", [refundEffectId(7)]],
    ['an open inbox row made closed', 'inbox', "UPDATE derived_rows SET open = 0 WHERE view = 'inbox' AND key = ?", [refundEffectId(9)]],
    ['an inbox row removed', 'inbox', "DELETE FROM derived_rows WHERE view = 'inbox' AND key = ?", [refundEffectId(7)]],
    ['a chain’s figures edited', 'scoreboard', "UPDATE derived_rows SET body = json_set(body, '$.figures.rejected', 1) WHERE view = 'scoreboard' AND key = ?", [refundEffectId(7)]],
    ['a chain’s figures removed', 'scoreboard', "DELETE FROM derived_rows WHERE view = 'scoreboard' AND key = ?", [refundEffectId(7)]],
    ['the mark’s scoreboard digest changed', 'scoreboard', "UPDATE derived_marks SET sum = ? WHERE view = 'scoreboard'", ['1'.repeat(64)]],
    ['an outbox item’s context edited', 'outbox.items', "UPDATE derived_rows SET body = json_set(body, '$.item.decided', json('true')) WHERE view = 'outbox.items' AND key = ?", [refundEffectId(7)]],
  ];

  it.each(changed)('%s (%s) under the running server: the next check finds it, and the views answer 503 until the tables are rebuilt', async (_name, view, statement, values) => {
    const { file, pass, counts, views, fatal } = await markedServer();
    tamper(file, (s) => expect(s.prepare(statement).run(...values).changes).toBeGreaterThan(0));
    expect(await pass.run()).toBe(false);
    expect(counts).toMatchObject({ passes: 0, derivedChecks: 0, derivedMismatches: 1, damage: 0 });
    expect(fatal).toHaveLength(1);
    expect(fatal[0]?.fields).toMatchObject({ code: 'derived_mismatch', view, seq: DIGEST_MARK_EVERY });
    expect(fatal[0]?.message).toMatch(new RegExp(`derived table ${view} disagrees with the journal at seq 10000: .*[0-9a-f]{64}.*npm run rebuild-views.*restarts Interlock`));
    await expect(views.current()).rejects.toBeInstanceOf(JournalUnavailableError);
  });
});

describe('the derived tables’ check under a running server', { timeout: 60_000 }, () => {
  it('as npm start runs it: a row edited after start is found by the next pass, every journal route answers 503 and /metrics counts it', async () => {
    const dir = makeTempDir();
    const file = join(dir, 'interlock.sqlite');
    const writing = openDatabase(file);
    const journal = new SqliteJournal({ db: writing.db, ...fakeClock() });
    await appendRefunds(journal);
    writing.close();
    const config = testConfig();
    world = await buildAppWorld({ dir, background: true, config: { ...config, integrity: { ...config.integrity, wholePassMs: 300 } } });
    const w = world;
    const fin = await w.login('fin');
    const before = await w.as(fin, 'GET', '/api/ledger?limit=10');
    expect([before.statusCode, before.json().rows.length]).toEqual([200, 10]);
    tamper(file, (s) => s.prepare("UPDATE derived_rows SET body = json_set(body, '$.amount_asked_minor', 1) WHERE view = 'ledger' AND key = ?").run(refundEffectId(7)));
    await expect.poll(() => w.services.wholePass.derivedMismatches, { timeout: 30_000 }).toBe(1);
    for (const answer of [await w.as(fin, 'GET', '/api/ledger?limit=10'), await w.agent('GET', '/v1/refunds/refund-7')]) {
      expect([answer.statusCode, answer.json().error.code]).toEqual([503, 'journal_unavailable']);
    }
    const text = (await w.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' })).body;
    expect(text).toMatch(/^interlock_journal_pass_derived_mismatch_total 1$/m);
  });
});
