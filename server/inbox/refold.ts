import type { ViewRefold } from '../integrity/derived-check.ts';
import { emptySummary, foldEntry } from './summary.ts';
import { foldedByInbox, INBOX_VIEW, inboxRow, waitsAfter } from './table.ts';

// The inbox's row of one chain, folded from the journal alone by the inbox's own fold: what its
// derived table must hold for that chain, for the background check of the tables (derived-check.ts).

/** The inbox's fold of a chain into its table row. */
export const inboxRefold: ViewRefold = {
  view: INBOX_VIEW,
  rowOf(chain) {
    const folded = chain.filter(({ entry }) => foldedByInbox(entry));
    const first = folded[0];
    const last = folded.at(-1);
    if (first === undefined || last === undefined) return null;
    const summary = emptySummary(first.entry.effect_id);
    let waitingTurn = false;
    for (const { entry } of folded) {
      waitingTurn = waitsAfter(summary, entry);
      foldEntry(summary, entry);
    }
    return inboxRow({ summary, headSeq: first.seq, lastSeq: last.seq, waitingTurn });
  },
};
