import { afterEach, describe, expect, it } from 'vitest';
import { JournalCorruptError } from '../../server/journal/store.ts';
import { SqliteJournal } from '../../db/journal-store.ts';
import { rowOf, sealNext } from '../../db/journal-rules.ts';
import { blockWhileDispatched, cleanUpDatabases, effectIdOf, fakeClock, fields, openTempDatabase } from '../support/db-journals.ts';

afterEach(cleanUpDatabases);

const eid = effectIdOf(1);
const movedEid = effectIdOf(9);

// A journal of three entries (seq 1..3) whose append-only triggers are dropped, so a test can do
// what an attacker or a bad tool with raw SQL access could.
async function tamperableJournal() {
  const { db, sqlite } = openTempDatabase();
  const journal = new SqliteJournal({ db, ...fakeClock() });
  await journal.append('PROPOSED', eid, fields('PROPOSED', { effect: { amount: 5 } }));
  await journal.append('AUTHORIZED', eid, fields('AUTHORIZED', { lease: 'g1' }));
  await journal.append('DISPATCHED', eid, fields('DISPATCHED', { effect: { amount: 5 } }));
  sqlite.exec('DROP TRIGGER entries_no_update; DROP TRIGGER entries_no_delete;');
  const rowCount = () => sqlite.prepare('SELECT count(*) AS n FROM entries').pluck().get();
  return { journal, sqlite, rowCount };
}

