import type { Entry, Escalated, FailedRule } from '../../shared/entries.ts';
import { failedRulesText } from '../../shared/escalation-words.ts';
import { isJsonObject, type Json, type JsonObject, jsonEqual, plain } from '../../shared/json.ts';
import { type Status, whyFor } from '../../shared/statuses.ts';
import { closingDecision, isOpenDispatch, lastOf, latestEscalation } from '../journal/chain.ts';
import type { Gate } from '../gate/gate.ts';
import type { FreshFacts } from '../gate/target.ts';
import type { ChainCheck, JournalStore } from '../journal/store.ts';
import { type Authority, isPersonLease } from '../gate/leases.ts';
import { escalationRecord, overdueEscalations, owedExplanation } from './escalation.ts';
import { decideInboxSubmit } from './decide.ts';
import { bindingFacts, boundRequest, chainState, ownedBy } from './state.ts';

/** A request as the inbox sees it: any JSON object with an id; a repair child also names its parent. */
export type InboxRequest = JsonObject & { id: string; amount: number; repair_of?: string };

/** The route an item takes: a chain of groups and an SLA per level. */
export interface Route {
  name: string;
  chain: readonly string[];
  slaMs: number | null;
  /** Distinct people who must approve this item (two from the route's amount upwards); one when absent. */
  approvalsRequired?: number;
}

/** The rules and routes an inbox decides with. */
export interface InboxPolicy {
  /** Every rule name, in order: the policy lease names them. */
  ruleNames: readonly string[];
  /** The rules' verdict; each failed rule with its words for people, fixed into the escalation. */
  evaluate(request: InboxRequest, facts: JsonObject): { passed: boolean; failed: FailedRule[] };
  route(item: { request: InboxRequest; facts: JsonObject; reason: string; detail: Json }): Route;
  routeByName(name: string): Route | undefined;
}

/**
 * Which owned chains can need a sweep's step, from what is already known of the journal (each
 * call first catches up with it, so another process's writes count). A narrowing only: each
 * chain named is read from the journal and decided on as read, and a chain left out must be
 * one whose step would do nothing.
 */
export interface InboxWork {
  /** Chains whose open escalation was due at or before `nowMs`. */
  due(nowMs: number): Promise<Iterable<string>>;
  /** Chains with a recorded approval not yet sent. */
  approved(): Promise<Iterable<string>>;
  /** Chains a restart may have left half done: an owed escalation, a bound request never escalated, a repair never created. */
  unfinished(): Promise<Iterable<string>>;
}

/** The work a sweep does, naming which chains it must read. */
export type SweepKind = 'tick' | 'execute' | 'refresh';

/** Everything an inbox needs, injected. */
export interface InboxOptions {
  name: string;
  gate: Gate;
  authority: Authority;
  policy: InboxPolicy;
  /** Read the facts a decision about this request relies on. */
  capture(request: InboxRequest): Promise<JsonObject>;
  /**
   * The same read with the journal position read before it, so a send the rules clear at once can
   * use it as the read before the send (the gate's `fresh`); without it every send reads again.
   */
  captureFresh?(request: InboxRequest): Promise<FreshFacts>;
  /** The payload sent for a request. */
  effectOf(request: InboxRequest): JsonObject;
  /** The key that fixes a request's effect id. */
  requestKeyOf(request: InboxRequest): Json;
  /** The application clock (`at_ms`, SLAs, approval age). */
  nowMs(): number;
  /** The effect ids of chains this inbox may own; scanning the journal when absent (and no `work`). */
  listChains?(): Promise<Iterable<string>>;
  /** Which chains can need a sweep's step; when absent, every chain of `listChains` is read. */
  work?: InboxWork;
  /** Where a failure in one item of a sweep is reported while the others go on. */
  onError?(effectId: string, error: unknown): void;
  /** Every email address the config knows a person by; none when absent. */
  emailsOf?(name: string): readonly string[];
  /** The payment's customer email, as Stripe knows it (a display read, never journaled); null when it names none. */
  customerEmail?(effectId: string, request: InboxRequest): Promise<string | null>;
}

/**
 * The route an escalation was routed with, as copied into it; null for one written before the
 * chain and SLA were copied, which follows its route by name in the config in force.
 */
