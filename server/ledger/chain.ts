import type { Entry } from '../../shared/entries.ts';
import { isJsonObject, type Json } from '../../shared/json.ts';
import type { DeciderKind, LedgerConfirmation, LedgerRow } from '../../shared/ledger.ts';
import type { Status } from '../../shared/statuses.ts';
import { statusRank } from '../journal/confirmations.ts';
import { entryStatus } from '../journal/chain.ts';
import { isPersonLease, isPolicyLease } from '../gate/leases.ts';
import { outcomeOf } from './outcome.ts';
import { approversOf, type ChainSummary, emptySummary, foldEntry, refundOf, statusOf, summaryState } from '../inbox/summary.ts';
import { effectAmountOf } from '../refunds/effect.ts';

/** A person's display name for their login name (the config's, else the login). */
export type DisplayName = (login: string) => string;

/** Who decided, as a row names them. */
interface Decider {
  kind: DeciderKind;
  login: string | null;
  rules: string[];
  atMs: number | null;
}

/**
 * One request's ledger row, folded entry by entry in journal order. Pure: it is given the
 * entries (by the views' follower for the JSON pages, by a streaming read of the store for the
 * CSV), so both are the same function of the same chain. What the inbox already folds (where the
 * chain stands, its decisions, its groups) is folded by the inbox's own `foldEntry`; only what a
 * row adds is kept beside it.
 */
export class LedgerChain {
  readonly #summary: ChainSummary;
  #requestedAtMs: number | null = null;
  #currency: string | null = null;
  /** When the policy cleared it: `at_ms` of the latest PROPOSED under the policy lease. */
  #policyAtMs: number | null = null;
  #dispatchedCents: number | null = null;
  /** The confirmation that stands (highest rank, latest among equals) and how it came. */
  #standing: string | null = null;
  #standingVia: string | null = null;
  /** The latest refusal or ambiguity that explains the chain to its agent (`explainChain`'s). */
  #explaining: Entry | null = null;
  /** Refused for good with nobody asked: Stripe knows no such payment. */
  #refusedForGood = false;
  /** While a send is under way: the status the chain stood at when it began; null otherwise. */
  #sentFrom: Status | null = null;

  private constructor(
    readonly effectId: string,
    /** The journal seq of the chain's first entry: the ledger's order and its cursor. */
    readonly headSeq: number,
  ) {
    this.#summary = emptySummary(effectId);
  }

  /** A chain starting at `first` (its first entry), when it is one of the inbox's requests; null otherwise. */
  static start(first: Entry, headSeq: number, inboxName: string): LedgerChain | null {
    if (first.kind !== 'PROPOSED' || first.prev !== null || first.agent !== inboxName) return null;
    const chain = new LedgerChain(first.effect_id, headSeq);
    chain.push(first);
    return chain;
  }

