import type { DerivedListOptions, DerivedRow, DerivedTables } from '../../db/port/derived.ts';
import type { HistoryItem } from '../../shared/api.ts';
import { summaryHistory } from './summary.ts';
import { heldOfRow, INBOX_VIEW } from './table.ts';

// The inbox's done and closed lists read from its derived table (table.ts): rows in `order` (when
// the chain last moved) descending, keyset paged, each tie of one order put back in the order the
// chains began, so a list is the one the in-memory fold of every chain gives (projection.ts).

/** Rows read per list call. */
const READ_ROWS = 500;

/** Every row of the inbox's table in the list's order, a page at a time. */
export async function* rowsOf(tables: DerivedTables, options: Omit<DerivedListOptions, 'limit' | 'after'>, readRows = READ_ROWS): AsyncGenerator<DerivedRow> {
  let after: DerivedListOptions['after'];
  for (;;) {
    const rows = await tables.list(INBOX_VIEW, { ...options, limit: readRows, ...(after === undefined ? {} : { after }) });
    yield* rows;
    const last = rows.at(-1);
    if (last === undefined || rows.length < readRows) return;
    after = { order: last.order, key: last.key };
  }
}

/** What a list is read for: the inbox's own chains, among those the views have applied. */
export interface HistoryScope {
  inboxName: string;
  viewsSeq: number;
}

/**
 * Finished (DONE) or closed chains, newest first, filtered by groups and by request id or payment
 * intent: `InboxProjection.history` over the table. Reads stop once `limit` items are found past
 * the tie being read.
 */
export async function historyFromTable(tables: DerivedTables, scope: HistoryScope, kind: 'done' | 'closed', groups: Pick<ReadonlySet<string>, 'has'>, search: string, limit: number): Promise<HistoryItem[]> {
  const needle = search.trim().toLowerCase();
  const out: HistoryItem[] = [];
  let tie: { headSeq: number; item: HistoryItem }[] = [];
  let tieOrder: number | null = null;
  const flush = () => {
    // Chains that moved at the same time are listed in the order they began, as the fold met them.
    for (const { item } of tie.sort((a, b) => a.headSeq - b.headSeq)) out.push(item);
    tie = [];
  };
  for await (const row of rowsOf(tables, { direction: 'desc' })) {
    if (row.order !== tieOrder) {
      flush();
      if (out.length >= limit) break;
      tieOrder = row.order;
    }
    const { summary, headSeq } = heldOfRow(row);
    if (headSeq > scope.viewsSeq || summary.agent !== scope.inboxName || ![...summary.groups].some((g) => groups.has(g))) continue;
    const item = summaryHistory(summary);
    if (!item || (kind === 'done') !== (item.state === 'DONE')) continue;
    if (needle && !`${item.request.id} ${item.request.payment_intent}`.toLowerCase().includes(needle)) continue;
    tie.push({ headSeq, item });
  }
  flush();
  return out.slice(0, limit);
}
