import type { CurrentFacts, InboxItem, LiveMessage } from '../../shared/api.ts';
import { MemoryDerivedTables } from '../../db/memory/derived.ts';
import type { DerivedTables } from '../../db/port/derived.ts';
import type { InboxRequest, InboxWork } from '../inbox/core.ts';
import { projectedWork } from '../inbox/projection.ts';
import { foldedByInbox } from '../inbox/table.ts';
import type { DerivedCheck } from '../integrity/derived-check.ts';
import { guardJournal } from '../journal/guarded.ts';
import { type JournalHead, JournalCorruptError, type JournalStore } from '../journal/store.ts';
import { JournalFollower } from '../live/follower.ts';
import type { Audience, LiveSocket } from '../live/hub.ts';
import { BatchChainReads, type BusyRetries, catchUpRetrying, Polling, sleepMs } from './catch-up.ts';
import { ChainsMoved, type ChainsMovedListener } from './chains-moved.ts';
import { failureLine, JournalUnavailableError } from './failures.ts';
import { LiveFeed } from './live-feed.ts';
import { BUSY_RETRY_DELAYS_MS, type CaughtUp, type ViewsLog, type ViewsOptions } from './options.ts';
import { type RebuildProgress, RebuildAtStart } from './rebuild-progress.ts';
import { checkpointStart, type StartCheckpoints, type StartFrom } from './start-position.ts';
import { TableViews } from './table-views.ts';
import { VerifiedChains } from './verified-chains.ts';
import { tablesVersion } from './version.ts';
import { DerivedWriter, type TablesFound } from './writer.ts';

