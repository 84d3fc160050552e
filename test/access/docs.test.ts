import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { accessTable, DOCUMENTS, tableIn } from '../../scripts/access-table.ts';

// The "Who may do what" table users read is the access rules' own answers: rewritten by
// `npx tsx scripts/access-table.ts`, and this fails when either document differs from the rules.

const root = new URL('../../', import.meta.url);

describe('who may do what, as the documents say it', () => {
  it.each(DOCUMENTS)('%s holds the table the access rules answer', (document) => {
    expect(tableIn(readFileSync(new URL(document, root), 'utf8'))).toBe(accessTable());
  });
});
