import type { ViewRefold } from '../integrity/derived-check.ts';
import { MESSAGE_KINDS } from '../../shared/entries.ts';
import { foldItem, foldMessage, newItem, newMessage } from './state.ts';
import { itemRow, messageRow, OUTBOX_ITEMS_VIEW, OUTBOX_MESSAGES_VIEW } from './table.ts';

// The outbox's rows of one chain, folded from the journal alone by the outbox's own folds: what
// its derived tables must hold for that chain, for the background check of the tables
// (derived-check.ts). An item's context and a message's state are each their chain's alone; the
// indexes that join chains (an item's messages, the digests, the counts) are held by the
// simulator's comparison with tables rebuilt from the journal.

const MESSAGE_KIND_SET: ReadonlySet<string> = new Set(MESSAGE_KINDS);

/** The outbox's folds of a chain into its item row and its message row. */
export function outboxRefolds(): ViewRefold[] {
  return [
    {
      view: OUTBOX_ITEMS_VIEW,
      rowOf(chain) {
        const first = chain[0];
        if (first === undefined || MESSAGE_KIND_SET.has(first.entry.kind)) return null;
        const item = newItem(first.entry.effect_id);
        for (const { entry } of chain) foldItem(item, entry);
        return itemRow(item, first.seq, chain.at(-1)!.seq);
      },
    },
    {
      view: OUTBOX_MESSAGES_VIEW,
      rowOf(chain) {
        const first = chain[0];
        if (first?.entry.kind !== 'MESSAGE') return null;
        const state = newMessage(first.entry);
        for (const { entry } of chain.slice(1)) foldMessage(state, entry);
        return messageRow(state, first.seq, chain.at(-1)!.seq);
      },
    },
  ];
}