export { BUSY_RETRY_DELAYS_MS, type CaughtUp, type ViewsLog, type ViewsOptions } from './options.ts';

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
  /** The views kept in derived tables. */
  readonly #tables: TableViews;
  readonly #writer: DerivedWriter;
  readonly #derived: DerivedTables;
  readonly #rebuild = new RebuildAtStart();
  readonly #feed: LiveFeed;
  readonly #log: ViewsLog;
  readonly #startFrom: StartFrom;
  readonly #checkpoints: StartCheckpoints | undefined;
  /** How a catch-up that found the database busy is tried again. */
  readonly #busy: Pick<BusyRetries, 'delaysMs' | 'sleep'>;
  #unavailable: JournalUnavailableError | null = null;
  readonly #polling = new Polling();
  readonly #chainReads: BatchChainReads;
  readonly #moved = new ChainsMoved();
  /** The start's replay is running: no planning pass comes between its pages. */
  #replaying = false;

  constructor(options: ViewsOptions) {
    this.#follower = new JournalFollower(options.journal, async () => {
      try {
        await this.#writer.flush(() => this.#follower.head);
      } finally {
        this.#chainReads.clear();
      }
      // With nobody to tell which chains moved (a replay at start, a rebuild), what the page
      // closed leaves every view's memory at once, so a replay holds open work and one page;
      // else at the next catch-up.
      if (!this.#moved.watching) this.#tables.evict(this.#replaying);
      // A rebuild runs while the server listens: a turn of the event loop between pages lets `/readyz` answer.
      if (this.#rebuild.running) await new Promise<void>((resolve) => setImmediate(resolve));
    }, { tailsHeldMax: options.tailsHeldMax });
    this.#startFrom = options.startFrom ?? 'zero';
    this.#checkpoints = options.checkpoints;
    this.#chains = new VerifiedChains(this.#follower, (corrupt) => this.#fail(corrupt));
    this.#journal = guardJournal(options.journal, {
      assertAvailable: () => this.assertAvailable(),
      report: (error) => this.report(error),
      chainHold: (effectId) => this.#chains.holdAsNow(effectId),
    });
    this.#chainReads = new BatchChainReads((effectId) => this.#journal.entries(effectId));
    this.#feed = new LiveFeed(options.nowMs);
    const derived = options.derived ?? new MemoryDerivedTables();
    this.#derived = derived;
    this.#tables = new TableViews({
      inboxName: options.inboxName,
      tables: derived,
      journal: this.#journal,
      chainRead: (effectId) => this.#chainReads.read(effectId),
      tablesSeq: () => this.#writer.seq,
      viewsSeq: () => this.#follower.seq,
      watching: () => this.#moved.watching,
      onItemChange: (change) => {
        if (this.#feed.listening) this.#feed.publishItem(change);
      },
    });
    this.#writer = new DerivedWriter(derived, options.version ?? tablesVersion(options.inboxName), this.#tables.sources, options.journal);
    this.#log = options.log;
    this.#busy = { delaysMs: options.busyRetryDelaysMs ?? BUSY_RETRY_DELAYS_MS, sleep: options.sleep ?? sleepMs };
    this.#follower.on('entry', (entry, seq) => {
      // Items before and after are built only for someone to hear them (not during a replay).
      const change = this.#tables.note(entry, seq, this.#feed.listening);
      if (change !== null) this.#feed.publishItem(change);
      if (foldedByInbox(entry)) this.#moved.note(entry.effect_id);
    });
    // A chain closed in the last catch-up stays in memory through its listeners; it goes at the next.
    this.#follower.on('begin', () => this.#tables.evict());
    this.#follower.on('caughtUp', () => {
      if (this.#moved.tell(this.#tables.inbox)) this.#tables.ledger.told();
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
      if (reason !== null && this.#rebuild.idle) {
        // Counted only for a rebuild's progress: counting every entry is what a kept start spares.
        const head = await this.#journal.head();
        this.#rebuild.begin({ reason, size: head?.size ?? 0, entries: () => this.#follower.head?.size ?? 0, log: this.#log });
      }
      await this.#startAtPosition();
      this.#replaying = true;
      try {
        // Many batches in a row: the store's upkeep between them (SQLite's checkpoints) waits for the end.
        const catchUp = () => this.#catchUp(false);
        await (this.#derived.deferUpkeep?.(catchUp) ?? catchUp());
      } finally {
        this.#replaying = false;
      }
      this.#rebuild.finish();
      return null;
    } catch (error) {
      this.#rebuild.drop();
      if (error instanceof JournalUnavailableError) return error.corrupt;
      if (error instanceof JournalCorruptError) return this.#fail(error, false).corrupt;
      throw error;
    }
  }

  /** Start the follower where `startFrom` says, once, before its first catch-up. */
  async #startAtPosition(): Promise<void> {
    if (this.#startFrom === 'zero' || this.#checkpoints === undefined || this.#follower.head !== null) return;
    const start = await checkpointStart(this.#journal, this.#checkpoints, this.#writer.kept);
    if (start !== null) this.#follower.startAt(start);
  }

  /** How many chains' tails the follower holds, and how many entries it read since it was made. */
  get followed(): { tailsHeld: number; entriesRead: number } {
    return { tailsHeld: this.#follower.tailsHeld, entriesRead: this.#follower.entriesRead };
  }

  /** A new check of the derived tables at their newest mark (server/integrity/derived-check.ts). */
  derivedCheck(): DerivedCheck {
    return this.#tables.check();
  }

  /** The derived tables as found against the journal at start (read once): whether they must be rebuilt, and why. */
  tablesFound(): Promise<TablesFound> {
    return this.#writer.find();
  }

  /** How far the rebuild of the derived tables at start has come; null when none runs. */
  get rebuilding(): RebuildProgress | null {
    return this.#rebuild.progress();
  }

  /** How many chains' summaries the inbox holds in memory now (open work, and chains that just moved), without catching up. */
  get inboxHeld(): number {
    return this.#tables.inbox.heldChains;
  }

  /** How many chains each view holds in memory now (open work, and chains that just moved), without catching up. */
  get held(): { inbox: number; ledger: number; scoreboard: number; outboxItems: number } {
    const tables = this.#tables;
    return { inbox: tables.inbox.heldChains, ledger: tables.ledger.heldChains, scoreboard: tables.scoreboard.heldChains, outboxItems: tables.outbox.inMemory.items };
  }

  /** Requests waiting their turn for Stripe on the whole journal, as far as the views have caught up. */
  get waitingTurns(): number {
    return this.#tables.inbox.waitingTurn.size;
  }

  /** The views, caught up with everything durable in the journal before this call. */
  async current(): Promise<CaughtUp> {
    this.assertAvailable();
    await this.#catchUp();
    const { inbox, scoreboard, ledger, outbox, configReloads } = this.#tables;
    return { inbox, scoreboard, ledger, outbox, configReloads, seq: this.#follower.seq, chain: (effectId) => this.#chains.read(this.#journal, effectId) };
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
    this.#polling.start(intervalMs, () => this.refresh());
  }

  stopPolling(): void {
    this.#polling.stop();
  }

  /** Add a live socket for these groups, caught up first: it is sent the inbox now, then every change. */
  async join(socket: LiveSocket, groups: Audience): Promise<() => void> {
    const { inbox } = await this.current();
    return this.#feed.join(socket, groups, inbox);
  }

  /**
   * Show items through `decorate` (their current facts and the approvals that still count, display
   * only), on the live feed and in every answer that shows an item; the views themselves never change.
   */
  decorateItems(decorate: (item: InboxItem) => InboxItem): void {
    this.#feed.decorateItems(decorate);
  }

  /** An item as people are shown it, through the decoration `decorateItems` installed. */
  shown(item: InboxItem): InboxItem {
    return this.#feed.shown(item);
  }

  /**
   * Be told after each catch-up which chains moved since the last one, with the inbox as it then
   * stands (display caches watch arrivals this way); the answer stops it. While someone listens,
   * the ledger keeps what each of those chains stood at before (`LedgerView.moved`), until told.
   */
  onChainsMoved(listener: ChainsMovedListener): () => void {
    return this.#moved.listen(listener, () => this.#tables.ledger.told());
  }

  /** Tell the live pages that may see the item (its group now) that its payment's facts were read again. */
  publishFacts(effectId: string, current: CurrentFacts): void {
    this.#feed.publishFacts(this.#tables.inbox, effectId, current);
  }

  /** Tell every live page something global moved (the clock in test mode). */
  broadcast(message: LiveMessage): void {
    this.#feed.broadcast(message);
  }

  /** The inbox's sweeps, narrowed by the inbox projection, each caught up first. */
  work(effectIdOf: (request: InboxRequest) => string): InboxWork {
    return projectedWork(this.#tables.inbox, async () => void (await this.current()), effectIdOf);
  }

  #catchUp(logFailure = true): Promise<void> {
    return catchUpRetrying(
      async () => {
        // Every view's open work as the tables hold it (`DerivedSource.load`), before the follower applies anything past their cursor.
        await this.#writer.open();
        await this.#follower.catchUp();
      },
      { ...this.#busy, assertAvailable: () => this.assertAvailable(), fail: (corrupt) => this.#fail(corrupt, logFailure) },
    );
  }

  #fail(corrupt: JournalCorruptError, log = true): JournalUnavailableError {
    if (this.#unavailable) return this.#unavailable;
    this.#unavailable = new JournalUnavailableError(corrupt);
    this.stopPolling();
    if (log) {
      const { fields, message } = failureLine(corrupt);
      this.#log.fatal(fields, message);
    }
    this.#feed.closeUnavailable();
    return this.#unavailable;
  }
}
