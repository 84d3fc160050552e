import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { makeTempDir } from '../support/db-journals.ts';
import { confirmedPastTheMark, derivedCheckFiles, editLedgerRowWithDigest, passOver } from '../support/derived-check-world.ts';
import { refundEffectId } from '../support/ledger-journal.ts';

// docs/operators/integrity.md: "What waits" names only the rows no single chain makes (the board's
// totals, the wait counts, the repairs, the outbox's indexes) as escaping the check when
// `derived_digests` is rewritten to match. A chain's own row (the ledger's) is held against the
// chain folded through the tables' cursor: a request's ledger row whose chain moved after the
// newest mark, edited together with its view's digest, is found by the pass.

const { viewsOver } = derivedCheckFiles();

describe('a chain row moved after the mark, edited with its digest', { timeout: 90_000 }, () => {
  it('the ledger shows the edited amount and the background pass finds it', async () => {
    const file = join(makeTempDir(), 'interlock.sqlite');
    const { views } = await confirmedPastTheMark(viewsOver(file));

    const id = refundEffectId(1);
    editLedgerRowWithDigest(file, id);
    const row = await (await views.current()).ledger.rowOf(id, (login) => login);
    expect(JSON.stringify(row)).toContain('999999');

    const { pass, counts } = passOver(views);
    const clean = await pass.run();
    expect({ clean, mismatches: counts.derivedMismatches }).toEqual({ clean: false, mismatches: 1 });
  });
});
