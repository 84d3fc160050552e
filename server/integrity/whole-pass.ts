import { globalHashOf } from '../journal/hash.ts';
import { JournalCorruptError, type JournalHead, type JournalStore } from '../journal/store.ts';
import { type DerivedCheck, DerivedMismatchError } from './derived-check.ts';
import type { Views } from '../views/views.ts';

// The background pass over the whole journal while the server runs: every entry's hash and its
// seal against the global chain recomputed from the first entry, every chain's links, and the
// newest checkpoint against the seals. It reads a page at a time (memory holds one page), in
// slices of at most `sliceMs` of work, sleeping after each so it takes at most `share` of a core;
// a pass starts after start-up and again `periodMs` after the last one ended. Damage it finds is
// reported as any corrupt journal is: the views become unavailable (503 journal_unavailable, one
// fatal line), and the pass stops. Last, the derived tables are held against the journal at their
// newest mark (derived-check.ts), in the same slices; a table that differs fails closed the same way.

/** Work a slice may do before it yields: the event loop answers requests in between. */
export const SLICE_MS = 10;
/** The share of one core the pass may take: it sleeps three times as long as it worked. */
export const CORE_SHARE = 0.25;
/** Entries the first slice reads; each next slice reads as many as the last one's pace fits in its fill of `sliceMs`. */
const FIRST_SLICE_UNITS = 50;
const SLICE_UNITS_MAX = 2_000;
/**
 * The part of `sliceMs` a slice is sized to fill at the last slice's pace: the rest is headroom for
 * a collection or a busy core in the middle of it (at 0.8, 6 of 74 slices ran past 10 ms in
 * `bench/whole-pass.ts` at 20,000 entries).
 */
const SLICE_FILL = 0.5;
/** Chain ids read at once while the links are checked. */
const CHAIN_IDS_PAGE = 200;

/** What the pass has done since the process started: the metrics read it (`interlock_journal_pass_*`). */
export class WholePassCounts {
  passes = 0;
  entries = 0;
  lastPassSeconds: number | null = null;
  damage = 0;
  /** Checks of the derived tables at a mark that held (`interlock_journal_pass_derived_checks_total`). */
  derivedChecks = 0;
  /** Derived tables found to differ from the journal (`interlock_journal_pass_derived_mismatch_total`). */
  derivedMismatches = 0;
}

/** One slice as it ran: what it did, how long it worked and how long it then slept. */
export interface SliceRecord {
  /** `global`: entries of the global chain, as many as the pace allows; `links`: chains, read until the slice's fill of its time is spent; `derived`: chains folded for the derived tables' check, the same way. */
  phase: 'global' | 'links' | 'derived';
  units: number;
  workMs: number;
  sleepMs: number;
}

/**
 * What the pass takes from the views: the journal as they guard it, their report of damage, the
 * head they recomputed (where a pass ends) and whether they stand failed.
 */
export function viewsPassParts(views: Pick<Views, 'journal' | 'report' | 'head' | 'unavailable'>): Pick<WholePassParts, 'journal' | 'report' | 'recomputedHead' | 'failed'> {
  return {
    journal: views.journal,
    report: (error) => views.report(error),
    recomputedHead: () => views.head,
    failed: () => views.unavailable !== null,
  };
}

export interface WholePassParts {
  /** The journal as the views guard it: a corrupt row it meets is reported on the way. */
  journal: JournalStore;
  /** Report damage the pass found (the views' `report`): true when it was taken as the journal's. */
  report(error: unknown): boolean;
  /** The global chain as the views recomputed it while applying each entry (`Views.head`): where a pass ends. */
  recomputedHead(): JournalHead | null;
  /** True once the journal stands failed: the pass does not start, and stops. */
  failed(): boolean;
  /** What is wrong with the newest checkpoint against the seals, null when it holds (or there is none). */
  checkpointProblem(): Promise<{ seq: number; problem: string } | null>;
  /** A new check of the derived tables at their newest mark, for each pass; none when absent. */
  derivedCheck?: () => DerivedCheck;
  counts: WholePassCounts;
  /** Between the end of one pass and the start of the next. */
  periodMs: number;
  log: { warn(fields: object, message: string): void };
  sliceMs?: number;
  share?: number;
  sleep?: (ms: number) => Promise<void>;
  /** A monotonic clock in milliseconds (performance.now). */
  nowMs?: () => number;
  /** Told of every slice (a test measures them). */
  onSlice?: (slice: SliceRecord) => void;
  /** Who finds what the pass finds, in its messages: the background pass unless given (the offline verifier). */
  foundBy?: string;
  /** What `recomputedHead` is, in the message when the chain ends elsewhere: the views' recomputed head unless given. */
  headIs?: string;
}