export function routedWith(escalation: Escalated): Route | null {
  const routing = escalation.routing;
  return routing ? { name: escalation.route, chain: routing.chain, slaMs: routing.sla_ms } : null;
}

/** A sweep's bound on restarts after losing a write race; each restart re-reads the chain. */
const RACE_RETRIES_MAX = 5;

/** Statuses after which recovery owns the effect, so nothing is escalated from the send path. */
function recoveryOwns(status: Status): boolean {
  return status === 'COMMITTED' || status === 'DUPLICATE_IGNORED' || status === 'IN_FLIGHT' || status.startsWith('UNRESOLVED');
}

/**
 * The approval inbox over the gate (inbox §6-13). Every write goes through `appendIf` with a
 * check on the chain's state, so two inboxes, or an inbox and its own restart, never write the
 * same escalation or decision twice. Nothing here trusts a cache: every step re-reads the chain.
 */
export class InboxCore {
  readonly name: string;
  readonly journal: JournalStore;

  constructor(readonly options: InboxOptions) {
    this.name = options.name;
    this.journal = options.gate.journal;
  }

  effectIdOf(request: InboxRequest): string {
    return this.options.gate.effectIdOf({ requestKey: this.options.requestKeyOf(request), effect: this.options.effectOf(request) });
  }

  /** The facts a request's decision relies on, read now, as the journal will hold them. */
  async capturePlain(request: InboxRequest): Promise<JsonObject> {
    const facts = plain(await this.options.capture(request));
    if (!isJsonObject(facts)) throw new TypeError('a capture must read the facts as a JSON object');
    return facts;
  }

  /** The policy lease: every rule passed, named. */
  policyLease(): JsonObject {
    return { by: 'policy', rules: [...this.options.policy.ruleNames] };
  }

  /** Clear it under policy, or bind its payload and put it in front of a person (inbox §6). */
  async submit(request: InboxRequest, givenFacts?: JsonObject, givenFresh?: FreshFacts, httpRequestId?: string): Promise<Status> {
    const asked = httpRequestId === undefined ? {} : { http_request_id: httpRequestId };
    const effectId = this.effectIdOf(request);
    let facts = givenFresh?.facts ?? givenFacts;
    for (let attempt = 0; attempt < RACE_RETRIES_MAX; attempt++) {
      const chain = await this.journal.entries(effectId);
      // Bound to another request (two first requests raced and the other won), nothing of this
      // one is written and the caller answers the conflict; any other state but NEW answers itself.
      const step = decideInboxSubmit(chain, request);
      if (step.next === 'answer') return step.status;
      if (step.next === 'escalate_owed') {
        await this.escalateOwed(effectId, chain);
        return 'QUEUED';
      }
      let fresh: FreshFacts | undefined = attempt === 0 ? givenFresh : undefined;
      if (facts === undefined && bindingFacts(chain) === null && this.options.captureFresh) {
        fresh = await this.freshPlain(request);
        facts = fresh.facts;
      }
      facts ??= bindingFacts(chain) ?? (await this.capturePlain(request));
      const verdict = this.options.policy.evaluate(request, facts);
      if (verdict.passed) return this.send(request, this.policyLease(), facts, fresh, httpRequestId);
      if (chain.length === 0) {
        const bound = await this.journal.appendIf('PROPOSED', effectId, (c) => (c.length > 0 ? 'bound' : null), {
          agent: this.name,
          lease: null,
          premises: facts,
          effect: this.options.effectOf(request),
          request,
          at_ms: this.options.nowMs(),
          ...asked,
        });
        if (bound.blocker !== null) continue;
      }
      if (await this.openEscalation(effectId, request, facts, verdict.failed)) return 'QUEUED';
    }
    throw new Error(`submit of ${effectId} lost ${RACE_RETRIES_MAX} write races in a row`);
  }

  /**
   * The facts a new request is decided on, read now with the journal position before them when the
   * capture can say it (`captureFresh`), so a send the rules clear may use the read; else a plain read.
   */
  async readFresh(request: InboxRequest): Promise<FreshFacts | JsonObject> {
    return this.options.captureFresh ? this.freshPlain(request) : this.capturePlain(request);
  }

