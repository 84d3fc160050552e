import type { DerivedTables } from '../../db/port/derived.ts';
import type { Entry } from '../../shared/entries.ts';
import { ConfigReloadsView } from '../config/reloads.ts';
import type { ItemChange } from '../inbox/projection.ts';
import type { ChainSummary } from '../inbox/summary.ts';
import { configReloadsRefold } from '../config/reloads-refold.ts';
import { inboxRefold } from '../inbox/refold.ts';
import { foldedByInbox } from '../inbox/table.ts';
import { InboxView } from '../inbox/view.ts';
import { DerivedCheck } from '../integrity/derived-check.ts';
import type { JournalStore } from '../journal/store.ts';
import { ledgerRefold } from '../ledger/refold.ts';
import { LedgerView } from '../ledger/view.ts';
import { outboxRefolds } from '../outbox/refold.ts';
import { OutboxView } from '../outbox/view.ts';
import { scoreboardRefold } from '../scoreboard/refold.ts';
import { repairKey } from '../scoreboard/figures.ts';
import { REPAIRS_VIEW, storedRepair } from '../scoreboard/table.ts';
import { ScoreboardView } from '../scoreboard/view.ts';
import type { DerivedSource } from './writer.ts';

/** What the views kept in derived tables are built on, asked late: the views' writer and follower are built after them. */
export interface TableViewsParts {
  inboxName: string;
  tables: DerivedTables;
  /** The journal through the views' guard. */
  journal: JournalStore;
  /** A chain read again in the batch being written, read once for every view (catch-up.ts `BatchChainReads`). */
  chainRead: (effectId: string) => Promise<Entry[]>;
  /** Where the tables' cursor stands, as far as the writer knows. */
  tablesSeq: () => number;
  /** The last journal seq the views applied. */
  viewsSeq: () => number;
  /** True while someone watches which chains moved (`Views.onChainsMoved`). */
  watching: () => boolean;
  /** Told of an item that changed when a chain not in memory was read back and folded on. */
  onItemChange: (change: ItemChange) => void;
}

/**
 * The views kept in derived tables (the ledger, the inbox, the scoreboard, the outbox, the
 * config's reloads): built together, each given the entries it folds, in journal order, each
 * written by the views' writer (`sources`) and checked against the journal by its own fold (`check`).
 */
export class TableViews {
  readonly inbox: InboxView;
  readonly scoreboard: ScoreboardView;
  readonly ledger: LedgerView;
  readonly outbox: OutboxView;
  readonly configReloads: ConfigReloadsView;
  readonly #parts: TableViewsParts;

  constructor(parts: TableViewsParts) {
    this.#parts = parts;
    const { inboxName, tables, tablesSeq, viewsSeq } = parts;
    this.inbox = new InboxView({
      inboxName,
      tables,
      chain: (effectId) => parts.journal.sealedChain(effectId),
      tablesSeq,
      viewsSeq,
      // Told only by `settle`, of chains this server did not hold: its feed never showed them, so an
      // open item is told as new. Its "before" is read from the row, which another server on the
      // database may have written past these very entries (then the same item, and nothing told).
      onChange: (change) => {
        if (change.after !== null) parts.onItemChange({ ...change, before: null });
      },
      repairBegun: (summary) => repairBegun(tables, summary),
    });
    this.scoreboard = new ScoreboardView({ inboxName, tables, entries: parts.chainRead, tablesSeq });
    this.ledger = new LedgerView({ inboxName, tables, entries: parts.chainRead, tablesSeq, viewsSeq, watching: parts.watching });
    this.outbox = new OutboxView({ tables, tablesSeq });
    this.configReloads = new ConfigReloadsView({ tables, tablesSeq });
  }

  /** Every view, in the order the writer writes their changes. */
  get sources(): DerivedSource[] {
    return [this.ledger, this.inbox, this.scoreboard, this.outbox, this.configReloads];
  }

  /** A new check of the tables at their newest mark against the journal: each view's own fold. */
  check(): DerivedCheck {
    const { inboxName } = this.#parts;
    return new DerivedCheck(this.#parts.journal, this.#parts.tables, [ledgerRefold(inboxName), inboxRefold, scoreboardRefold(inboxName), ...outboxRefolds()], [configReloadsRefold]);
  }

  /** Give an entry to every view that folds it; the inbox item's change when `build` and it is known now. */
  note(entry: Entry, seq: number, build: boolean): ItemChange | null {
    this.outbox.note(entry, seq);
    this.configReloads.note(entry, seq);
    // A message chain is the outbox's alone: it is no item and no figure.
    // So is an epoch's first entry: the journal's, not a refund's; and a reload of the config.
    if (!foldedByInbox(entry)) return null;
    this.scoreboard.note(entry, seq);
    this.ledger.note(entry, seq);
    return this.inbox.note(entry, seq, build);
  }

  /** Let go of the chains closed in the last catch-up (they stayed in memory through its listeners), or in the page just written; `replay`: the start's replay, no planning between its pages. */
  evict(replay = false): void {
    this.ledger.evict();
    this.inbox.evict();
    this.scoreboard.evict();
    this.outbox.evict(replay);
  }
}

/**
 * Whether the repair that closed a chain needs no more work: the scoreboard's repairs, written in
 * the same batches as the inbox's rows, name the child once its chain began; a repair that names
 * no child has none to make.
 */
async function repairBegun(tables: DerivedTables, summary: ChainSummary): Promise<boolean> {
  const repair = summary.closedBy?.repair ?? null;
  if (repair === null || summary.request === null) return true;
  return storedRepair(await tables.get(REPAIRS_VIEW, repairKey(summary.request.agent, repair.request_id))).child !== null;
}