const sleepMs = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class WholeJournalPass {
  readonly #parts: WholePassParts;
  readonly #sliceMs: number;
  readonly #share: number;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #now: () => number;
  readonly #foundBy: string;
  readonly #headIs: string;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<boolean> | null = null;
  /** Set by `stop`: no next pass, and the one under way ends at its next slice. */
  #halted = false;
  /** Entries the next slice of the global chain reads. */
  #units = FIRST_SLICE_UNITS;

  constructor(parts: WholePassParts) {
    this.#parts = parts;
    this.#sliceMs = parts.sliceMs ?? SLICE_MS;
    this.#share = parts.share ?? CORE_SHARE;
    this.#sleep = parts.sleep ?? sleepMs;
    this.#now = parts.nowMs ?? (() => performance.now());
    this.#foundBy = parts.foundBy ?? 'the background pass over the whole journal';
    this.#headIs = parts.headIs ?? 'the views recomputed as they applied them';
  }

  /** Start the first pass now, and each next one `periodMs` after the last ended. */
  start(): void {
    this.#halted = false;
    this.#schedule(0);
  }

  stop(): void {
    this.#halted = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }

  /** The pass under way, if any (a stop waits for it to notice). */
  idle(): Promise<unknown> {
    return this.#running ?? Promise.resolve();
  }

  #schedule(delayMs: number): void {
    if (this.#halted) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.run().then(() => this.#schedule(this.#parts.periodMs));
    }, delayMs);
    this.#timer.unref();
  }

  /** One whole pass; true when the journal held. Never throws: damage is reported, anything else logged. */
  run(): Promise<boolean> {
    this.#running ??= this.#run().finally(() => (this.#running = null));
    return this.#running;
  }

  async #run(): Promise<boolean> {
    const { counts, log } = this.#parts;
    if (this.#parts.failed()) return false;
    const startMs = this.#now();
    try {
      const done = (await this.#globalChain()) && (await this.#links()) && (await this.#checkpoint()) && (await this.#derived());
      if (!done) return false;
      counts.passes += 1;
      counts.lastPassSeconds = (this.#now() - startMs) / 1000;
      return true;
    } catch (error) {
      if (this.#parts.report(error)) {
        // Damage this pass found; a journal another reader had already failed is not counted again.
        if (error instanceof DerivedMismatchError) counts.derivedMismatches += 1;
        else if (error instanceof JournalCorruptError) counts.damage += 1;
        this.stop();
        return false;
      }
      log.warn({ event: 'journal_pass_failed', err: error }, 'the background pass over the journal could not finish; the next one starts after its period');
      return false;
    }
  }

  /**
   * Every entry (its hash checked by the read) with its seal, the global chain recomputed from the
   * first entry to where the views stood at the start of the pass; there it must be the chain the
   * views recomputed as they applied each entry, so rows rewritten with every seal after them,
   * consistent as stored, are found too.
   */
  async #globalChain(): Promise<boolean> {
    const { journal, counts } = this.#parts;
    const head = this.#parts.recomputedHead();
    if (head === null) return true;
    let previous: string | null = null;
    let after = 0;
    while (after < head.seq) {
      const ran = await this.#slice('global', async () => {
        const page = await journal.scan(after, this.#units);
        let units = 0;
        for (const { seq, entry, global } of page) {
          if (seq > head.seq) {
            // Past where the views stood: the walk ends here (the head's own entry may be gone, which
            // the comparison below finds), never a page read again for ever.
            after = head.seq;
            break;
          }
          if (global !== globalHashOf(previous, seq, entry.hash)) {
            throw new JournalCorruptError(`journal entry seq ${seq} breaks the global chain: found by ${this.#foundBy}`, { seq, effectId: entry.effect_id });
          }
          previous = global;
          after = seq;
          units += 1;
        }
        if (page.length === 0) {
          throw new JournalCorruptError(`the global chain goes on to seq ${head.seq} but the entries end at seq ${after}: entries were removed from the end (found by ${this.#foundBy})`, {
            seq: head.seq,
            effectId: 'unknown',
          });
        }
        counts.entries += units;
        return units;
      });
      if (!ran) return false;
    }
    if (previous !== head.globalHash) {
      throw new JournalCorruptError(`the entries up to seq ${head.seq} give another global chain than ${this.#headIs}: rows and seals were rewritten or removed (found by ${this.#foundBy})`, { seq: head.seq, effectId: 'unknown' });
    }
    return true;
  }

  /** Every chain, one after another in id order, each entry's hash and its link to the one before it checked by the read. */
  async #links(): Promise<boolean> {
    const { journal } = this.#parts;
    let after = '';
    let waiting: string[] = [];
    let finished = false;
    while (!finished) {
      const ran = await this.#slice('links', async () => {
        if (waiting.length === 0) waiting = await journal.chainIds(after, CHAIN_IDS_PAGE);
        finished = waiting.length === 0;
        const sliceStart = this.#now();
        let units = 0;
        // Chains are read whole, one at a time, until the slice's fill is spent (a chain is short).
        while (waiting.length > 0 && (units === 0 || this.#now() - sliceStart < this.#sliceMs * SLICE_FILL)) {
          const effectId = waiting.shift() ?? '';
          units += (await journal.entries(effectId)).length;
          after = effectId;
        }
        return units;
      });
      if (!ran) return false;
    }
    return true;
  }

  async #checkpoint(): Promise<boolean> {
    const found = await this.#parts.checkpointProblem();
    if (found !== null) throw new JournalCorruptError(`the newest checkpoint ${found.problem}: found by ${this.#foundBy}`, { seq: found.seq, effectId: 'unknown' });
    return true;
  }

  /** The derived tables at their newest mark, recomputed chain by chain, and every row against its digest; a table that differs throws DerivedMismatchError. */
  async #derived(): Promise<boolean> {
    const check = this.#parts.derivedCheck?.();
    if (check === undefined || !(await check.begin())) return true;
    try {
      while (!check.finished) {
        const ran = await this.#slice('derived', async () => {
          const sliceStart = this.#now();
          return check.step(() => this.#now() - sliceStart < this.#sliceMs * SLICE_FILL);
        });
        if (!ran) return false;
      }
      check.compare();
    } finally {
      check.close();
    }
    this.#parts.counts.derivedChecks += 1;
    return true;
  }

  /**
   * Run one slice of work, then sleep long enough that the pass keeps to its share of a core; the
   * next slice is sized by this one's pace. False when the pass must stop (stopped, or the journal
   * failed meanwhile).
   */
  async #slice(phase: SliceRecord['phase'], work: () => Promise<number>): Promise<boolean> {
    if (this.#halted || this.#parts.failed()) return false;
    const startMs = this.#now();
    const units = await work();
    const workMs = this.#now() - startMs;
    if (units > 0) {
      const perUnitMs = Math.max(workMs / units, 0.001);
      this.#units = Math.max(1, Math.min(SLICE_UNITS_MAX, Math.floor((this.#sliceMs * SLICE_FILL) / perUnitMs)));
    }
    const sleep = Math.max(1, (workMs * (1 - this.#share)) / this.#share);
    this.#parts.onSlice?.({ phase, units, workMs, sleepMs: sleep });
    await this.#sleep(sleep);
    return !this.#halted && !this.#parts.failed();
  }
}