  /** `captureFresh`, its facts as the journal will hold them. */
  private async freshPlain(request: InboxRequest): Promise<FreshFacts> {
    const read = await this.options.captureFresh!(request);
    const facts = plain(read.facts);
    if (!isJsonObject(facts)) throw new TypeError('a capture must read the facts as a JSON object');
    return { ...read, facts };
  }

  /** Send through the gate; a refusal that owes a person a look is escalated at once. */
  async send(request: InboxRequest, lease: Json, facts: JsonObject, fresh?: FreshFacts, httpRequestId?: string): Promise<Status> {
    const effectId = this.effectIdOf(request);
    const { status } = await this.options.gate.submit({
      ...(fresh === undefined ? {} : { fresh }),
      agent: this.name,
      lease,
      requestKey: this.options.requestKeyOf(request),
      premises: facts,
      effect: this.options.effectOf(request),
      request,
      atMs: this.options.nowMs(),
      ...(httpRequestId === undefined ? {} : { httpRequestId }),
      recordConflict: false,
    });
    // A conflict means another request owns the chain: whatever it owes is its own sender's to do.
    if (!recoveryOwns(status) && status !== 'REFUSED:conflicting_payload' && chainState(await this.journal.entries(effectId)) === 'NEEDS_ESCALATION') {
      await this.escalateOwed(effectId);
    }
    return status;
  }

  /** Open the escalation a refused or unknowable chain owes (inbox §7). */
  async escalateOwed(effectId: string, read?: readonly Entry[]): Promise<Entry | null> {
    const chain = read ?? (await this.journal.entries(effectId));
    const request = boundRequest(chain);
    if (!request) throw new Error(`chain ${effectId} owes an escalation but has no bound request`);
    return this.openEscalation(effectId, request, undefined, null, chain);
  }

  /**
   * Write one ESCALATED, only if the chain is still in the state this decision was made in: NEW
   * for a rule failure, NEEDS_ESCALATION for a gate refusal. Always at level 0 of the route that
   * matches now, with a fresh deadline. `read` is the chain when the caller has just read it.
   */
  private async openEscalation(
    effectId: string,
    given: InboxRequest,
    givenFacts: JsonObject | undefined,
    failed: FailedRule[] | null,
    read?: readonly Entry[],
  ): Promise<Entry | null> {
    const chain = read ?? (await this.journal.entries(effectId));
    const bound = boundRequest(chain);
    let request = given;
    let facts = givenFacts;
    if (bound && !jsonEqual(bound, plain(given))) {
      request = bound;
      facts = undefined;
    }
    facts ??= await this.capturePlain(request);
    const expected = failed ? 'NEW' : 'NEEDS_ESCALATION';
    // A rule failure is named by its rules (`detail`, what routes read) and worded by them as they
    // ran (`failed_rules`, and `why` their words joined): the journal keeps the words it was shown with.
    const explained = failed
      ? { reason: 'needs_judgment', detail: failed.map((f) => f.rule), changes: [], repairs: [] }
      : owedExplanation(chain, facts, (reason) => this.refine(reason, chain));
    const route = this.options.policy.route({ request, facts, reason: explained.reason, detail: explained.detail });
    const group = route.chain[0]!;
    const atMs = this.options.nowMs();
    const fields = escalationRecord({
      at_ms: atMs,
      reason: explained.reason,
      why: failed && failed.length > 0 ? failedRulesText(failed) : whyFor(explained.reason),
      detail: explained.detail,
      failed_rules: failed ?? [],
      facts,
      changes: explained.changes,
      repairs: explained.repairs,
      route: route.name,
      // The chain and SLA as routed now: a later reload that changes or removes the route moves this item as it was routed.
      routing: { chain: [...route.chain], sla_ms: route.slaMs },
      group,
      routed_to: this.membersOf(group),
      level: 0,
      due_ms: route.slaMs === null ? null : atMs + route.slaMs,
      breach: false,
      approvals_required: route.approvalsRequired ?? 1,
    });
    const written = await this.journal.appendIf('ESCALATED', effectId, (c) => (chainState(c) === expected ? null : 'state_moved'), fields);
    return written.entry;
  }

  /** Why a person's approval lapsed, in the words an approver needs (inbox §7.3). */
  private refine(reason: string, chain: readonly Entry[]): string {
    if (reason !== 'lease') return reason;
    const lease = lastOf(chain, 'PROPOSED')?.lease ?? null;
    if (!isPersonLease(lease)) return reason;
    const problem = this.options.authority.problem(lease);
    return problem === 'approval_expired' || problem === 'approver_removed' ? problem : reason;
  }

