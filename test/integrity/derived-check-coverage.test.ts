import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { makeTempDir } from '../support/db-journals.ts';
import { appendRefunds, confirmedPastTheMark, derivedCheckFiles, passOver, REFUNDS } from '../support/derived-check-world.ts';
import { refundEffectId } from '../support/ledger-journal.ts';
import { buildChain } from '../support/entries.ts';
import { CONFIG_CHAIN_ID } from '../../shared/entries.ts';
import { tamper } from '../support/tamper.ts';

// The background check promises that a derived row edited under the server, which changes what a
// page shows, fails the views closed. Rows the pages read that are not one chain's own row (the
// board's totals, the wait counts, rows whose key is no chain) must be held against the journal too.

const { viewsOver, markedFile } = derivedCheckFiles();

// Each case folds 10,000 entries into the views' tables and passes over them (2-6 s alone; one
// passed 60 s in a full run on a loaded 2-core machine).
describe('derived rows the pages read, edited on disk', { timeout: 150_000 }, () => {
  it('the board’s totals row edited: the scoreboard answers the edited count, and the check finds it', async () => {
    const file = await markedFile();
    tamper(file, (s) => expect(s.prepare("UPDATE derived_rows SET body = json_set(body, '$.board.requests', 7) WHERE view = 'scoreboard.totals'").run().changes).toBe(1));
    const { views } = viewsOver(file);
    expect(await views.replayAtStart()).toBeNull();
    // What finance is shown after the restart: the edited total, where the journal holds 2,500 requests.
    const shown = (await (await views.current()).scoreboard.board()).requests;
    const { pass, counts } = passOver(views);
    const clean = await pass.run();
    expect({ shown, clean, mismatches: counts.derivedMismatches }).toEqual({ shown: 7, clean: false, mismatches: 1 });
  });

  it('a ledger row added under a key that is no chain: the check finds it', async () => {
    const file = await markedFile();
    tamper(file, (s) => expect(s.prepare("INSERT INTO derived_rows (view, key, ord, open, body) SELECT view, 'zz-not-a-chain', ord, open, json_set(body, '$.amount_asked_minor', 999999) FROM derived_rows WHERE view = 'ledger' AND key = ?").run(refundEffectId(REFUNDS)).changes).toBe(1));
    const { views } = viewsOver(file);
    expect(await views.replayAtStart()).toBeNull();
    // The ledger's totals count the row that no request of the journal made.
    const totals = await (await views.current()).ledger.totals({}, (login) => login);
    expect(JSON.stringify(totals)).toContain('999999');
    const { pass, counts } = passOver(views);
    expect(await pass.run()).toBe(false);
    expect(counts.derivedMismatches).toBe(1);
  });

  it('a row of a request that moved after the newest mark, edited: the ledger shows it and the check finds it', async () => {
    const file = join(makeTempDir(), 'interlock.sqlite');
    const { views } = await confirmedPastTheMark(viewsOver(file));
    tamper(file, (s) => expect(s.prepare("UPDATE derived_rows SET body = json_set(body, '$.amount_asked_minor', 999999) WHERE view = 'ledger' AND key = ?").run(refundEffectId(1)).changes).toBe(1));
    const row = await (await views.current()).ledger.rowOf(refundEffectId(1), (login) => login);
    expect(JSON.stringify(row)).toContain('999999');
    const { pass, counts } = passOver(views);
    const clean = await pass.run();
    expect({ clean, mismatches: counts.derivedMismatches }).toEqual({ clean: false, mismatches: 1 });
  });

  it('the config’s reloads are recomputed at the mark: they agree, and a mark’s reloads digest rewritten is found', async () => {
    const file = join(makeTempDir(), 'interlock.sqlite');
    const { journal, tables, views } = viewsOver(file);
    const reload = (sha: string, added: string[]) => ['CONFIG', { at_ms: 1_000, sha256: sha.repeat(64), people_added: added, people_removed: [], joined: [], left: [] }] as const;
    await journal.appendSealed(buildChain(CONFIG_CHAIN_ID, [reload('a', []), reload('b', ['dee'])]));
    await appendRefunds(journal);
    expect(await views.replayAtStart()).toBeNull();
    const [mark] = await tables.marks();
    expect(mark?.digests.find((digest) => digest.view === 'config.reloads')?.rows).toBe(2);
    const { pass, counts } = passOver(views);
    expect(await pass.run()).toBe(true);
    tamper(file, (s) => expect(s.prepare("UPDATE derived_marks SET sum = ? WHERE view = 'config.reloads'").run('1'.repeat(64)).changes).toBe(1));
    expect(await pass.run()).toBe(false);
    expect({ checks: counts.derivedChecks, mismatches: counts.derivedMismatches }).toEqual({ checks: 1, mismatches: 1 });
  });
});
