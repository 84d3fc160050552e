import { readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { VIEWS_FOLD_MODULES } from '../../server/views/version.ts';

// The views' version must move whenever code that decides what a derived row holds changes. The
// rows' seqs and order (an inbox row's headSeq and lastSeq, a ledger row's order, an outbox row's
// order and lastSeq) and an inbox row's waitingTurn are decided where the views build their
// changes, so those modules belong to the pinned closure as much as the row builders they call.

const root = fileURLToPath(new URL('../../', import.meta.url));

/** The pinned fold modules and every module they import code from, as test/tidy/views-version.test.ts walks them. */
function foldClosure(): string[] {
  const seen = new Set<string>();
  const queue = [...VIEWS_FOLD_MODULES];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const source = readFileSync(join(root, file), 'utf8');
    for (const match of source.matchAll(/^(?:import|export)\s+(?!type\b)[^;]*?from\s+['"](\.[^'"]+)['"]/gms)) {
      queue.push(normalize(join(dirname(file), match[1]!)));
    }
  }
  return [...seen].sort();
}

describe('the modules pinned under the views’ version', () => {
  it('hold every module that builds a derived row’s seqs, order or waiting flag', () => {
    const pinned = foldClosure();
    const deciding = [
      // inboxRow({ summary, headSeq, lastSeq, waitingTurn }) is called here, the seqs kept here.
      'server/inbox/view.ts',
      // whether a chain waits its turn (the row's `waitingTurn`) is decided here.
      'server/inbox/projection.ts',
      // tableRow(row, headSeq): a ledger row's order is the head seq kept here.
      'server/ledger/view.ts',
      // itemRow / messageRow(…, place.order, place.lastSeq): a new chain's order is its seq, set here.
      'server/outbox/view.ts',
    ];
    expect(deciding.filter((file) => !pinned.includes(file))).toEqual([]);
  });
});
