import { isRefundRequest } from '../../shared/api.ts';
import type { Change, Decided, Entry, Escalated, Repair } from '../../shared/entries.ts';
import { type JsonObject, jsonEqual, plain } from '../../shared/json.ts';
import { refused, type Status } from '../../shared/statuses.ts';
import { allOf, approvalsOf, approvalsRequired, closingDecision, latestEscalation } from '../journal/chain.ts';
import type { ChainCheck } from '../journal/store.ts';
import { type Approver, type Beneficiary, beneficiaryMatch, decideApproval } from './approvals.ts';
import { POLICY } from '../gate/leases.ts';
import { diffFacts } from '../gate/premises.ts';
import { InboxCore, type InboxRequest } from './core.ts';
import { decisionPrecondition } from './decide.ts';
import { changesSinceAsked, decisionRecord, type DecisionFields, escalationRecord } from './escalation.ts';
import { boundRequest, chainState, ownedBy, refusedMissingPayment, repairChildOf, waitsItsTurn } from './state.ts';

export type { InboxOptions, InboxPolicy, InboxRequest, Route } from './core.ts';

/** Options for a person's decision. */
export interface DecideOptions {
  /** The escalation hash the person saw; a decision on anything else is SUPERSEDED. */
  seen?: string;
  /** Send at once (the default), or only record the approval for `executeApproved`. */
  execute?: boolean;
}

/** What a rejection takes: the escalation seen, and why, in the person's words. */
export interface RejectOptions {
  seen?: string;
  /** 1 to 500 characters after trimming; the HTTP layer checks it, the journal keeps it as given (trimmed). */
  reason?: string | null;
}

type Pending = { chain: Entry[]; escalation: Escalated };

/** The reason of an item whose send may or may not have happened: it can only be closed, never re-shown. */
const AMBIGUOUS_REASON = 'ambiguous';

/**
 * The inbox with people's decisions and restart handling: approve, reject, repair, execute
 * (inbox §8, §9, §11) and refresh, reconcile (§13).
 */
export class Inbox extends InboxCore {
  /** The preconditions every decision shares, in the spec's order; a status string when refused. */
  private async pending(effectId: string, by: string, seen: string | undefined, action: 'approve' | 'reject' | 'repair'): Promise<Pending | Status> {
    if (by === POLICY) throw new Error('nobody may decide as policy');
    const chain = await this.journal.entries(effectId);
    const decided = decisionPrecondition(chain, by, seen, action, (group) => this.options.authority.members(group));
    if (typeof decided === 'string') return decided;
    const { escalation } = decided;
    return { chain, escalation };
  }

  private async record(
    effectId: string,
    escalation: Escalated,
    by: string,
    decision: DecisionFields['decision'],
    repair: DecisionFields['repair'],
    landedCheck = false,
    reason: string | null = null,
    alsoCheck: ChainCheck | null = null,
  ): Promise<Entry | Status> {
    const fields = decisionRecord({
      at_ms: this.options.nowMs(),
      by,
      decision,
      escalation: escalation.hash,
      group: escalation.group,
      members: this.membersOf(escalation.group),
      repair,
      reason,
    });
    const unanswered = this.unanswered(escalation, landedCheck);
    const check: ChainCheck = alsoCheck === null ? unanswered : (c) => unanswered(c) ?? alsoCheck(c);
    const written = await this.journal.appendIf('DECIDED', effectId, check, fields);
    return written.entry ?? decisionBlocked(written.blocker);
  }

  /**
   * A person approves what they saw; by default it is sent at once under their approval. The
   * refund's beneficiary never approves it; on an escalation that needs two approvers the first
   * approval is recorded (PARTLY_APPROVED) and the second, by another person, completes it.
   */
  async approve(effectId: string, by: string, options: DecideOptions = {}): Promise<Status> {
    const pending = await this.pending(effectId, by, options.seen, 'approve');
    if (typeof pending === 'string') return pending;
    return this.approvePending(effectId, pending, by, null, options);
  }

