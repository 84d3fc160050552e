import type { ChainState } from '../../shared/api.ts';
import type { ChainSummary } from './summary.ts';

/** Stale deadlines the heap may hold beyond the live ones before it is rebuilt from them. */
const STALE_DEADLINES_MAX = 4_096;

/** An open escalation's deadline as it was noted; stale once the chain's latest escalation is another. */
interface Deadline {
  dueMs: number;
  effectId: string;
  escalation: string;
}

/** A binary min-heap of deadlines, soonest first. */
class DeadlineHeap {
  readonly #items: Deadline[] = [];

  get size(): number {
    return this.#items.length;
  }

  peek(): Deadline | undefined {
    return this.#items[0];
  }

  /** Keep only these items. */
  reset(items: Iterable<Deadline>): void {
    this.#items.length = 0;
    for (const item of items) this.push(item);
  }

  push(item: Deadline): void {
    const items = this.#items;
    items.push(item);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (items[parent]!.dueMs <= item.dueMs) break;
      items[i] = items[parent]!;
      i = parent;
    }
    items[i] = item;
  }

  pop(): Deadline | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (top === undefined || last === undefined || items.length === 0) return top;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= items.length) break;
      const right = left + 1;
      const child = right < items.length && items[right]!.dueMs < items[left]!.dueMs ? right : left;
      if (items[child]!.dueMs >= last.dueMs) break;
      items[i] = items[child]!;
      i = child;
    }
    items[i] = last;
    return top;
  }
}

/**
 * Which chains can need background work, kept from the same entries as the inbox's views: owned
 * open escalations by deadline, approvals not yet sent, what a restart may have left half done,
 * and (for recovery, whoever owns them) open dispatches. It only narrows which chains are read;
 * every step still decides on the chain read from the journal. Ownership here is the first
 * PROPOSED's agent, a superset of the inbox's own test (the first entry is its PROPOSED), so
 * nothing the inbox owns is left out.
 */
export class InboxWorkIndex {
  /** The latest open escalation with a deadline, per chain; the heap's entries are checked against it. */
  readonly #deadlines = new Map<string, Deadline>();
  readonly #heap = new DeadlineHeap();
  readonly #approved = new Set<string>();
  /** An owed escalation, or a bound request that was never escalated nor sent. */
  readonly #unfinished = new Set<string>();
  /** Closed by a repair; work until the repair's own chain exists. */
  readonly #repaired = new Set<string>();
  /** Any chain, owned or not, with an open dispatch: what recovery may have to settle. */
  readonly #sending = new Set<string>();

  /** Note a chain's summary after an entry was folded into it; `state` is null for a chain the inbox does not own. */
  note(summary: ChainSummary, state: ChainState | null): void {
    const id = summary.effectId;
    toggle(this.#sending, id, summary.openDispatch);
    const dueMs = summary.latest?.due_ms;
    if (state === 'ESCALATED' && typeof dueMs === 'number') {
      const escalation = summary.latest!.hash;
      if (this.#deadlines.get(id)?.escalation !== escalation) {
        const deadline = { dueMs, effectId: id, escalation };
        this.#deadlines.set(id, deadline);
        this.#heap.push(deadline);
      }
    } else {
      this.#deadlines.delete(id);
    }
    // Answered or superseded deadlines are dropped lazily; this bounds how many can pile up.
    if (this.#heap.size > 2 * this.#deadlines.size + STALE_DEADLINES_MAX) this.#heap.reset(this.#deadlines.values());
    toggle(this.#approved, id, state === 'APPROVED');
    toggle(this.#unfinished, id, state === 'NEEDS_ESCALATION' || (state === 'NEW' && summary.request !== null));
    toggle(this.#repaired, id, state === 'CLOSED' && summary.closedBy?.decision === 'repair');
  }

  /**
   * Chains whose open escalation was due at or before `nowMs`, soonest first. They stay in the
   * index until a newer escalation or a decision replaces theirs, so an item whose move failed is
   * due again on the next tick. Costs O(due · log n) plus the stale deadlines it drops.
   */
  due(nowMs: number): string[] {
    const due: Deadline[] = [];
    for (let top = this.#heap.peek(); top !== undefined && top.dueMs <= nowMs; top = this.#heap.peek()) {
      this.#heap.pop();
      if (this.#deadlines.get(top.effectId) === top) due.push(top);
    }
    for (const deadline of due) this.#heap.push(deadline);
    return due.map((d) => d.effectId);
  }

  /** Chains with a recorded approval not yet sent. */
  approved(): string[] {
    return [...this.#approved];
  }

  /** Chains that owe an escalation, or whose bound request was never escalated nor sent. */
  unfinished(): string[] {
    return [...this.#unfinished];
  }

  /** Chains of any agent with an open dispatch, the first opened first. */
  sending(): string[] {
    return [...this.#sending];
  }

  /** Chains closed by a repair whose repair chain was not yet seen. */
  repaired(): string[] {
    return [...this.#repaired];
  }

  /** The repair chain of this closed chain exists: it needs no more work (chains never disappear). */
  settleRepair(effectId: string): void {
    this.#repaired.delete(effectId);
  }

  /** Forget a chain (finished for good, let go of by the views): it is in no list any more. */
  forget(effectId: string): void {
    for (const set of [this.#sending, this.#approved, this.#unfinished, this.#repaired]) set.delete(effectId);
    this.#deadlines.delete(effectId);
  }

  /** Sizes, for tests and diagnostics. */
  sizes(): { deadlines: number; heap: number; approved: number; unfinished: number; repaired: number; sending: number } {
    return {
      sending: this.#sending.size,
      deadlines: this.#deadlines.size,
      heap: this.#heap.size,
      approved: this.#approved.size,
      unfinished: this.#unfinished.size,
      repaired: this.#repaired.size,
    };
  }
}

function toggle(set: Set<string>, id: string, member: boolean): void {
  if (member) set.add(id);
  else set.delete(id);
}
