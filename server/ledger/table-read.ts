import { Compile } from 'typebox/compile';
import type { DerivedRow, DerivedTables } from '../../db/port/derived.ts';
import type { LedgerRow } from '../../shared/ledger.ts';
import { LedgerRowSchema } from '../../shared/schemas.ts';
import { toolCommand } from '../tools.ts';
import type { DisplayName } from './chain.ts';
import { type LedgerFilter, rowMatches } from './filter.ts';
import type { PageFound, PageRequest } from './projection.ts';
import { LEDGER_VIEW } from './table.ts';
import { TotalsAdder, type TotalsFound } from './totals.ts';

// The ledger's JSON pages and totals, read from its derived table (table.ts) in `order`
// descending, keyset paged, as the in-memory fold of every row pages them (projection.ts).

/** Rows read per list call while paging: a page usually needs one call. */
const PAGE_READ_ROWS = 500;
/** Rows read per list call while adding up every row of a filter. */
const TOTALS_READ_ROWS = 5_000;

const isLedgerRow = Compile(LedgerRowSchema);

/** The ledger row a table row holds, with display names applied; a body that is no ledger row fails. */
export function shownRow(stored: DerivedRow, displayName: DisplayName): LedgerRow {
  const body = stored.body;
  if (!isLedgerRow.Check(body)) throw new Error(`the derived ledger row ${stored.key} is not a ledger row; stop the server and rebuild the views' tables from the journal: ${toolCommand('rebuild-views', '--db <file>')}`);
  const decidedBy = body.decided_by_login === null ? body.decided_by : displayName(body.decided_by_login);
  return { ...body, decided_by: decidedBy };
}

/** Every row of the table, newest request first, from below `beforeSeq` when given, with display names. */
async function* newestFirst(tables: DerivedTables, displayName: DisplayName, readRows: number, beforeSeq?: number): AsyncGenerator<{ row: LedgerRow; order: number }> {
  // A key sorts after '' whatever it is: starting after (beforeSeq, '') reads orders below beforeSeq only.
  let after = beforeSeq === undefined ? undefined : { order: beforeSeq, key: '' };
  for (;;) {
    const rows = await tables.list(LEDGER_VIEW, { direction: 'desc', limit: readRows, ...(after === undefined ? {} : { after }) });
    for (const stored of rows) yield { row: shownRow(stored, displayName), order: stored.order };
    const last = rows.at(-1);
    if (last === undefined || rows.length < readRows) return;
    after = { order: last.order, key: last.key };
  }
}

/** One page of matching rows, newest request first, as the in-memory ledger pages them (`LedgerProjection.page`). */
export async function tablePage(tables: DerivedTables, filter: LedgerFilter, asked: PageRequest, displayName: DisplayName): Promise<PageFound> {
  const rows: LedgerRow[] = [];
  let lastOrder: number | null = null;
  for await (const { row, order } of newestFirst(tables, displayName, PAGE_READ_ROWS, asked.beforeSeq)) {
    if (!rowMatches(row, filter)) continue;
    // One more match past a full page: the page is not the last, and the next starts below its last row.
    if (rows.length === asked.limit) return { rows, nextBeforeSeq: lastOrder };
    rows.push(row);
    lastOrder = order;
  }
  return { rows, nextBeforeSeq: null };
}

/** Totals per currency over every row the filter matches, read from the table a page at a time. */
export async function tableTotals(tables: DerivedTables, filter: LedgerFilter, displayName: DisplayName): Promise<TotalsFound> {
  const adding = new TotalsAdder();
  for await (const { row } of newestFirst(tables, displayName, TOTALS_READ_ROWS)) if (rowMatches(row, filter)) adding.add(row);
  return adding.totals();
}
