import { afterEach, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { cleanUpDatabases, effectIdOf, fakeClock, kindsOf, openTempDatabase, tempDbFile } from '../support/db-journals.ts';
import { raceProcesses } from '../support/db-race.ts';

afterEach(cleanUpDatabases);

const eid = effectIdOf(1);
const owners = ['w1', 'w2', 'w3', 'w4'];

// Each racer is a separate node process with its own connection, so only SQLite's file locks
// (BEGIN IMMEDIATE) stand between them; the file is fresh, so they also race to migrate it.
describe('SqliteJournal across OS processes', () => {
  it('appendIf: 4 processes racing to dispatch one effect write exactly one DISPATCHED; the rest see in_flight', async () => {
    const file = tempDbFile();
    const outcomes = await raceProcesses(file, 'dispatch', eid, owners);

    expect(outcomes.filter((o) => o.wrote === true)).toHaveLength(1);
    expect(outcomes.filter((o) => o.blocker === 'in_flight')).toHaveLength(3);
    const journal = new SqliteJournal({ db: openTempDatabase(file).db, ...fakeClock() });
    const [dispatched] = await journal.entries(eid);
    expect(await kindsOf(journal, eid)).toEqual(['DISPATCHED']);
    // The claim set with the DISPATCHED belongs to the process that wrote it.
    const winner = owners[outcomes.findIndex((o) => o.wrote === true)];
    expect((dispatched as { owner?: unknown } | undefined)?.owner).toBe(winner);
    expect(await journal.claim(eid, 'someone-else', 1_000)).toBe(false);
  });

  it('claim: 4 processes racing for one effect grant it to exactly one', async () => {
    const outcomes = await raceProcesses(tempDbFile(), 'claim', eid, owners);
    expect(outcomes.filter((o) => o.granted === true)).toHaveLength(1);
  });
});