  /** Current members of a group, sorted: the snapshot written into entries. */
  membersOf(group: string): string[] {
    return [...this.options.authority.members(group)].sort();
  }

  /** A check that passes only while `escalation` is the latest and unanswered (and, for repairs, nothing may have landed). */
  unanswered(escalation: Entry, repair = false): ChainCheck {
    return (chain) => {
      if (lastOf(chain, 'ESCALATED')?.hash !== escalation.hash) return 'SUPERSEDED';
      // An approval short of the count it needs answers nothing: the escalation stays open.
      const answered = latestEscalation(chain).decision !== undefined;
      if (answered || isOpenDispatch(chain) || closingDecision(chain)) return 'ALREADY_DECIDED';
      if (repair && chain.some((e) => e.kind === 'COMMITTED' || e.kind === 'AMBIGUOUS')) return 'ALREADY_DECIDED';
      return null;
    };
  }

  /** The effect ids of the chains this inbox owns. */
  async ownedChains(): Promise<string[]> {
    const owned: string[] = [];
    for (const id of await this.allChainIds()) if (ownedBy(await this.journal.entries(id), this.name)) owned.push(id);
    return owned;
  }

  private async allChainIds(): Promise<Iterable<string>> {
    return this.options.listChains ? this.options.listChains() : this.scanChainIds();
  }

  private async scanChainIds(): Promise<string[]> {
    const ids = new Set<string>();
    for (let after = 0; ; ) {
      const page = await this.journal.scan(after, 10_000);
      if (page.length === 0) return [...ids];
      for (const { seq, entry } of page) {
        ids.add(entry.effect_id);
        after = seq;
      }
    }
  }

  /** The chains a sweep must read: the ones `work` names, else every chain. */
  private async candidates(kind: SweepKind, nowMs: number): Promise<Iterable<string>> {
    const work = this.options.work;
    if (!work) return this.allChainIds();
    switch (kind) {
      case 'tick':
        return work.due(nowMs);
      case 'execute':
        return work.approved();
      case 'refresh':
        return work.unfinished();
    }
  }

  /**
   * Run a step for every owned chain among the candidates of `kind`, each chain read once and
   * handed to its step; a failure in one step is reported and the others go on.
   */
  async sweep<T>(kind: SweepKind, step: (effectId: string, chain: readonly Entry[]) => Promise<T | null>, nowMs = this.options.nowMs()): Promise<Map<string, T>> {
    const out = new Map<string, T>();
    for (const effectId of new Set(await this.candidates(kind, nowMs))) {
      const chain = await this.journal.entries(effectId);
      if (!ownedBy(chain, this.name)) continue;
      try {
        const result = await step(effectId, chain);
        if (result !== null) out.set(effectId, result);
      } catch (error) {
        this.options.onError?.(effectId, error);
      }
    }
    return out;
  }

  /** Move overdue items up their chain (inbox §10). Returns the new group, or BREACHED at the top. */
  async tick(): Promise<Map<string, string>> {
    const nowMs = this.options.nowMs();
    return this.sweep('tick', (effectId, chain) => this.tickOne(effectId, chain, nowMs), nowMs);
  }

  private async tickOne(effectId: string, chain: readonly Entry[], nowMs: number): Promise<string | null> {
    if (chainState(chain) !== 'ESCALATED') return null;
    const latest = latestEscalation(chain).escalation;
    const request = boundRequest(chain);
    if (!latest || !request || latest.due_ms === null || latest.due_ms > nowMs) return null;
    const route = routedWith(latest) ?? this.options.policy.routeByName(latest.route) ?? { name: latest.route, chain: [latest.group], slaMs: null };
    const facts = await this.capturePlain(request);
    let previous: Escalated = latest;
    for (const step of overdueEscalations(latest, route, facts, nowMs, (g) => this.membersOf(g))) {
      const written = await this.journal.appendIf('ESCALATED', effectId, this.unanswered(previous), step);
      if (written.entry === null) break;
      previous = written.entry;
    }
    if (previous === latest) return null;
    return previous.level > latest.level ? previous.group : 'BREACHED';
  }
}
