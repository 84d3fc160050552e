import { ConfigReloadsView } from '../config/reloads.ts';
import type { CurrentFacts, InboxItem, LiveMessage } from '../../shared/api.ts';
import type { Entry } from '../../shared/entries.ts';
import type { InboxRequest, InboxWork } from '../inbox/core.ts';
import { type ItemChange, projectedWork } from '../inbox/projection.ts';
import { InboxView } from '../inbox/view.ts';
import { inboxRefold } from '../inbox/refold.ts';
import { foldedByInbox } from '../inbox/table.ts';
import { summaryItem } from '../inbox/summary.ts';
import { guardJournal } from '../journal/guarded.ts';
import { type JournalHead, JournalCorruptError, type JournalStore } from '../journal/store.ts';
import { failureLine, isBusy, JournalUnavailableError } from './failures.ts';
import { JournalFollower } from '../live/follower.ts';
import { OutboxView } from '../outbox/view.ts';
import { outboxRefolds } from '../outbox/refold.ts';
import { type Audience, LiveHub, type LiveSocket } from '../live/hub.ts';
import { ScoreboardView } from '../scoreboard/view.ts';
import { repairKey } from '../scoreboard/figures.ts';
import { REPAIRS_VIEW, storedRepair } from '../scoreboard/table.ts';
import type { ChainSummary } from '../inbox/summary.ts';
import { scoreboardRefold } from '../scoreboard/refold.ts';
import { LedgerView } from '../ledger/view.ts';
import { ledgerRefold } from '../ledger/refold.ts';
import { DerivedCheck } from '../integrity/derived-check.ts';
import type { DerivedTables } from '../../db/port/derived.ts';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';
import { tablesVersion } from './version.ts';
import { DerivedWriter, type TablesFound } from './writer.ts';
import { type RebuildProgress, TablesRebuild } from './rebuild-progress.ts';
import { VerifiedChains } from './verified-chains.ts';
import { checkpointPosition, cursorPosition, lowerStart, type StartCheckpoints, type StartFrom } from './start-position.ts';

/**
 * The waits before each retry of a catch-up that found the database busy (another process
 * holding a lock past the busy timeout, a checkpoint); after the last one the failure counts.
 */
export const BUSY_RETRY_DELAYS_MS: readonly number[] = [50, 100, 200];

/** The close code live sockets get when the views become unavailable: the page reconnects and is told 503. */
const CLOSE_JOURNAL_UNAVAILABLE = 1011;

/** What the views log: pino's (and so Fastify's) `(fields, message)` calls. */
export interface ViewsLog {
  fatal(fields: object, message: string): void;
  error(fields: object, message: string): void;
  info?(fields: object, message: string): void;
}

export interface ViewsOptions {
  journal: JournalStore;
  inboxName: string;
  /** The application clock, for the live feed's messages. */
  nowMs: () => number;
  log: ViewsLog;
  busyRetryDelaysMs?: readonly number[];
  sleep?: (ms: number) => Promise<void>;
  /** The derived tables the table-backed views are kept in; tables of their own in memory when absent. */
  derived?: DerivedTables;
  /** The version of the folds the tables are written under (server/views/version.ts). */
  version?: string;
  /** Where the follower starts at `replayAtStart` (server/views/start-position.ts): `zero` unless told. */
  startFrom?: StartFrom;
  /** The checkpoints a start at one is held against; without them a start is from zero. */
  checkpoints?: StartCheckpoints;
  /** Chains' tails the follower holds at most (server/live/follower.ts). */
  tailsHeldMax?: number;
}

/** The views caught up with the journal: read them now, do not keep them (the next read catches up again). */
export interface CaughtUp {
  /** The inbox: open work in memory, history read from its derived table. */
  inbox: InboxView;
  /** The scoreboard, read from its derived tables. */
  scoreboard: ScoreboardView;
  /** One row per request, for finance's ledger, read from its derived table. */
  ledger: LedgerView;
  /** The outbox's open work (messages owed, items' contexts for wording them), its history read from its derived tables. */
  outbox: OutboxView;
  /** The config's reloads while running, read from their derived table (server/config/reloads.ts). */
  configReloads: ConfigReloadsView;
  /** The last journal sequence number they include. */
  seq: number;
  /**
   * One chain as the views verified it, for showing or signing: read from the journal, cut at
   * the last entry the views applied, and only when that entry is still the one they verified
   * (rows changed since are a corrupt journal, never shown). Empty for a chain they have not seen.
   */
  chain(effectId: string): Promise<Entry[]>;
}