  /** Take the chain's next entry. */
  push(entry: Entry): void {
    const sendBegins = entry.kind === 'DISPATCHED' && !this.#summary.openDispatch;
    const stood = sendBegins ? this.status() : null;
    foldEntry(this.#summary, entry);
    if (!this.#summary.openDispatch) this.#sentFrom = null;
    else if (sendBegins) this.#sentFrom = stood;
    switch (entry.kind) {
      case 'PROPOSED':
        if (this.#requestedAtMs === null && entry.request !== undefined) this.#requestedAtMs = entry.at_ms ?? null;
        this.#currency ??= currencyOf(entry.premises);
        if (isPolicyLease(entry.lease)) this.#policyAtMs = entry.at_ms ?? null;
        break;
      case 'DISPATCHED':
        this.#currency ??= currencyOf(entry.premises);
        this.#dispatchedCents = effectAmountOf(entry.effect);
        break;
      case 'ESCALATED':
        // A request that waited its turn for Stripe was bound with no facts; the facts read at its
        // turn are the ones a person is shown.
        this.#currency ??= currencyOf(entry.facts);
        break;
      case 'REFUSED':
        if (!NOT_EXPLAINING.has(entry.code)) this.#explaining = entry;
        if (entry.code === 'payment_missing') this.#refusedForGood = true;
        break;
      case 'AMBIGUOUS':
        this.#explaining = entry;
        break;
      case 'CONFIRMED':
        // finalStatus, one status at a time, keeping how the standing one came.
        if (this.#standing === null || statusRank(entry.status) >= statusRank(this.#standing)) {
          this.#standing = entry.status;
          this.#standingVia = entry.via;
        }
        break;
      default:
        break;
    }
  }

  /** The row as it stands, or null for a chain with no request bound (nothing to show). */
  row(displayName: DisplayName): LedgerRow | null {
    const s = this.#summary;
    const request = s.request;
    if (request === null) return null;
    const decider = this.#decider();
    const committed = s.committed;
    const sentCents = committed === null ? null : (resultCents(committed.result) ?? this.#dispatchedCents);
    const confirmation = this.#confirmation();
    // A refund Stripe failed (or canceled) returned nothing: it is not money refunded, but its own figure.
    const failed = FAILED_AT_STRIPE.has(confirmation);
    return {
      request_id: request.id,
      agent: request.agent,
      payment_intent: request.payment_intent,
      amount_asked_minor: request.amount,
      amount_sent_minor: failed ? null : sentCents,
      currency: this.#currency,
      status: this.status(),
      decided_by_kind: decider?.kind ?? null,
      decided_by: decider === null ? null : decider.login === null ? 'policy' : displayName(decider.login),
      decided_by_login: decider?.login ?? null,
      policy_rules: decider?.rules ?? [],
      decided_at_ms: decider?.atMs ?? null,
      refund_id: committed === null ? null : refundOf(committed),
      confirmation,
      confirmed_via: committed === null ? null : this.#standingVia,
      effect_id: this.effectId,
      receipt_url: `/api/ledger/${this.effectId}/receipt`,
      requested_at_ms: this.#requestedAtMs,
      groups: [...s.groups],
      repair_of: request.repair_of ?? null,
      amount_failed_minor: failed ? sentCents : null,
      outcome: outcomeOf({
        sending: s.openDispatch,
        committed: committed !== null,
        failedAtStripe: failed,
        ambiguous: s.ambiguous,
        closing: s.closedBy?.decision ?? null,
        refusedForGood: this.#refusedForGood,
      }),
      reject_reason: s.closedBy?.decision === 'reject' ? (s.closedBy.reason ?? null) : null,
      approved_by_logins: approversOf(s),
      beneficiary: typeof request.on_behalf_of === 'string' ? request.on_behalf_of : null,
    };
  }

  /** The status the agent is told now: `currentStatus` of the chain, from what was folded. */
  status(): Status {
    const s = this.#summary;
    return statusOf({
      sending: s.openDispatch,
      committed: s.committed,
      ambiguous: s.ambiguous,
      state: summaryState(s),
      refusal: () => (this.#explaining === null ? null : entryStatus(this.#explaining)),
    });
  }

  /**
   * While a send is under way (`IN_FLIGHT`, no outcome yet), the status the chain stood at when it
   * began: what its agent was last told, which a send refused and given back returns to. Null when
   * no send is under way.
   */
  sentFrom(): Status | null {
    return this.#sentFrom;
  }

  /**
   * The decision that stands: the lease a refund was sent (or is being sent) under, else the
   * person's decision that closed it or approved it; null while it waits for one.
   */
  #decider(): Decider | null {
    const s = this.#summary;
    if (s.committed !== null || s.openDispatch) {
      const lease = s.lastDispatchLease;
      if (isPolicyLease(lease)) return { kind: 'policy', login: null, rules: policyRules(lease), atMs: this.#policyAtMs };
      if (isPersonLease(lease)) return { kind: 'person', login: lease.by, rules: [], atMs: lease.at_ms };
    }
    const decision = s.closedBy ?? s.latestDecision;
    return decision === null ? null : { kind: 'person', login: decision.by, rules: [], atMs: decision.at_ms };
  }

  #confirmation(): LedgerConfirmation {
    if (this.#summary.committed === null) return 'not_sent';
    switch (this.#standing) {
      case null:
        return 'unconfirmed';
      case 'succeeded':
      case 'failed':
      case 'canceled':
        return this.#standing;
      default:
        return 'pending';
    }
  }
}

/** Refusals that only say "waiting" or "closed": they never explain a chain to its agent (as `explainChain` skips them). */
const NOT_EXPLAINING: ReadonlySet<string> = new Set(['awaiting_decision', 'closed']);

/** Where Stripe's confirmations say no money went back, as the scoreboard's failed at Stripe counts them. */
const FAILED_AT_STRIPE: ReadonlySet<LedgerConfirmation> = new Set(['failed', 'canceled']);

function currencyOf(premises: Json): string | null {
  return isJsonObject(premises) && typeof premises.currency === 'string' ? premises.currency : null;
}

function resultCents(result: Json | undefined): number | null {
  return result !== undefined && isJsonObject(result) && typeof result.amount === 'number' ? result.amount : null;
}

function policyRules(lease: Json): string[] {
  if (!isJsonObject(lease) || !Array.isArray(lease.rules)) return [];
  return lease.rules.filter((rule): rule is string => typeof rule === 'string');
}
