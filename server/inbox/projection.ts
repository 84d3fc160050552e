import type { HistoryItem, InboxItem } from '../../shared/api.ts';
import type { Entry } from '../../shared/entries.ts';
import { sortQueue } from '../../shared/queue-order.ts';
import { statusRank } from '../journal/confirmations.ts';
import type { InboxRequest, InboxWork } from './core.ts';
import { repairChildOf } from './state.ts';
import { openItem } from './rule-words-before.ts';
import { type ChainSummary, emptySummary, foldEntry, summaryHistory, summaryState } from './summary.ts';
import { waitsAfter } from './table.ts';
import { InboxWorkIndex } from './work.ts';

/** Something a view shows changed: before and after, so a live feed can remove as well as add. */
export interface ItemChange {
  effectId: string;
  before: InboxItem | null;
  after: InboxItem | null;
}

/** The summaries an inbox holds in memory (every open item among them), and which are its own. */
export interface InboxMemory {
  readonly chains: ReadonlyMap<string, ChainSummary>;
  owned(summary: ChainSummary): boolean;
}

/**
 * The inbox's views, rebuilt from the journal alone by folding every entry in order: the queue,
 * the done and closed lists. Only chains whose first PROPOSED is by `inboxName` are shown.
 */
export class InboxProjection {
  readonly chains = new Map<string, ChainSummary>();
  /** Which owned chains can need background work, kept from the same entries. */
  readonly work = new InboxWorkIndex();
  /** Chains waiting their turn for Stripe (`waitsItsTurn`: a lone PROPOSED bound with no facts), whoever wrote them. */
  readonly waitingTurn = new Set<string>();

  constructor(readonly inboxName: string) {}

  /** Fold an entry and say what changed for the queue. */
  apply(entry: Entry): ItemChange {
    const summary = this.summaryOf(entry.effect_id);
    const before = openItem(summary);
    this.foldInto(summary, entry);
    return { effectId: entry.effect_id, before, after: openItem(summary) };
  }

  /** Fold an entry when nobody is watching the queue (a replay at start-up): no items are built. */
  fold(entry: Entry): void {
    this.foldInto(this.summaryOf(entry.effect_id), entry);
  }

  private summaryOf(effectId: string): ChainSummary {
    let summary = this.chains.get(effectId);
    if (!summary) {
      summary = emptySummary(effectId);
      this.chains.set(effectId, summary);
    }
    return summary;
  }

  private foldInto(summary: ChainSummary, entry: Entry): void {
    // Only a chain's first PROPOSED can make it wait; any entry after it ends the wait.
    if (waitsAfter(summary, entry)) this.waitingTurn.add(entry.effect_id);
    else this.waitingTurn.delete(entry.effect_id);
    foldEntry(summary, entry);
    this.work.note(summary, this.owned(summary) ? summaryState(summary) : null);
  }

  /** Hold a chain's summary read back from its row (it was folded before): the work index notes it as a fold would. */
  hold(summary: ChainSummary, waitingTurn: boolean): void {
    this.chains.set(summary.effectId, summary);
    if (waitingTurn) this.waitingTurn.add(summary.effectId);
    else this.waitingTurn.delete(summary.effectId);
    this.work.note(summary, this.owned(summary) ? summaryState(summary) : null);
  }

  /** Let go of a chain finished for good (its row holds it): nothing of the work index names it any more. */
  release(effectId: string): void {
    this.chains.delete(effectId);
    this.waitingTurn.delete(effectId);
    this.work.forget(effectId);
  }

  owned(summary: ChainSummary): boolean {
    return summary.agent === this.inboxName;
  }

  /** The open escalations routed to any of these groups, in the queue order (`sortQueue`). */
  queue(groups: Pick<ReadonlySet<string>, 'has'>): InboxItem[] {
    const items: InboxItem[] = [];
    for (const s of this.chains.values()) {
      const item = this.owned(s) ? openItem(s) : null;
      if (item && groups.has(item.group)) items.push(item);
    }
    return sortQueue(items);
  }

  /** Finished (DONE) or closed chains, newest first, optionally filtered by request id or payment intent. */
  history(kind: 'done' | 'closed', groups: Pick<ReadonlySet<string>, 'has'>, search = '', limit = 200): HistoryItem[] {
    const needle = search.trim().toLowerCase();
    const out: HistoryItem[] = [];
    for (const s of this.chains.values()) {
      if (!this.owned(s) || ![...s.groups].some((g) => groups.has(g))) continue;
      const item = summaryHistory(s);
      if (!item || (kind === 'done') !== (item.state === 'DONE')) continue;
      if (needle && !`${item.request.id} ${item.request.payment_intent}`.toLowerCase().includes(needle)) continue;
      out.push(item);
    }
    return out.sort((a, b) => b.updated_at_ms - a.updated_at_ms).slice(0, limit);
  }

  /** Sent refunds Stripe has not confirmed as final yet: what the reconciler may look up. */
  unconfirmedSent(): string[] {
    const out: string[] = [];
    for (const s of this.chains.values()) {
      if (s.committed && !s.confirmations.some((status) => statusRank(status) > 0)) out.push(s.effectId);
    }
    return out;
  }

  /** Whether an entry of this chain was folded. */
  async hasChain(effectId: string): Promise<boolean> {
    return this.chains.has(effectId);
  }

  /** The repair's chain of this chain exists: it needs no more work. */
  repairSettled(effectId: string): void {
    this.work.settleRepair(effectId);
  }

  /** Effect ids of the chains this inbox owns. */
  ownedIds(): string[] {
    return [...this.chains.values()].filter((s) => this.owned(s)).map((s) => s.effectId);
  }

  /** Every chain's summary, in the order the chains began. */
  async everySummary(): Promise<ChainSummary[]> {
    return [...this.chains.values()];
  }
}

/** What the sweeps read of the inbox: its work index, the summaries in memory, and whether a chain exists. */
export interface WorkSource {
  readonly work: InboxWorkIndex;
  readonly chains: ReadonlyMap<string, ChainSummary>;
  hasChain(effectId: string): Promise<boolean>;
  /** The repair's chain of this chain exists: it needs no more work. */
  repairSettled(effectId: string): void;
}

/**
 * The inbox's sweeps narrowed by its projection. Each call first runs `catchUp`, so the
 * projection holds every entry written before it, by this process or another; entries written
 * after are seen by the next sweep.
 */
export function projectedWork(projection: WorkSource, catchUp: () => Promise<void>, effectIdOf: (request: InboxRequest) => string): InboxWork {
  const index = projection.work;
  return {
    async due(nowMs) {
      await catchUp();
      return index.due(nowMs);
    },
    async approved() {
      await catchUp();
      return index.approved();
    },
    async unfinished() {
      await catchUp();
      const out = index.unfinished();
      for (const id of index.repaired()) {
        if (await repairChainSeen(projection, id, effectIdOf)) projection.repairSettled(id);
        else out.push(id);
      }
      return out;
    },
  };
}

/** True when the chain of the repair that closed `effectId` has an entry; unsure counts as not seen. */
async function repairChainSeen(projection: WorkSource, effectId: string, effectIdOf: (request: InboxRequest) => string): Promise<boolean> {
  const summary = projection.chains.get(effectId);
  const child = summary ? repairChildOf(summary.request, summary.closedBy) : null;
  if (!child) return false;
  let childId: string;
  try {
    childId = effectIdOf(child);
  } catch {
    return false;
  }
  return projection.hasChain(childId);
}
