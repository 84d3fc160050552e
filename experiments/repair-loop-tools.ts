import type { Json, JsonObject } from '../shared/json.ts';
import type { Status } from '../shared/statuses.ts';
import { has, isOpenDispatch, lastOf } from '../server/journal/chain.ts';
import { Gate } from '../server/gate/gate.ts';
import { canonical } from '../server/journal/hash.ts';
import type { JournalStore } from '../server/journal/store.ts';
import type { LeaseStore } from '../server/gate/leases.ts';
import { Envelope } from './envelope.ts';
import { CASE_DOLLARS, type OrderRead, type Shop, ShopCrash, ShopTarget } from './repair-loop-shop.ts';

/**
 * The refund tool as each system of repair_loop gives it to the agent (inbox §21): straight to
 * the shop, a hand-written check, or protected by the gate, with or without the case approval.
 */

/** What the agent learns from one call (core §11.2): whether it went, the status, and whether a re-decision may help. */
export interface ToolOutcome {
  ok: boolean;
  status: string;
  /** Refused on facts or on the approval's bounds while the approval is still live and unused: decide again. */
  mayRetry: boolean;
  message: string;
}

/** A refund tool the scripted agent calls. */
export interface RefundTool {
  /** Refund `amount` on the order, decided on `seen` (what the agent read). */
  refund(order: string, amount: number, seen: OrderRead): Promise<ToolOutcome>;
  /** Settle what a crash left in flight (gated tools only). */
  recover(): Promise<void>;
}

/** Statuses that mean the refund went out (now, earlier, or as recovery found). */
const OK_STATUSES: ReadonlySet<string> = new Set(['COMMITTED', 'DUPLICATE_IGNORED', 'COMMITTED_BY_RETRY', 'COMMITTED_ON_QUERY', 'REAPPLIED_AFTER_QUERY']);
/** Refusals a re-decision can answer: the facts moved, or the payload is outside the approval. */
const REDECIDABLE: ReadonlySet<string> = new Set(['REFUSED:stale_premise', 'REFUSED:lease']);
/** Refusal codes after which the same arguments get a fresh effect id, so the agent may decide again. */
const RETRYABLE_CODES: ReadonlySet<Json> = new Set(['stale_premise', 'lease']);
/** The gate sends at most this many fresh ids for one set of arguments; the attempts cap is far lower. */
const SUFFIXES_MAX = 100;
/** The shortest claim the journal takes. The script's claim TTL is 0: recovery may settle a lost answer at once. */
const CLAIM_TTL_MS = 1;

function outcome(status: string, message = '', mayRetry = false): ToolOutcome {
  return { ok: OK_STATUSES.has(status), status, mayRetry, message };
}

/** Today's tool: straight to the shop with a fresh reference; a lost answer is unknown. */
export class DirectRefund implements RefundTool {
  constructor(private readonly shop: Shop) {}

  async refund(order: string, amount: number): Promise<ToolOutcome> {
    try {
      this.shop.refund(order, amount);
      return outcome('COMMITTED');
    } catch (error) {
      if (!(error instanceof ShopCrash)) throw error;
      return outcome('IN_FLIGHT', error.message);
    }
  }

  async recover(): Promise<void> {}
}

/**
 * A careful hand-written tool: one stable reference per case, a lookup before anything, and a
 * read of what is left of the case right before sending.
 */
export class HandCheckedRefund implements RefundTool {
  constructor(private readonly shop: Shop) {}

  async refund(order: string, amount: number): Promise<ToolOutcome> {
    const reference = `case-${order}`;
    if (this.shop.lookup(reference)) return outcome('DUPLICATE_IGNORED');
    const left = CASE_DOLLARS - this.shop.getOrder(order).refunded_total;
    if (amount > left) return outcome('OVER_LIMIT', `only $${left} of the case is left`, true);
    try {
      this.shop.refund(order, amount, reference);
      return outcome('COMMITTED');
    } catch (error) {
      if (!(error instanceof ShopCrash)) throw error;
      return outcome('IN_FLIGHT', error.message);
    }
  }

  async recover(): Promise<void> {}
}

/** No approval: every call is authorised; only the facts and the journal stand in the way. */
const ANY_CALL: LeaseStore = { see: () => ({ lease_live: true, lease: null }) };

