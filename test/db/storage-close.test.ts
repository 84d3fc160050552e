import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../db/open.ts';
import { storageOver } from '../../db/sqlite-storage.ts';
import { cleanUpDatabases, effectIdOf, fakeClock, fields, tempDbFile } from '../support/db-journals.ts';

afterEach(cleanUpDatabases);

// Storage.close() takes the connection's lock like every other user of it: work that holds the
// lock (a read between two of its statements) finishes before the connection closes.

const rejection = (r: PromiseSettledResult<unknown>) => (r.status === 'rejected' ? `${(r.reason as Error).name}: ${(r.reason as Error).message}` : null);

describe('Storage.close() while work on the connection is under way', () => {
  it('a read of the journal started before close() is answered, not cut off between its statements', async () => {
    const storage = storageOver(openDatabase(tempDbFile()));
    const journal = storage.journal({ ...fakeClock() });
    await journal.append('PROPOSED', effectIdOf(1), fields('PROPOSED'));
    // head() holds the connection's lock: it reads the newest seal, then (after an await) the count.
    const head = journal.head();
    await storage.close();
    const [settled] = await Promise.allSettled([head]);
    expect(rejection(settled!)).toBeNull();
  });
});