  /** Record an approval (or a repair that is one) of a pending escalation under the four-eyes and beneficiary rules. */
  private async approvePending(effectId: string, pending: Pending, by: string, repair: DecisionFields['repair'], options: DecideOptions): Promise<Status> {
    const { chain, escalation } = pending;
    const request = boundRequest(chain);
    const step = decideApproval(chain, escalation, this.approverOf(by), await this.beneficiaryOf(effectId, request));
    if (step.next === 'refuse') return refused(step.code);
    if (step.completes && step.count > 1) {
      // An earlier approval that lapsed (expired, or its approver left the group) no longer counts:
      // the item is shown again, saying why, and the count starts again on what it shows.
      const lapsedApproval = approvalsOf(chain, escalation).find((a) => this.options.authority.problem(personLease(a, escalation)) !== null);
      if (lapsedApproval && request) return this.reshowAfterLapse(effectId, escalation, request);
    }
    const decided = await this.record(effectId, escalation, by, 'approve', repair, false, null, notApprovedBy(by, escalation));
    if (typeof decided === 'string') return decided;
    // Another person's approval may have landed between the read and this write: whether this one
    // completed the count is what the journal says now, not what the chain read before it said.
    const completes = step.completes || latestEscalation(await this.journal.entries(effectId)).decision?.hash === decided.hash;
    if (!completes) return 'PARTLY_APPROVED';
    return options.execute === false ? 'APPROVED' : this.execute(effectId, escalation.hash);
  }

  /** Who a request's refund benefits: the person it names, and the payment's customer email. */
  private async beneficiaryOf(effectId: string, request: InboxRequest | null): Promise<Beneficiary> {
    return {
      onBehalfOf: typeof request?.on_behalf_of === 'string' ? request.on_behalf_of : null,
      customerEmail: request && this.options.customerEmail ? await this.options.customerEmail(effectId, request) : null,
    };
  }

  /** A person who decides, with every email the config knows them by. */
  private approverOf(by: string): Approver {
    return { name: by, emails: this.options.emailsOf?.(by) ?? [] };
  }

  /** An earlier approval lapsed: show the item again on facts read now, so every approval counts afresh. */
  private async reshowAfterLapse(effectId: string, escalation: Escalated, request: InboxRequest): Promise<Status> {
    const facts = await this.capturePlain(request);
    const written = await this.showAgain(effectId, escalation, facts, diffFacts(escalation.facts, facts), jsonEqual(facts, escalation.facts) ? escalation.repairs : []);
    return written.entry ? 'SUPERSEDED' : decisionBlocked(written.blocker);
  }

  /** A person refuses it for good; this is also how an ambiguous item is closed. */
  async reject(effectId: string, by: string, options: RejectOptions = {}): Promise<Status> {
    const pending = await this.pending(effectId, by, options.seen, 'reject');
    if (typeof pending === 'string') return pending;
    const reason = options.reason?.trim() || null;
    const decided = await this.record(effectId, pending.escalation, by, 'reject', null, false, reason);
    return typeof decided === 'string' ? decided : 'REJECTED';
  }

  /**
   * Send an approved item under the approval recorded in the journal, on the facts the approver
   * saw. Anything but an approval of the latest escalation (or of `expected`) is SUPERSEDED.
   */
  async execute(effectId: string, expected?: string): Promise<Status> {
    return this.executeRead(effectId, await this.journal.entries(effectId), expected);
  }

  /** `execute` on a chain just read from the journal. */
  private async executeRead(effectId: string, chain: readonly Entry[], expected?: string): Promise<Status> {
    const state = chainState(chain);
    if (state === 'NEEDS_ESCALATION') await this.escalateOwed(effectId, chain);
    const { escalation, decision } = latestEscalation(chain);
    if (state !== 'APPROVED' || !escalation || !decision || (expected !== undefined && escalation.hash !== expected)) return 'SUPERSEDED';
    const request = boundRequest(chain);
    if (!request) throw new Error(`approved chain ${effectId} has no bound request`);
    return this.send(request, sendLease(chain, escalation, decision), escalation.facts);
  }