/**
 * The refund tool protected by the gate (core §11.2), on a tier-2 shop. A lost answer leaves the
 * send in flight under a claim that lapses at once, so recovery may settle it straight away.
 * With `approvals`, each call carries the case approval read at call time, and an Envelope
 * bounds it to `attempts` attempts.
 */
export class ProtectedRefund implements RefundTool {
  readonly gate: Gate;
  readonly envelope: Envelope | null;
  /** The wall clock the journal's claims run on; recovery moves it past the sender's claim. */
  readonly clock: { wallMs: number };

  constructor(
    private readonly shop: Shop,
    journal: JournalStore,
    options: { approvals: boolean; attempts: number; clock: { wallMs: number } },
  ) {
    this.clock = options.clock;
    const wallClockMs = () => this.clock.wallMs;
    this.envelope = options.approvals ? new Envelope({ attempts: options.attempts, nowMs: wallClockMs }) : null;
    this.gate = new Gate({ journal, target: new ShopTarget(shop), leases: this.envelope ?? ANY_CALL, wallClockMs, claimTtlMs: CLAIM_TTL_MS });
  }

  /**
   * One case, one refund. Under an approval the arguments are part of the key, and a chain
   * refused before anything was sent gets the next suffix, so a re-decision is a new effect
   * judged on current facts while a retry of a sent call is the same effect.
   */
  async requestKeyFor(order: string, effect: JsonObject): Promise<string> {
    if (!this.envelope) return `case-${order}`;
    const base = `case-${order}:${canonical(effect)}`;
    for (let n = 1; n <= SUFFIXES_MAX; n++) {
      const key = n === 1 ? base : `${base}:${n}`;
      const chain = await this.gate.journal.entries(this.gate.effectIdOf({ requestKey: key, effect }));
      const refusedUnsent = !has(chain, 'DISPATCHED') && chain.some((e) => e.kind === 'REFUSED' && RETRYABLE_CODES.has(e.code ?? null));
      if (!refusedUnsent) return key;
    }
    throw new Error(`more than ${SUFFIXES_MAX} refused attempts with the same arguments on ${order}`);
  }

  async refund(order: string, amount: number, seen: OrderRead): Promise<ToolOutcome> {
    const effect = { order_id: order, amount };
    const requestKey = await this.requestKeyFor(order, effect);
    const approval = this.envelope ? { ...this.shop.getApproval(order), attempt: requestKey } : null;
    const effectId = this.gate.effectIdOf({ requestKey, effect });
    let status: Status;
    try {
      ({ status } = await this.gate.submit({ agent: 'refund-agent', lease: approval, requestKey, premises: seen, effect }));
    } catch (error) {
      // The send's outcome is unknown: recovery settles it. Nothing dispatched means nothing sent.
      const open = isOpenDispatch(await this.gate.journal.entries(effectId));
      return outcome(open ? 'IN_FLIGHT' : 'NOT_SENT', (error as Error).message);
    }
    const refusal = lastOf(await this.gate.journal.entries(effectId), 'REFUSED');
    const message = status.startsWith('REFUSED') && refusal ? refusalMessage(refusal) : '';
    return outcome(status, message, this.mayRetry(status, approval));
  }

  /** Only under an approval, only for facts or bounds, and only while the approval is live and unused. */
  private mayRetry(status: Status, approval: JsonObject | null): boolean {
    if (!this.envelope || !approval || !REDECIDABLE.has(status)) return false;
    return this.envelope.isLive(approval) && this.envelope.holder(String(approval.id)) === null;
  }

  async recover(): Promise<void> {
    this.clock.wallMs += CLAIM_TTL_MS;
    await this.gate.recover();
  }
}

/** What a refusal tells the agent: the facts that changed, or what the approval allows. */
function refusalMessage(refusal: JsonObject): string {
  const checks = refusal.checks as JsonObject | undefined;
  const lease = checks?.lease as JsonObject | null | undefined;
  if (refusal.code === 'lease' && lease && Array.isArray(lease.problems)) return lease.problems.join('; ');
  return Array.isArray(refusal.reason) ? refusal.reason.join('; ') : String(refusal.reason ?? '');
}
