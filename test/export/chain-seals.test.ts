import { afterEach, describe, expect, it } from 'vitest';
import { readReceipts } from '../../server/export/read-journal.ts';
import { loadOrCreateSigningKey } from '../../server/receipts/keys.ts';
import { cleanUpDatabases, effectIdOf, makeTempDir } from '../support/db-journals.ts';
import { rewriteEntry, tamper, writeJournal } from '../support/tamper.ts';

afterEach(cleanUpDatabases);

// An export reads each chain with its seals and holds it against them, whatever the check of the
// whole journal before it said (the file may change between the two): an old row edited with its
// hash recomputed verifies as a receipt on its own, and is still not exported as verified.

const ALL_TIME = { fromMs: 0, toMs: Number.MAX_SAFE_INTEGER };

async function problems(file: string): Promise<Record<string, string | null>> {
  const key = loadOrCreateSigningKey(makeTempDir());
  const found: Record<string, string | null> = {};
  for await (const read of readReceipts(file, key, ALL_TIME, null)) found[read.effectId] = read.journalProblem;
  return found;
}

describe('an export holds each chain against its seals', () => {
  it('an untouched journal: no chain has a problem', async () => {
    const file = await writeJournal(3);
    expect(await problems(file)).toEqual({ [effectIdOf(1)]: null, [effectIdOf(2)]: null, [effectIdOf(3)]: null });
  });

  it('a chain’s last row edited with its hash recomputed: that receipt is not vouched for, the others are', async () => {
    const file = await writeJournal(3);
    // The third round of appends: seq 8 is effect 2's last entry.
    tamper(file, (sqlite) => rewriteEntry(sqlite, 8, { why: 'edited' }));
    expect(await problems(file)).toEqual({
      [effectIdOf(1)]: null,
      [effectIdOf(2)]: 'journal_damaged: journal_corrupt at seq 8: the entry is not the one its global seal sealed',
      [effectIdOf(3)]: null,
    });
  });
});