  /** Send every recorded approval not yet sent, once each. */
  async executeApproved(): Promise<Map<string, Status>> {
    return this.sweep('execute', async (effectId, chain) => (chainState(chain) === 'APPROVED' ? this.executeRead(effectId, chain) : null));
  }

  /**
   * Approvals that lapsed because their approver left the group (a config reload): each is put
   * through the gate now, which refuses it on the lease before anything reaches Stripe, and the
   * item goes back in front of people with reason `approver_removed` (inbox §7.3). Approvals
   * still live are left for `executeApproved`. Returns what each lapsed one came to.
   */
  async lapseRemovedApprovals(): Promise<Map<string, Status>> {
    return this.sweep('execute', async (effectId, chain) => {
      if (chainState(chain) !== 'APPROVED') return null;
      const { escalation, decision } = latestEscalation(chain);
      if (!escalation || !decision) return null;
      // Judged as the send would judge it: a four-eyes item lapses when either approver left.
      if (this.options.authority.problem(sendLease(chain, escalation, decision)) !== 'approver_removed') return null;
      return this.executeRead(effectId, chain);
    });
  }

  /**
   * Accept a repair suggestion (inbox §11). The same payload is an approval on the new facts; a
   * new payload is a new request with its own effect id, which closes the original for good.
   */
  async repair(effectId: string, by: string, index: number, options: DecideOptions = {}): Promise<Status> {
    const pending = await this.pending(effectId, by, options.seen, 'repair');
    if (typeof pending === 'string') return pending;
    const { chain, escalation } = pending;
    const suggestion = Number.isSafeInteger(index) && index >= 0 ? escalation.repairs[index] : undefined;
    const bound = boundRequest(chain);
    if (!suggestion || !bound) return 'REFUSED:no_repair';
    // Accepting a repair sends a refund as surely as an approval does: never by the person it benefits.
    if (beneficiaryMatch(this.approverOf(by), await this.beneficiaryOf(effectId, bound)) !== null) return refused('beneficiary');
    const set: JsonObject = { ...suggestion.set };
    // The same payload, decided again: an approval, under the same rules as any other.
    if (Object.keys(set).length === 0) return this.approvePending(effectId, pending, by, { code: suggestion.code, set: {}, request_id: bound.id }, options);
    const child = plain({ ...bound, ...set, id: childIdFor(bound.id, escalation.hash), repair_of: bound.id });
    if (!isRefundRequest(child)) return 'REFUSED:repair_not_expressible';
    if (!jsonEqual(this.options.effectOf(child), plain({ ...this.options.effectOf(bound), ...set }))) return 'REFUSED:repair_not_expressible';
    // The child's chain must be new, or already bound to exactly this child (a restart finishing
    // the same repair). Anything else bound there was never shown to this person.
    if (!this.childChainIsOurs(await this.journal.entries(this.effectIdOf(child)), child)) return 'REFUSED:repair_not_expressible';
    const facts = await this.capturePlain(child);
    if (!jsonEqual(facts, escalation.facts)) return this.reshowWithoutRepairs(effectId, escalation, facts);
    const decided = await this.record(effectId, escalation, by, 'repair', { code: suggestion.code, set, request_id: child.id }, true);
    if (typeof decided === 'string') return decided;
    const status = await this.submit(child, facts);
    if (status !== 'QUEUED') return status;
    const childChain = await this.journal.entries(this.effectIdOf(child));
    const childEscalation = latestEscalation(childChain).escalation;
    if (childEscalation && this.childChainIsOurs(childChain, child) && this.options.authority.members(childEscalation.group).includes(by)) {
      return this.approve(this.effectIdOf(child), by, { seen: childEscalation.hash, ...(options.execute === undefined ? {} : { execute: options.execute }) });
    }
    return status;
  }

