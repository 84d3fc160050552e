import type { Scoreboard } from '../../shared/api.ts';
import type { Decided, Entry, Escalated } from '../../shared/entries.ts';

export type { DecisionTimes, Scoreboard } from '../../shared/api.ts';
export type { ChainFigures } from './chain-figures.ts';
import type { ChainFigures } from './chain-figures.ts';
import { isJsonObject, type Json } from '../../shared/json.ts';
import type { ChainState } from '../../shared/api.ts';
import { statusRank } from '../journal/confirmations.ts';
import { approvalsRequired, closesDispatch } from '../journal/chain.ts';
import { owesEscalation } from '../inbox/state.ts';
import { ChainCheck } from '../receipts/verify.ts';
import { isWithin, type ReadBound } from '../access/rules.ts';
import { amountOf, chainMoney, currencyOf, laterCurrencyOf, STALE_CODES } from './money.ts';
import { sumFigures } from './board-sum.ts';
import { UNKNOWN_CURRENCY } from '../../shared/money.ts';

/** Reasons that mean a person caught an approval that had gone stale. */
export const STALE_REASONS: ReadonlySet<string> = new Set(['stale_premise', 'approval_expired', 'approver_removed']);
/** Reasons that come from a crash (target_error is a definite answer, not a crash). */
export const CRASH_REASONS: ReadonlySet<string> = new Set(['ambiguous', 'stale_premise_at_recovery', 'lease_at_recovery']);

/** Who accepted the repair a child request carries out, keyed by `repairKey`. */
export type Repairers = ReadonlyMap<string, string>;

/** The key of a request for the repairer map: its agent (if any) and id. */
export function repairKey(agent: unknown, requestId: unknown): string {
  return `${String(agent ?? '')}/${String(requestId)}`;
}

/** A repair a person accepted: the child request's key and who accepted it. */
export interface AcceptedRepair {
  key: string;
  by: string;
}

/**
 * One chain's figures, kept up to date entry by entry in journal order. Only what the figures
 * still need is kept (counts, flags, the open trip, a streaming verification while the chain can
 * still be cleared), never the entries, so a projection can hold one per chain.
 */
export class ChainTally {
  /** Whether the chain is the inbox's: its first entry is a PROPOSED by it. */
  readonly owned: boolean;
  readonly root: boolean;
  readonly requestedAtMs: number | null;
  /** For a repair child, its key in the repairer map; null for a root. */
  readonly repairChildKey: string | null;
  /** The agent of the chain's request: the repairs it accepts are for that agent's requests. */
  readonly #agent: unknown;
  #currency: string;
  readonly #amountMinor: number;
  #check: ChainCheck | null;
  // Lists stay null until the chain has something to put in them: most chains never do.
  #groups: string[] | null = null;
  #dispatches = 0;
  #dispatchesByPolicy = true;
  #lastSendLease: Json | undefined = undefined;
  #committed = false;
  #sentAfterPerson = false;
  #standing: string | null = null;
  #escalated = false;
  // Trips to a person (see `push`).
  #sinceMs: number | null = null;
  #approvedEarlier = false;
  #decisions = 0;
  #firstDecisionBy: Json | undefined = undefined;
  #firstWaitMs: number | null = null;
  #latestEscalation: string | null = null;
  #answered: Set<string> | null = null;
  /** How many distinct people the latest escalation needs, and who approved it so far (four-eyes). */
  #approvalsRequired = 1;
  #approvers: Set<string> | null = null;
  #rejected = 0;
  #closedByRepair = 0;
  #repairsAccepted = 0;
  #approvedOnFactsNow = 0;
  #staleCaught = 0;
  #crashToPerson = 0;
  #repairsSuggested = 0;
  #reasons: string[] | null = null;
  #reasonGroups: string[] | null = null;
  #breachesByGroup: Record<string, number> | null = null;
  #breachesMissedByGroup: Record<string, number> | null = null;
  #laterWaitsMs: number[] | null = null;
  // Where the chain stands (chainState, kept entry by entry) and what its money did.
  #lastGroup: string | null = null;
  #openDispatch = false;
  #owesEscalation = false;
  #closed = false;
  #refusedStale = false;
  #refusedForGood = false;
  /** Bound with no facts (a request that waited its turn for Stripe), and how many entries the chain has so far. */
  readonly #boundWithoutFacts: boolean;
  #entries = 0;

