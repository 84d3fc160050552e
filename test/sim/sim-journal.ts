import { chainRowsOf, type JournalClock, MemoryJournal, type MemoryState, openDispatchRowsOf } from '../../db/journal-memory.ts';
import { type CheckedBodies, chainOfRows, entryOfRow, type NewEntryRow, VerifiedBodies } from '../../db/journal-rules.ts';
import { deepFreeze } from '../../db/memory/frozen.ts';
import type { Dispatched, Entry, EntryKind, EntryOf, FieldsOf } from '../../shared/entries.ts';
import { SimulatedCrash } from '../../server/gate/target.ts';
import { isOpenDispatch, latestEscalation } from '../../server/journal/chain.ts';
import { chainState } from '../../server/inbox/state.ts';
import { globalHashOf } from '../../server/journal/hash.ts';
import type {
  AppendIfResult,
  AppendOptions,
  ChainCheck,
  ChainEnd,
  ClaimRequest,
  JournalHead,
  JournalStore,
  ReservationGuard,
  Reservations,
  SealedEntry,
  Sequenced,
} from '../../server/journal/store.ts';

/**
 * Every body the world's journal trusted, with the entry it was trusted as, frozen to its depths:
 * a row is parsed, shaped and hashed at its first read, and every later read of the same text at
 * the same seq (a process's chain, a follower's scan, the oracle's look) answers that entry. Only
 * whether the row's columns agree with it is checked again. A seed's journal is some hundreds of
 * entries, each read a dozen times.
 */
export class KeptEntries extends VerifiedBodies {
  readonly #kept = new Map<number, { body: string; entry: Entry | null }>();
  /** Scans keep what they read too: the world's journal is small. */
  override readonly lookupOnly: CheckedBodies = this;

  override holds(seq: number, body: string): boolean {
    return this.#kept.get(seq)?.body === body;
  }

  override remember(seq: number, body: string): void {
    if (!this.holds(seq, body)) this.#kept.set(seq, { body, entry: null });
  }

  entryOf(seq: number, body: string): Entry | undefined {
    const kept = this.#kept.get(seq);
    return kept?.body === body ? (kept.entry ?? undefined) : undefined;
  }

  keepEntry(seq: number, body: string, entry: Entry): Entry {
    this.#kept.set(seq, { body, entry: deepFreeze(entry) });
    return entry;
  }
}

/**
 * The one journal every simulated process shares: a MemoryJournal that also lets the simulator's
 * oracle look at an entry at the instant it becomes durable (inside the write lock) and read
 * chains synchronously, between two awaits of the code under test. What it reads it keeps
 * (KeptEntries), so every reader of a row is answered one frozen entry.
 */
export class SimJournal extends MemoryJournal {
  readonly #kept: KeptEntries;

  constructor(clock: JournalClock) {
    const kept = new KeptEntries();
    super({ ...clock, verified: kept });
    this.#kept = kept;
  }

  /** Called inside the write lock, just before an entry is stored: where the oracle judges a DISPATCHED. */
  onInsert: ((entry: Entry) => void) | null = null;

  protected override insertRow(tx: MemoryState, row: NewEntryRow): Promise<number> {
    this.onInsert?.(JSON.parse(row.body) as Entry);
    return super.insertRow(tx, row);
  }