describe('SqliteJournal on a tampered file', () => {
  // The effect read is the one the damaged row now claims to belong to.
  it.each([
    ['a body edited after sealing', `UPDATE entries SET body = json_set(body, '$.effect.amount', 500) WHERE seq = 3`, eid, 3],
    ['a body that is not JSON', `UPDATE entries SET body = '{"kind":' WHERE seq = 2`, eid, 2],
    ['a body that is JSON but not an entry', `UPDATE entries SET body = '[1]' WHERE seq = 1`, eid, 1],
    ['a kind column that disagrees with the body', `UPDATE entries SET kind = 'REFUSED' WHERE seq = 2`, eid, 2],
    ['a closes column that disagrees with the body', `UPDATE entries SET closes = 1 WHERE seq = 3`, eid, 3],
    ['an effect_id column that disagrees with the body', `UPDATE entries SET effect_id = '${movedEid}' WHERE seq = 3`, movedEid, 3],
    ['an entry removed from the middle of the chain', 'DELETE FROM entries WHERE seq = 2', eid, 3],
  ])('entries: %s throws JournalCorruptError naming the seq', async (_why, tamper, readEid, seq) => {
    const { journal, sqlite } = await tamperableJournal();
    sqlite.exec(tamper);
    const read = journal.entries(readEid);
    await expect(read).rejects.toThrow(JournalCorruptError);
    await expect(read).rejects.toThrow(new RegExp(`seq ${seq} `));
  });

  it('every read and write that meets an edited body fails closed and writes nothing', async () => {
    const { journal, sqlite, rowCount } = await tamperableJournal();
    sqlite.exec(`UPDATE entries SET body = json_set(body, '$.effect.amount', 500) WHERE seq = 3`);
    await expect(journal.scan(0, 10)).rejects.toThrow(JournalCorruptError);
    await expect(journal.inFlight()).rejects.toThrow(JournalCorruptError);
    await expect(journal.append('COMMITTED', eid, fields('COMMITTED'))).rejects.toThrow(JournalCorruptError);
    await expect(journal.appendIf('COMMITTED', eid, blockWhileDispatched, fields('COMMITTED'))).rejects.toThrow(JournalCorruptError);
    expect(rowCount()).toBe(3);
  });

  // A replay reads every row through scan, so it must refuse each kind of damage on its own.
  it.each([
    ['a body edited after sealing', `UPDATE entries SET body = json_set(body, '$.effect.amount', 500) WHERE seq = 3`, 3],
    ['a body that is not JSON', `UPDATE entries SET body = '{"kind":' WHERE seq = 2`, 2],
    ['a body that is JSON but not an entry', `UPDATE entries SET body = '[1]' WHERE seq = 1`, 1],
    ['a kind column that disagrees with the body', `UPDATE entries SET kind = 'REFUSED' WHERE seq = 2`, 2],
    ['a closes column that disagrees with the body', `UPDATE entries SET closes = 1 WHERE seq = 3`, 3],
    ['an effect_id column that disagrees with the body', `UPDATE entries SET effect_id = '${movedEid}' WHERE seq = 3`, 3],
    ['a prev column that disagrees with the body', `UPDATE entries SET prev = '${'f'.repeat(64)}' WHERE seq = 2`, 2],
    ['a hash column that disagrees with the body', `UPDATE entries SET hash = '${'0'.repeat(64)}' WHERE seq = 1`, 1],
    ['a ts_ms column that disagrees with the body', 'UPDATE entries SET ts_ms = ts_ms + 1 WHERE seq = 3', 3],
  ])('scan: %s throws JournalCorruptError naming the seq', async (_why, tamper, seq) => {
    const { journal, sqlite } = await tamperableJournal();
    sqlite.exec(tamper);
    const read = journal.scan(0, 10);
    await expect(read).rejects.toThrow(JournalCorruptError);
    await expect(read).rejects.toThrow(new RegExp(`seq ${seq} `));
  });

  it('scan: a body rewritten as other text of the same entry is hashed again, and holds', async () => {
    const { journal, sqlite } = await tamperableJournal();
    // The journal remembers the text it wrote as checked; this text differs, so it is checked in full.
    sqlite.exec(`UPDATE entries SET body = ' ' || body WHERE seq = 3`);
    expect((await journal.scan(0, 10)).map(({ seq }) => seq)).toEqual([1, 2, 3]);
  });

  it('scan: entries before the damaged one are still read, and the damaged seq is named', async () => {
    const { journal, sqlite } = await tamperableJournal();
    sqlite.exec(`UPDATE entries SET body = json_set(body, '$.lease', 'forged') WHERE seq = 2`);
    expect(await journal.scan(0, 1)).toHaveLength(1);
    await expect(journal.scan(0, 10)).rejects.toThrow(/seq 2 does not match its hash/);
  });

  it('a chain stored below seq 1 (where reading the journal in order never looks) is refused by every read of it, not taken as a request already made', async () => {
    const { journal, sqlite, rowCount } = await tamperableJournal();
    // Hash-valid and linked, a whole chain of its own: no trigger refuses an INSERT.
    const proposed = sealNext('PROPOSED', movedEid, fields('PROPOSED') as never, undefined, 1_700_000_000_000);
    const dispatched = sealNext('DISPATCHED', movedEid, fields('DISPATCHED') as never, proposed, 1_700_000_000_000);
    const insert = sqlite.prepare('INSERT INTO entries (seq, effect_id, kind, prev, hash, closes, ts_ms, body, reserves) VALUES (@seq, @effectId, @kind, @prev, @hash, @closes, @tsMs, @body, @reserves)');
    insert.run({ ...rowOf(proposed), seq: -2 });
    insert.run({ ...rowOf(dispatched), seq: 0 });
    await expect(journal.entries(movedEid)).rejects.toThrow(/seq -2 .*outside the journal's order/);
    // A forged open dispatch must not start a recovery.
    await expect(journal.inFlight()).rejects.toThrow(JournalCorruptError);
    await expect(journal.append('COMMITTED', movedEid, fields('COMMITTED'))).rejects.toThrow(JournalCorruptError);
    expect(rowCount()).toBe(5);
  });
});

describe('SqliteJournal reservations on a tampered file', () => {
  it('a row whose reserves column disagrees with its body fails closed on read', async () => {
    const opened = openTempDatabase();
    const journal = new SqliteJournal({ db: opened.db, ...fakeClock() });
    await journal.append('DISPATCHED', eid, fields('DISPATCHED', { effect: { payment_intent: 'pi_shared', amount: 500 }, reserves: 'pi_shared' }));
    // Written around the store (the triggers forbid an UPDATE): a forged copy with another key.
    opened.sqlite.exec('DROP TRIGGER entries_no_update');
    opened.sqlite.prepare("UPDATE entries SET reserves = 'pi_forged' WHERE effect_id = ?").run(eid);
    await expect(journal.entries(eid)).rejects.toThrow(/disagrees with its columns/);
  });
});