const sleepMs = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Everything people are shown of the journal: the inbox projection, the scoreboard projection
 * and the live feed, fed by the one follower. Every read goes through `current()`, which first
 * catches up with every entry durable before the call, so no view is ever behind a write the
 * reader could have seen; a chain shown or signed is read through it too (`CaughtUp.chain`). A
 * corrupt journal is never swallowed: it is logged once, and from then on every read is refused
 * with `JournalUnavailableError` until the process is restarted, and so is every call of the
 * journal the services are given (`journal`), so nothing is written or sent either. The views
 * kept in derived tables (the ledger, the inbox, the scoreboard, the outbox, the config's reloads)
 * are written there a page of entries at a time, within the catch-up (writer.ts), so the tables
 * are at least where the views are when `current()` answers.
 */
export class Views {
  readonly #follower: JournalFollower;
  readonly #journal: JournalStore;
  readonly #chains: VerifiedChains;
  readonly #inbox: InboxView;
  readonly #scoreboard: ScoreboardView;
  readonly #ledger: LedgerView;
  readonly #writer: DerivedWriter;
  /** A check of the derived tables against the journal, for the background pass: each table-backed view's own fold. */
  readonly #check: () => DerivedCheck;
  /** The rebuild of the derived tables at start while it runs; null before and after. */
  #rebuild: TablesRebuild | null = null;
  #rebuildDone = false;
  readonly #outbox: OutboxView;
  readonly #configReloads: ConfigReloadsView;
  readonly #hub: LiveHub;
  readonly #log: ViewsLog;
  readonly #startFrom: StartFrom;
  readonly #checkpoints: StartCheckpoints | undefined;
  readonly #busyRetryDelaysMs: readonly number[];
  readonly #sleep: (ms: number) => Promise<void>;
  #unavailable: JournalUnavailableError | null = null;
  #timer: NodeJS.Timeout | null = null;
  /** How items are shown on the way out (with their current facts); the projections never hold it. */
  #decorate: (item: InboxItem) => InboxItem = (item) => item;
  /** Chains the table-backed views read again in the batch being written: read once for them all. */
  readonly #chainReads = new Map<string, Promise<Entry[]>>();
  /** Chains moved since the last catch-up, kept only while someone watches them. */
  #moved = new Set<string>();
  readonly #movedListeners = new Set<(moved: ReadonlySet<string>, inbox: InboxView) => void>();

  constructor(options: ViewsOptions) {
    this.#follower = new JournalFollower(options.journal, async () => {
      try {
        await this.#writer.flush(() => this.#follower.head);
      } finally {
        this.#chainReads.clear();
      }
      // With nobody to tell which chains moved (a replay at start), what the page closed leaves
      // memory at once, so a replay holds open work and one page; else at the next catch-up.
      if (this.#movedListeners.size === 0) this.#inbox.evict();
      // A rebuild runs while the server listens: a turn of the event loop between pages lets `/readyz` answer.
      if (this.#rebuild !== null) await new Promise<void>((resolve) => setImmediate(resolve));
    }, { tailsHeldMax: options.tailsHeldMax });
    this.#startFrom = options.startFrom ?? 'zero';
    this.#checkpoints = options.checkpoints;
    this.#chains = new VerifiedChains(this.#follower, (corrupt) => this.#fail(corrupt));
    this.#journal = guardJournal(options.journal, {
      assertAvailable: () => this.assertAvailable(),
      report: (error) => this.report(error),
      holdChain: (effectId, chain) => this.#chains.hold(effectId, chain),
    });
    const derived = options.derived ?? new MemoryDerivedTables();
    this.#inbox = new InboxView({
      inboxName: options.inboxName,
      tables: derived,
      chain: (effectId) => this.#journal.sealedChain(effectId),
      tablesSeq: () => this.#writer.seq,
      viewsSeq: () => this.#follower.seq,
      onChange: (change) => {
        if (this.#hub.listening) this.#hub.publishItem(this.#decorated(change));
      },
      repairBegun: (summary) => repairBegun(derived, summary),
    });
    this.#scoreboard = new ScoreboardView({
      inboxName: options.inboxName,
      tables: derived,
      entries: (effectId) => this.#chainRead(effectId),
      tablesSeq: () => this.#writer.seq,
    });
    this.#ledger = new LedgerView({
      inboxName: options.inboxName,
      tables: derived,
      entries: (effectId) => this.#chainRead(effectId),
      tablesSeq: () => this.#writer.seq,
      viewsSeq: () => this.#follower.seq,
      watching: () => this.#movedListeners.size > 0,
    });
    const tablesSeq = () => this.#writer.seq;
    this.#outbox = new OutboxView({ tables: derived, tablesSeq });
    this.#configReloads = new ConfigReloadsView({ tables: derived, tablesSeq });
    this.#check = () => new DerivedCheck(this.#journal, derived, [ledgerRefold(options.inboxName), inboxRefold, scoreboardRefold(options.inboxName), ...outboxRefolds()]);
    this.#writer = new DerivedWriter(derived, options.version ?? tablesVersion(options.inboxName), [this.#ledger, this.#inbox, this.#scoreboard, this.#outbox, this.#configReloads], options.journal);
    this.#hub = new LiveHub(options.nowMs);
    this.#log = options.log;
    this.#busyRetryDelaysMs = options.busyRetryDelaysMs ?? BUSY_RETRY_DELAYS_MS;
    this.#sleep = options.sleep ?? sleepMs;
    this.#follower.on('entry', (entry, seq) => {
      this.#outbox.note(entry, seq);
      this.#configReloads.note(entry, seq);
      // A message chain is the outbox's alone: it is no item and no figure.
      // So is an epoch's first entry: the journal's, not a refund's; and a reload of the config.
      if (!foldedByInbox(entry)) return;
      this.#scoreboard.note(entry, seq);
      this.#ledger.note(entry, seq);
      // Items before and after are built only for someone to hear them (not during a replay).
      const change = this.#inbox.note(entry, seq, this.#hub.listening);
      if (change !== null) this.#hub.publishItem(this.#decorated(change));
      if (this.#movedListeners.size > 0) this.#moved.add(entry.effect_id);
    });
    // A chain closed in the last catch-up stays in memory through its listeners; it goes at the next.
    this.#follower.on('begin', () => {
      this.#ledger.evict();
      this.#inbox.evict();
      this.#scoreboard.evict();
      this.#outbox.evict();
    });
    this.#follower.on('caughtUp', () => {
      if (this.#moved.size === 0) return;
      const moved = this.#moved;
      this.#moved = new Set();
      for (const listener of this.#movedListeners) listener(moved, this.#inbox);
      this.#ledger.told();
    });
  }

  /**
   * The journal as the services use it: every call is refused while the views are unavailable,
   * and a corrupt row any call meets makes them so.
   */
  get journal(): JournalStore {
    return this.#journal;
  }

  /** Why the views are unavailable, or null while they are fine. */
  get unavailable(): JournalUnavailableError | null {
    return this.#unavailable;
  }

  /** Refuse at once when the views are unavailable: for a write that must not start on a corrupt journal. */
  assertAvailable(): void {
    if (this.#unavailable) throw this.#unavailable;
  }

  /** The global chain as far as the views recomputed it, null before the first entry. */
  get head(): JournalHead | null {
    return this.#follower.head;
  }

  /**
   * Replay the journal once at start, before anything is served: the check that refuses a damaged
   * journal. From seq 0, or (`startFrom: 'checkpoint'`) from the lower of the newest checkpoint
   * and the tables' cursor, each checked against the seals. A failed check is returned, not logged
   * (start-up tells it once, and stops); the views stay unavailable after it.
   */
  async replayAtStart(): Promise<JournalCorruptError | null> {
    try {
      const reason = await this.#writer.open();
      if (reason !== null && !this.#rebuildDone && this.#rebuild === null) {
        const { head } = await this.#writer.find();
        this.#rebuild = new TablesRebuild({ reason, size: head?.size ?? 0, entries: () => this.#follower.head?.size ?? 0, log: this.#log });
      }
      await this.#startAtPosition();
      await this.#catchUp(false);
      this.#rebuild?.done();
      this.#rebuildDone = true;
      this.#rebuild = null;
      return null;
    } catch (error) {
      this.#rebuild = null;
      if (error instanceof JournalUnavailableError) return error.corrupt;
      if (error instanceof JournalCorruptError) return this.#fail(error, false).corrupt;
      throw error;
    }
  }

  /** Start the follower where `startFrom` says, once, before its first catch-up. */
  async #startAtPosition(): Promise<void> {
    if (this.#startFrom === 'zero' || this.#checkpoints === undefined || this.#follower.head !== null) return;
    let checkpoint: JournalHead | null;
    try {
      checkpoint = await checkpointPosition(this.#journal, this.#checkpoints);
    } catch (error) {
      // A checkpoint that does not hold is no place to start from: the whole journal is replayed
      // and verified instead, and start-up's check of the checkpoints (server/integrity/checkpoints.ts)
      // tells what is wrong with it, by its own code, and refuses the start.
      if (!(error instanceof JournalCorruptError)) throw error;
      checkpoint = null;
    }
    const start = lowerStart(checkpoint, await cursorPosition(this.#journal, this.#writer.kept));
    if (start !== null) this.#follower.startAt(start);
  }

  /** How many chains' tails the follower holds, and how many entries it read since it was made. */
  get followed(): { tailsHeld: number; entriesRead: number } {
    return { tailsHeld: this.#follower.tailsHeld, entriesRead: this.#follower.entriesRead };
  }

  /** A new check of the derived tables at their newest mark (server/integrity/derived-check.ts). */
  derivedCheck(): DerivedCheck {
    return this.#check();
  }

  /** The derived tables as found against the journal at start (read once): whether they must be rebuilt, and why. */
  tablesFound(): Promise<TablesFound> {
    return this.#writer.find();
  }

  /** How far the rebuild of the derived tables at start has come; null when none runs. */
  get rebuilding(): RebuildProgress | null {
    return this.#rebuild?.progress() ?? null;
  }

  /** How many chains' summaries the inbox holds in memory now (open work, and chains that just moved), without catching up. */
  get inboxHeld(): number {
    return this.#inbox.heldChains;
  }

  /** Requests waiting their turn for Stripe on the whole journal, as far as the views have caught up. */
  get waitingTurns(): number {
    return this.#inbox.waitingTurn.size;
  }

  /** The views, caught up with everything durable in the journal before this call. */
  async current(): Promise<CaughtUp> {
    this.assertAvailable();
    await this.#catchUp();
    return {
      inbox: this.#inbox,
      scoreboard: this.#scoreboard,
      ledger: this.#ledger,
      outbox: this.#outbox,
      configReloads: this.#configReloads,
      seq: this.#follower.seq,
      chain: (effectId) => this.#chains.read(this.#journal, effectId),
    };
  }

  /**
   * Note an error met anywhere the journal is read. A corrupt journal makes the views unavailable
   * (logged here, once); true when the error was the journal's, so the caller need not log it again.
   */
  report(error: unknown): boolean {
    if (error instanceof JournalUnavailableError) return true;
    if (!(error instanceof JournalCorruptError)) return false;
    this.#fail(error);
    return true;
  }

  /** Catch up now without waiting (a confirmation just landed): a failure is handled as a poll's is. */
  refresh(): void {
    if (this.#unavailable) return;
    this.#catchUp().catch((error: unknown) => {
      if (!this.report(error)) this.#log.error({ err: error }, 'the views could not catch up with the journal; the next read tries again');
    });
  }

  /** Be told each time the views caught up (the outbox plans then). */
  onCaughtUp(listener: (seq: number) => void): void {
    this.#follower.on('caughtUp', listener);
  }

  /** As `onCaughtUp`, until the answer is called. */
  onCaughtUpUntil(listener: (seq: number) => void): () => void {
    this.#follower.on('caughtUp', listener);
    return () => this.#follower.off('caughtUp', listener);
  }

  /** Look for entries other processes appended to the same journal, every `intervalMs`. */
  startPolling(intervalMs: number): void {
    this.stopPolling();
    this.#timer = setInterval(() => this.refresh(), intervalMs);
    this.#timer.unref();
  }

  stopPolling(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** Add a live socket for these groups, caught up first: it is sent the inbox now, then every change. */
  async join(socket: LiveSocket, groups: Audience): Promise<() => void> {
    const { inbox } = await this.current();
    return this.#hub.join(socket, groups, inbox.queue(groups).map(this.#decorate));
  }

  /**
   * Show items through `decorate` (their current facts and the approvals that still count, display
   * only), on the live feed and in every answer that shows an item; the views themselves never change.
   */
  decorateItems(decorate: (item: InboxItem) => InboxItem): void {
    this.#decorate = decorate;
  }

  /** An item as people are shown it, through the decoration `decorateItems` installed. */
  shown(item: InboxItem): InboxItem {
    return this.#decorate(item);
  }

  /**
   * Be told after each catch-up which chains moved since the last one, with the inbox as it then
   * stands (display caches watch arrivals this way); the answer stops it. While someone listens,
   * the ledger keeps what each of those chains stood at before (`LedgerView.moved`), until told.
   */
  onChainsMoved(listener: (moved: ReadonlySet<string>, inbox: InboxView) => void): () => void {
    this.#movedListeners.add(listener);
    return () => {
      this.#movedListeners.delete(listener);
      if (this.#movedListeners.size > 0) return;
      this.#moved.clear();
      this.#ledger.told();
    };
  }

  /** Tell the live pages that may see the item (its group now) that its payment's facts were read again. */
  publishFacts(effectId: string, current: CurrentFacts): void {
    const summary = this.#inbox.chains.get(effectId);
    const item = summary !== undefined && this.#inbox.owned(summary) ? summaryItem(summary) : null;
    if (item !== null) this.#hub.publishFacts(effectId, item.group, current);
  }

  /** Tell every live page something global moved (the clock in test mode). */
  broadcast(message: LiveMessage): void {
    this.#hub.broadcast(message);
  }

  /** The inbox's sweeps, narrowed by the inbox projection, each caught up first. */
  work(effectIdOf: (request: InboxRequest) => string): InboxWork {
    return projectedWork(this.#inbox, async () => void (await this.current()), effectIdOf);
  }

  /** A chain as the journal holds it now, read once for every table-backed view folding it again in this batch. */
  #chainRead(effectId: string): Promise<Entry[]> {
    let read = this.#chainReads.get(effectId);
    if (read === undefined) {
      read = this.#journal.entries(effectId);
      this.#chainReads.set(effectId, read);
    }
    return read;
  }

  #decorated(change: ItemChange): ItemChange {
    return change.after === null ? change : { ...change, after: this.#decorate(change.after) };
  }

  async #catchUp(logFailure = true): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.#writer.open();
        // Open work as the tables hold it, before the follower applies anything past their cursor.
        await this.#inbox.load();
        await this.#follower.catchUp();
        return;
      } catch (error) {
        if (error instanceof JournalCorruptError) throw this.#fail(error, logFailure);
        const delayMs = this.#busyRetryDelaysMs[attempt];
        if (!isBusy(error) || delayMs === undefined) throw error;
        await this.#sleep(delayMs);
        this.assertAvailable();
      }
    }
  }

  #fail(corrupt: JournalCorruptError, log = true): JournalUnavailableError {
    if (this.#unavailable) return this.#unavailable;
    this.#unavailable = new JournalUnavailableError(corrupt);
    this.stopPolling();
    if (log) {
      const { fields, message } = failureLine(corrupt);
      this.#log.fatal(fields, message);
    }
    this.#hub.closeAll(CLOSE_JOURNAL_UNAVAILABLE, 'journal_unavailable');
    return this.#unavailable;
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