  /**
   * Start a chain from its first entry (which `push` is then given like every other). Entries
   * are taken as a journal read gives them, their hashes checked; `rehash` checks them again.
   */
  constructor(first: Entry, inboxName: string, options: { rehash?: boolean } = {}) {
    const proposed = first.kind === 'PROPOSED' ? first : null;
    const request = proposed?.request ?? null;
    this.#agent = request?.agent;
    this.owned = proposed?.agent === inboxName;
    this.root = request === null || request.repair_of === undefined;
    this.requestedAtMs = proposed?.at_ms ?? null;
    this.#currency = currencyOf(first);
    this.#amountMinor = amountOf(first);
    this.#boundWithoutFacts = proposed !== null && proposed.lease === null && proposed.premises === null;
    this.repairChildKey = request?.repair_of === undefined ? null : repairKey(request.agent, request.id);
    this.#check = this.owned && this.root ? new ChainCheck(first.effect_id, options) : null;
  }

  /** Take the chain's next entry; returns the repair it accepts, if it is a repair decision. */
  push(entry: Entry): AcceptedRepair | null {
    if (!this.owned) return entry.kind === 'DECIDED' ? this.#acceptedRepair(entry) : null;
    this.#check?.push(entry);
    this.#entries += 1;
    this.#follow(entry);
    if (entry.kind === 'DISPATCHED') {
      this.#dispatches += 1;
      const lease = entry.lease;
      if (!isJsonObject(lease) || lease.by !== 'policy') {
        this.#dispatchesByPolicy = false;
        // A chain that can no longer be cleared needs no verification.
        this.#check = null;
      }
      if (!this.#committed) this.#lastSendLease = lease;
    } else if (entry.kind === 'COMMITTED') {
      if (this.#committed) return null;
      this.#committed = true;
      const lease = this.#lastSendLease;
      this.#sentAfterPerson = isJsonObject(lease) && lease.by !== 'policy';
      this.#lastSendLease = undefined;
    } else if (entry.kind === 'CONFIRMED') {
      // finalStatus, one status at a time: the highest rank stands, the latest among equals.
      const status = entry.status;
      if (this.#standing === null || statusRank(status) >= statusRank(this.#standing)) this.#standing = status;
    } else if (entry.kind === 'ESCALATED') {
      this.#check = null;
      this.#escalate(entry);
    } else if (entry.kind === 'DECIDED') {
      this.#decide(entry);
      return this.#acceptedRepair(entry);
    }
    return null;
  }

  /** Keep what `chainState` and the money figures need: open dispatch, owed escalation, closing decision, stale refusals. */
  #follow(entry: Entry): void {
    // A request that waited its turn was bound with no facts: its currency is the one read at its turn.
    if (this.#currency === UNKNOWN_CURRENCY) this.#currency = laterCurrencyOf(entry);
    if (entry.kind === 'DISPATCHED') this.#openDispatch = true;
    else if (closesDispatch(entry)) this.#openDispatch = false;
    if (owesEscalation(entry)) this.#owesEscalation = true;
    if (entry.kind === 'REFUSED' && STALE_CODES.has(entry.code)) this.#refusedStale = true;
    if (entry.kind === 'REFUSED' && entry.code === 'payment_missing') this.#refusedForGood = true;
    if (entry.kind === 'DECIDED') {
      // The first decision on the latest escalation starts the window in which the chain can owe one again.
      if (entry.escalation === this.#latestEscalation && !(this.#answered?.has(entry.escalation) ?? false)) this.#owesEscalation = false;
      // #decide has run: an approval short of the count left the escalation open, and decided nothing.
      if (entry.decision !== 'approve') this.#closed = true;
    }
  }

  /** Where the chain stands, as `chainState` reads it from the whole chain. */
  #state(): ChainState {
    if (this.#openDispatch) return 'SENDING';
    if (this.#committed) return 'DONE';
    if (this.#closed) return 'CLOSED';
    const latest = this.#latestEscalation;
    if (latest !== null && !(this.#answered?.has(latest) ?? false)) return 'ESCALATED';
    if (this.#owesEscalation) return 'NEEDS_ESCALATION';
    return latest === null ? 'NEW' : 'APPROVED';
  }

  #acceptedRepair(entry: Decided): AcceptedRepair | null {
    if (entry.decision !== 'repair' || entry.repair === null) return null;
    return { key: repairKey(this.#agent, entry.repair.request_id), by: entry.by };
  }

  /**
   * Trips to a person: an escalation while none is open starts one (its reason is counted once);
   * more escalations before a decision are the same item shown again (an SLA move, a re-shown
   * repair) and only count breaches; a decision ends it and its wait is measured on `at_ms`.
   */
  #escalate(e: Escalated): void {
    const group = e.group;
    this.#escalated = true;
    this.#latestEscalation = e.hash;
    this.#approvalsRequired = approvalsRequired(e);
    this.#approvers = null;
    this.#groups ??= [];
    if (!this.#groups.includes(group)) this.#groups.push(group);
    if (e.breach) {
      this.#breachesByGroup ??= {};
      this.#breachesByGroup[group] = (this.#breachesByGroup[group] ?? 0) + 1;
      // The deadline that passed was the one of the escalation before: its group missed it.
      const missedBy = this.#lastGroup ?? group;
      this.#breachesMissedByGroup ??= {};
      this.#breachesMissedByGroup[missedBy] = (this.#breachesMissedByGroup[missedBy] ?? 0) + 1;
    }
    this.#lastGroup = group;
    if (this.#sinceMs !== null) return;
    this.#sinceMs = e.at_ms;
    const reason = e.reason;
    this.#reasons ??= [];
    this.#reasons.push(reason);
    this.#reasonGroups ??= [];
    this.#reasonGroups.push(group);
    if (STALE_REASONS.has(reason) && this.#approvedEarlier) this.#staleCaught += 1;
    if (CRASH_REASONS.has(reason)) this.#crashToPerson += 1;
    if (e.repairs.length > 0) this.#repairsSuggested += 1;
  }

  #decide(e: Decided): void {
    // An approval short of the count its escalation needs answers nothing: no decision yet, the wait goes on.
    if (e.decision === 'approve' && e.escalation === this.#latestEscalation && this.#approvalsRequired > 1) {
      this.#approvers ??= new Set();
      this.#approvers.add(e.by);
      if (this.#approvers.size < this.#approvalsRequired) return;
    }
    this.#answered ??= new Set();
    this.#answered.add(e.escalation);
    if (e.decision === 'approve') this.#approvedEarlier = true;
    if (e.decision === 'reject') this.#rejected += 1;
    if (e.decision === 'repair') this.#closedByRepair += 1;
    // An approval that took the same refund on the facts now is an approval: it replaced nothing.
    if (e.decision === 'repair' && e.repair !== null) this.#repairsAccepted += 1;
    if (e.decision === 'approve' && e.repair !== null) this.#approvedOnFactsNow += 1;
    const waitMs = this.#sinceMs === null ? null : e.at_ms - this.#sinceMs;
    // The first decision's wait is kept apart: whether anybody waited depends on who accepted the repair.
    if (this.#decisions === 0) {
      this.#firstDecisionBy = e.by;
      this.#firstWaitMs = waitMs;
    } else if (waitMs !== null) {
      this.#laterWaitsMs ??= [];
      this.#laterWaitsMs.push(waitMs);
    }
    this.#decisions += 1;
    this.#sinceMs = null;
  }

  /** The agent of the chain's request (the key of the repairs it accepts). */
  get agent(): unknown {
    return this.#agent;
  }

  /** True when no ordinary later entry moves the figures: closed by a decision, or sent and confirmed for good. */
  get settled(): boolean {
    const state = this.#state();
    return state === 'CLOSED' || (state === 'DONE' && this.#standing !== null && statusRank(this.#standing) > 0);
  }

  /**
   * Who made the first decision, when it ended a wait (the first of `figures(new Map())`'s
   * waits): a repair child's first wait is nobody's when that same person accepted the repair.
   */
  get firstWaitDecidedBy(): string | null {
    return this.#firstWaitMs !== null && typeof this.#firstDecisionBy === 'string' ? this.#firstDecisionBy : null;
  }

  /** The chain's figures, or null when it is not the inbox's. */
  figures(repairers: Repairers): ChainFigures | null {
    if (!this.owned) return null;
    const repairer = this.repairChildKey === null ? undefined : repairers.get(this.repairChildKey);
    // A repair child approved at once by the person who accepted the repair: nobody waited.
    const approvedAtOnce = repairer !== undefined && this.#firstDecisionBy === repairer;
    const waitsMs = this.#firstWaitMs === null || approvedAtOnce ? [] : [this.#firstWaitMs];
    if (this.#laterWaitsMs !== null) waitsMs.push(...this.#laterWaitsMs);
    const cleared = this.root && this.#committed && !this.#escalated && this.#dispatches > 0 && this.#dispatchesByPolicy;
    const latest = this.#latestEscalation;
    return {
      requestedAtMs: this.requestedAtMs,
      groups: this.#groups === null ? [] : [...this.#groups],
      root: this.root,
      cleared,
      clearedVerified: cleared && this.#check?.valid === true,
      sentAfterPerson: this.#sentAfterPerson,
      committed: this.#committed,
      rejected: this.#rejected,
      closedByRepair: this.#closedByRepair,
      repairsAccepted: this.#repairsAccepted,
      approvedOnFactsNow: this.#approvedOnFactsNow,
      staleCaught: this.#staleCaught,
      crashToPerson: this.#crashToPerson,
      repairsSuggested: this.#repairsSuggested,
      open: latest !== null && !(this.#answered?.has(latest) ?? false),
      escalated: this.#escalated,
      reasons: this.#reasons === null ? [] : [...this.#reasons],
      reasonGroups: this.#reasonGroups === null ? [] : [...this.#reasonGroups],
      breachesByGroup: { ...this.#breachesByGroup },
      breachesMissedByGroup: { ...this.#breachesMissedByGroup },
      confirmed: this.#standing === 'succeeded',
      waitsMs,
      currency: this.#currency,
      money: chainMoney({
        amountMinor: this.#amountMinor,
        state: this.#state(),
        committed: this.#committed,
        cleared,
        repaired: !this.root,
        rejected: this.#rejected > 0,
        refusedStale: this.#refusedStale,
        failedAtStripe: this.#committed && (this.#standing === 'failed' || this.#standing === 'canceled'),
        refusedForGood: this.#refusedForGood,
        // As `waitsItsTurn` reads the chain: its binding alone, with no facts.
        waitingTurn: this.#boundWithoutFacts && this.#entries === 1,
      }),
    };
  }
}

/** The figures of one whole chain owned by `inboxName`, or null when the chain is not the inbox's. */
export function chainFigures(chain: readonly Entry[], inboxName: string, repairers: Repairers = new Map()): ChainFigures | null {
  const first = chain[0];
  if (first === undefined) return null;
  const tally = new ChainTally(first, inboxName);
  for (const entry of chain) tally.push(entry);
  return tally.figures(repairers);
}

/**
 * A slice of the board: requests made in a time range (application clock), or routed to one
 * group, within what the reader may read (`within`: an approver's own groups).
 */
export interface BoardFilter extends ReadBound {
  fromMs?: number;
  toMs?: number;
  group?: string;
}

/** True when a chain is in the slice: requested in the range, routed to the group, and one the reader may read. */
export function inSlice(f: ChainFigures, filter: BoardFilter): boolean {
  return (
    (filter.fromMs === undefined || (f.requestedAtMs !== null && f.requestedAtMs >= filter.fromMs)) &&
    (filter.toMs === undefined || (f.requestedAtMs !== null && f.requestedAtMs < filter.toMs)) &&
    (filter.group === undefined || f.groups.includes(filter.group)) &&
    isWithin(filter, f.groups)
  );
}

/**
 * The scoreboard of an inbox over a whole journal (or a slice of it), computed from scratch. The
 * entries are taken as the journal's reads give them, each hash checked; entries from anywhere
 * else need `rehash`, so that an altered one is not counted as verified.
 */
export function computeScoreboard(entries: Iterable<Entry>, inboxName: string, options: { rehash?: boolean; filter?: BoardFilter } = {}): Scoreboard {
  const chains = new Map<string, Entry[]>();
  for (const entry of entries) {
    const chain = chains.get(entry.effect_id);
    if (chain === undefined) chains.set(entry.effect_id, [entry]);
    else chain.push(entry);
  }
  const all = figuresOfChains(chains.values(), inboxName, options);
  const filter = options.filter;
  if (filter === undefined) return sumFigures(all);
  return sumFigures([...all].filter((f) => inSlice(f, filter)));
}

/**
 * Each chain's figures, one chain at a time, so that nothing but the chains outlives its step. A
 * repair child waits for the end: whether its first decision was waited for depends on who
 * accepted the repair, which a later chain may record.
 */
function* figuresOfChains(chains: Iterable<Entry[]>, inboxName: string, options: { rehash?: boolean }): Generator<ChainFigures> {
  const repairers = new Map<string, string>();
  const children: ChainTally[] = [];
  for (const chain of chains) {
    const tally = new ChainTally(chain[0]!, inboxName, options);
    for (const entry of chain) {
      const repair = tally.push(entry);
      if (repair !== null) repairers.set(repair.key, repair.by);
    }
    if (tally.repairChildKey !== null) children.push(tally);
    else {
      const f = tally.figures(repairers);
      if (f !== null) yield f;
    }
  }
  for (const tally of children) {
    const f = tally.figures(repairers);
    if (f !== null) yield f;
  }
}