  /** True when a repair child's chain is empty or bound to exactly this child request. */
  private childChainIsOurs(chain: readonly Entry[], child: InboxRequest): boolean {
    if (chain.length === 0) return true;
    const bound = boundRequest(chain);
    return bound !== null && jsonEqual(bound, plain(child));
  }

  /** The world moved since the suggestion: show the item again on the new facts, with no repairs. */
  private async reshowWithoutRepairs(effectId: string, escalation: Escalated, facts: JsonObject): Promise<Status> {
    const written = await this.showAgain(effectId, escalation, facts, diffFacts(escalation.facts, facts), []);
    return written.entry ? 'SUPERSEDED' : decisionBlocked(written.blocker);
  }

  /**
   * The payment moved under an open item before anyone decided it (a refund by hand, a dispute):
   * show it again on facts read now, with what changed since the request and the repairs that
   * fit, so the repair is offered before anyone approves. The facts are read as a decision reads
   * them (the gate's own premise check, then the inbox's capture), never taken from a display
   * cache. Same group, level and deadline: the SLA clock runs on, and it is the same trip to a
   * person, not a new escalation or breach. Written only while that escalation is the latest and
   * unanswered, and only when the world differs from what it shows, so each change is shown once.
   * An ambiguous item is never re-shown: it can only be closed. Null when nothing was written.
   */
  async reshowOnNewFacts(effectId: string): Promise<Escalated | null> {
    const chain = await this.journal.entries(effectId);
    if (!ownedBy(chain, this.name) || chainState(chain) !== 'ESCALATED') return null;
    const escalation = latestEscalation(chain).escalation;
    const request = boundRequest(chain);
    if (!escalation || !request || escalation.reason === AMBIGUOUS_REASON) return null;
    // First the check an approval of what it shows would meet: when that passes, nothing moved.
    const effect = this.options.effectOf(request);
    const { target } = this.options.gate;
    const key = target.reservationKey?.(effect) ?? null;
    const reserved = key === null ? null : await this.journal.reservations(key);
    const explained = await target.explain(escalation.facts, effectId, effect, reserved ? { reserved: reserved.open } : {});
    if (explained.violations.length === 0) return null;
    const facts = await this.capturePlain(request);
    if (jsonEqual(facts, escalation.facts)) return null;
    // The repairs hold only for the world they were worked out on (as for an owed escalation).
    const then: JsonObject = { ...escalation.facts };
    for (const change of explained.changes) then[change.field] = change.now;
    const repairs = jsonEqual(facts, then) ? explained.repairs : [];
    const written = await this.showAgain(effectId, escalation, facts, changesSinceAsked(chain, facts), repairs);
    return written.entry;
  }

  /** The same escalation shown again on other facts: its reason, route, group, level and deadline, no breach of its own. */
  private async showAgain(effectId: string, escalation: Escalated, facts: JsonObject, changes: Change[], repairs: Repair[]) {
    const fields = escalationRecord({
      at_ms: this.options.nowMs(),
      reason: escalation.reason,
      why: escalation.why,
      detail: escalation.detail,
      failed_rules: escalation.failed_rules ?? [],
      facts,
      changes,
      repairs,
      route: escalation.route,
      routing: escalation.routing ?? null,
      group: escalation.group,
      routed_to: this.membersOf(escalation.group),
      level: escalation.level,
      due_ms: escalation.due_ms,
      breach: false,
      ...(escalation.approvals_required === undefined ? {} : { approvals_required: escalation.approvals_required }),
    });
    return this.journal.appendIf('ESCALATED', effectId, this.unanswered(escalation), fields);
  }

