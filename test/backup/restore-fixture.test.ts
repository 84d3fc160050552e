import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase } from '../../db/open.ts';
import { decideRestoreStep } from '../../server/backup/restore-plan.ts';
import { chainState } from '../../server/inbox/state.ts';
import { EPOCH_CHAIN_ID } from '../../shared/entries.ts';
import { fixtureSigningKey, readFixture } from '../fixtures/journals/replay.ts';
import type { RestoreFixture } from '../fixtures/journals/restore-replay.ts';
import { startChecked } from '../support/checkpoints.ts';
import { cleanUpDatabases, fakeClock, makeTempDir } from '../support/db-journals.ts';
import { restoredLedgerViolations } from './restored-ledger.ts';

afterEach(cleanUpDatabases);

// restore-1 (write-restore-1.ts) was written once by the code that brought `npm run restore`: day-1
// backed up at 35 entries and restored after the day went on, two refunds found in Stripe (one of
// a request bound before the backup, one of a request first made after it) journaled as committed
// with no send before them, and epoch 1 naming them. Every later code must start on it.

const FIXTURES = fileURLToPath(new URL('../fixtures/journals/', import.meta.url));
const entries = readFixture(path.join(FIXTURES, 'restore-1.jsonl'));
const fixture = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'restore-1.json'), 'utf8')) as RestoreFixture;

describe('the fixture journal restore-1', () => {
  it('starts in epoch 1, its refunds found in Stripe done, held to Stripe as invariant 3 says', async () => {
    const file = path.join(makeTempDir(), 'interlock.sqlite');
    const opened = openDatabase(file);
    await new SqliteJournal({ db: opened.db, ...fakeClock() }).appendSealed(entries);
    opened.sqlite.prepare("INSERT INTO journal_meta (name, value) VALUES ('journal_id', ?)").run(fixture.journal_id);
    opened.close();
    const started = await startChecked(file, [], {}, fixtureSigningKey());
    try {
      expect(started.checkpointer.origin).toBe(`interlock/journal/${fixture.journal_id}/epoch/1`);
      const named = entries.find((e) => e.kind === 'EPOCH' && e.effect_id === EPOCH_CHAIN_ID);
      const found = named?.kind === 'EPOCH' ? (named.stripe.receipts_after_backup as string[]) : [];
      expect(found).toHaveLength(2);
      const { inbox } = await started.views.current();
      for (const effectId of found) {
        const chain = await started.views.journal.entries(effectId);
        expect(chainState(chain), effectId).toBe('DONE');
        expect(decideRestoreStep(chain), effectId).toBe('known');
        expect(await inbox.hasChain(effectId)).toBe(true);
      }
      // One of them has no entry before its commit: its request was first made after the backup.
      expect(found.map((id) => entries.find((e) => e.effect_id === id)?.kind).sort()).toEqual(['COMMITTED', 'PROPOSED']);
    } finally {
      started.close();
    }
    expect(restoredLedgerViolations(entries, fixture.refunds)).toEqual([]);
  });
});