  /** One effect's chain, now. */
  chainNow(effectId: string): Entry[] {
    return this.peek((state) => chainOfRows(chainRowsOf(state, effectId), this.#kept));
  }

  /** How many entries one effect's chain has now (nothing parsed: the journal only grows, so the chain then is a prefix of the chain later). */
  chainLengthNow(effectId: string): number {
    return this.peek((state) => chainRowsOf(state, effectId).length);
  }

  /** Approvals recorded and not yet sent, now: who approved, in which group. */
  unsentApprovalsNow(): Array<{ by: string; group: string }> {
    const effectIds = new Set(this.peek((state) => state.rows.map((row) => row.effectId)));
    return [...effectIds].flatMap((effectId) => {
      const chain = this.chainNow(effectId);
      if (chainState(chain) !== 'APPROVED') return [];
      const { escalation, decision } = latestEscalation(chain);
      return escalation && decision ? [{ by: decision.by, group: escalation.group }] : [];
    });
  }

  /** The effects with an open dispatch now. */
  openDispatchIds(): string[] {
    return this.peek(openDispatchRowsOf).map((row) => row.effectId);
  }

  /**
   * The open dispatches of refunds on this payment, now (the first per effect), found from the
   * dispatched payloads themselves rather than the `reserves` column the code under test fills in.
   */
  openDispatchesOn(paymentIntent: string): Dispatched[] {
    return this.peek(openDispatchRowsOf)
      .map((row) => entryOfRow(row, this.#kept) as Dispatched)
      .filter((entry) => entry.effect.payment_intent === paymentIntent);
  }
}

/** One simulated process's life: once it is dead, nothing it started may touch the world again. */
export interface Life {
  dead: boolean;
  /** Decide whether the process dies at this point; throws SimulatedCrash (having marked it dead) when it does. */
  maybeCrash(point: string): void;
  /** Count something that happened, for the run's coverage. */
  note(key: string): void;
}

/**
 * A process's view of the shared journal. Every call of a dead process throws SimulatedCrash, so
 * work a crash interrupted (another concurrent request, a sweep) stops at its next journal call,
 * as it would in a process that died. An append may crash before it is made, or after it is
 * durable but before the caller hears of it; with MemoryJournal an append happened or it did not.
 */
export class ProcessJournal implements JournalStore {
  /** `seen`: what this process's scans make of each entry, null to leave it out (the planted bugs `drop_confirmed`, `outbox_early_final`). */
  constructor(
    private readonly shared: SimJournal,
    private readonly life: Life,
    private readonly seen: ((entry: Entry) => Entry | null) | null = null,
  ) {}

  /** The global hash of each entry this process was shown, by seq, when `seen` changes what it sees. */
  readonly #shownGlobal = new Map<number, string>();

  private alive(): void {
    if (this.life.dead) throw new SimulatedCrash('the process is dead');
  }

  private async write<T>(kind: EntryKind, run: () => Promise<T>): Promise<T> {
    this.alive();
    this.life.maybeCrash(`append_before:${kind}`);
    const result = await run();
    this.alive();
    this.life.maybeCrash(`append_after:${kind}`);
    return result;
  }

  private async read<T>(run: () => Promise<T>): Promise<T> {
    this.alive();
    const result = await run();
    this.alive();
    return result;
  }

  entries(effectId: string): Promise<Entry[]> {
    return this.read(() => this.shared.entries(effectId));
  }

  append<K extends EntryKind>(kind: K, effectId: string, fields: FieldsOf<K>, options?: AppendOptions): Promise<EntryOf<K>> {
    return this.write(kind, () => this.shared.append(kind, effectId, fields, options));
  }

  appendIf<K extends EntryKind>(
    kind: K,
    effectId: string,
    check: ChainCheck,
    fields: FieldsOf<K>,
    claim?: ClaimRequest,
    guard?: ReservationGuard,
  ): Promise<AppendIfResult<K>> {
    return this.write(kind, async () => {
      const result = await this.shared.appendIf(kind, effectId, check, fields, claim, guard);
      if (result.blocker !== null) this.life.note(`journal.blocked.${kind}.${result.blocker}`);
      return result;
    });
  }

  claim(effectId: string, owner: string, ttlMs: number): Promise<boolean> {
    return this.read(async () => {
      const claimed = await this.shared.claim(effectId, owner, ttlMs);
      if (!claimed) this.life.note('journal.claim_refused');
      return claimed;
    });
  }

  reservations(key: string): Promise<Reservations> {
    return this.read(() => this.shared.reservations(key));
  }

  release(effectId: string, owner: string): Promise<void> {
    // A dead process releases nothing: its claims last until their TTL, as a real death's do.
    return this.read(async () => {
      await this.shared.release(effectId, owner);
      // A live sender lets go of a dispatch still open only when its tries of a busy target ran out.
      if (owner.endsWith('/send') && isOpenDispatch(this.shared.chainNow(effectId))) this.life.note('gate.busy_let_go');
    });
  }

  inFlight(): Promise<string[]> {
    return this.read(() => this.shared.inFlight());
  }

  async scan(afterSeq: number, limit: number): Promise<Sequenced[]> {
    const page = await this.read(() => this.shared.scan(afterSeq, limit));
    const seen = this.seen;
    if (seen === null) return page;
    // What this process sees is a journal of its own: its global chain is the one of the entries
    // it is shown, so a follower checking that chain still hands every one of them to the views.
    let previous = afterSeq === 0 ? null : (this.#shownGlobal.get(afterSeq) ?? null);
    return page.flatMap(({ seq, entry }) => {
      const shown = seen(entry);
      if (shown === null) return [];
      const global = globalHashOf(previous, seq, shown.hash);
      previous = global;
      this.#shownGlobal.set(seq, global);
      return [{ seq, entry: shown, global }];
    });
  }

  head(): Promise<JournalHead | null> {
    return this.read(() => this.shared.head());
  }

  newestSeq(): Promise<number> {
    return this.read(() => this.shared.newestSeq());
  }

  sealedChain(effectId: string): Promise<SealedEntry[]> {
    return this.read(() => this.shared.sealedChain(effectId));
  }

  /** The seal at `seq`: when `seen` changes what this process sees, the one of the chain it was shown. */
  async sealAt(seq: number): Promise<string | null> {
    const stored = await this.read(() => this.shared.sealAt(seq));
    return this.seen === null ? stored : (this.#shownGlobal.get(seq) ?? null);
  }

  /** Asked only below what the process applied, which it has seen whole. */
  chainEnds(effectIds: readonly string[], throughSeq: number): Promise<ChainEnd[]> {
    return this.read(() => this.shared.chainEnds(effectIds, throughSeq));
  }

  chainIds(after: string, limit: number): Promise<string[]> {
    return this.read(() => this.shared.chainIds(after, limit));
  }
}

/** Every entry of a journal, in order. */
export async function allEntries(journal: Pick<JournalStore, 'scan'>): Promise<Entry[]> {
  const out: Entry[] = [];
  for (let after = 0; ; ) {
    const page = await journal.scan(after, 10_000);
    if (page.length === 0) return out;
    for (const { seq, entry } of page) {
      out.push(entry);
      after = seq;
    }
  }
}