  /**
   * Finish half-done work from the journal alone (inbox §13.1): owed escalations, bound requests
   * never escalated, repair children decided but never created. Running it twice writes nothing new.
   */
  async refresh(options: { newUntilMs?: number } = {}): Promise<Map<string, Status>> {
    return this.sweep('refresh', async (effectId, chain) => {
      const state = chainState(chain);
      if (state === 'NEEDS_ESCALATION') return (await this.escalateOwed(effectId, chain)) ? 'QUEUED' : null;
      const request = boundRequest(chain);
      // With `newUntilMs`, a request left NEW (its send failed before anything was dispatched) is
      // taken up again only once its last entry is that old on the wall clock: a submit still
      // working on it has finished or failed by then.
      const settled = options.newUntilMs === undefined || (chain.at(-1)?.ts_ms ?? 0) <= options.newUntilMs;
      // A request waiting its turn for Stripe is the turn queue's, in arrival order, never a sweep's.
      if (state === 'NEW' && request && settled && !waitsItsTurn(chain) && !refusedMissingPayment(chain)) return this.submit(request);
      if (state === 'CLOSED') return this.submitRepairChild(chain);
      return null;
    });
  }

  private async submitRepairChild(chain: readonly Entry[]): Promise<Status | null> {
    const decision = closingDecision(chain);
    const child = repairChildOf(boundRequest(chain), decision);
    if (!decision || !child) return null;
    if ((await this.journal.entries(this.effectIdOf(child))).length > 0) return null;
    const repaired = allOf(chain, 'ESCALATED').find((e) => e.hash === decision.escalation);
    return this.submit(child, repaired?.facts);
  }

  /** After gate recovery: every settled refusal or ambiguity of ours gets exactly one escalation (inbox §13.2). */
  async reconcile(recovered: ReadonlyMap<string, Status>): Promise<void> {
    for (const [effectId, status] of recovered) {
      if (status === 'IN_FLIGHT' || status.startsWith('UNRESOLVED')) continue;
      try {
        const chain = await this.journal.entries(effectId);
        if (ownedBy(chain, this.name) && chainState(chain) === 'NEEDS_ESCALATION') await this.escalateOwed(effectId);
      } catch (error) {
        this.options.onError?.(effectId, error);
      }
    }
  }
}

/** A check that refuses a second approval of `escalation` by the same person (a race of their own two clicks). */
function notApprovedBy(by: string, escalation: Escalated): ChainCheck {
  return (chain) => (approvalsOf(chain, escalation).some((a) => a.by === by) ? 'same_approver' : null);
}

/**
 * The lease an approved escalation is sent under: the approval that answered it, and on a
 * four-eyes escalation the earlier approvals too, each of which must still be live at the send.
 */
function sendLease(chain: readonly Entry[], escalation: Escalated, decision: Decided): JsonObject {
  const earlier = approvalsOf(chain, escalation)
    .filter((a) => a.by !== decision.by)
    .map((a) => ({ by: a.by, at_ms: a.at_ms }));
  return {
    by: decision.by,
    at_ms: decision.at_ms,
    group: escalation.group,
    escalation: escalation.hash,
    ...(approvalsRequired(escalation) > 1 ? { co_approvals: earlier } : {}),
  };
}

/** The lease one recorded approval stands for, to ask the authority whether it is still live. */
function personLease(approval: Decided, escalation: Escalated): JsonObject {
  return { by: approval.by, at_ms: approval.at_ms, group: escalation.group, escalation: escalation.hash };
}

/** What a decision's guarded write answers when the escalation moved on or was answered first. */
function decisionBlocked(blocker: string): Status {
  if (blocker === 'same_approver') return refused('same_approver');
  if (blocker === 'SUPERSEDED' || blocker === 'ALREADY_DECIDED') return blocker;
  throw new Error(`unexpected blocker of a decision: ${blocker}`);
}

/** The request id of a repair child: the parent's, the word repair, and the repaired escalation. */
export function childIdFor(parentId: string, escalationHash: string): string {
  return `${parentId}:repair:${escalationHash.slice(0, 8)}`;
}
