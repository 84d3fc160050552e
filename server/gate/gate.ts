import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Checks, Dispatched, FieldsOf, Refused } from '../../shared/entries.ts';
import { isJsonObject, type Json, type JsonObject, plain } from '../../shared/json.ts';
import { limits } from '../../shared/limits.ts';
import { type Status, whyFor } from '../../shared/statuses.ts';
import { bindingConflict, dispatchBlocker, has, isDispatchBlocker, isOpenDispatch, lastOf } from '../journal/chain.ts';
import { effectIdFor } from '../journal/hash.ts';
import { type JournalStore, RESERVATION_MOVED } from '../journal/store.ts';
import { blockedDispatch, decideSubmit, recoveryTier } from './decide.ts';
import { KeyedTurns } from './keyed-turns.ts';
import type { KillHook, KillPoint } from './kill-points.ts';
import { isPolicyLease, type LeaseStore } from './leases.ts';
import { recoverEffect } from './recovery.ts';
import {
  type Explained,
  type FreshFacts,
  InvalidEffectError,
  type SendTurn,
  SimulatedCrash,
  type Target,
  TargetBusyError,
  TargetRejectedError,
  TargetRetryableError,
} from './target.ts';


/** What an agent (or the inbox) asks the gate to do. */
export interface Proposal {
  agent: string;
  lease: Json;
  premises: Json;
  effect: JsonObject;
  /** The caller's key for this decision; fixes the effect id. Without it the payload does. */
  requestKey?: Json;
  request?: JsonObject;
  /** When it was asked, on the application clock; recorded on the PROPOSED for reports. */
  atMs?: number;
  /** The `x-request-id` of the HTTP request that asked, recorded on the PROPOSED for finding its log lines; never sent. */
  httpRequestId?: string;
  /**
   * Whether a payload that conflicts with the one bound is recorded (PROPOSED then REFUSED, the
   * default) or only answered. The inbox answers only: its callers are told the conflict by the
   * agents' API, and a request that lost a race to bind must leave the chain as the winner made it.
   */
  recordConflict?: boolean;
  /**
   * The facts a rule just ran on, read with the journal position before them: they stand in for the
   * read before the send while they are fresh (`limits.factsReuseMs`) and no dispatch on the payment
   * came since. A person's approval never brings them: it is always read at the send.
   */
  fresh?: FreshFacts;
}

/** The gate's answer. */
export interface Outcome {
  effectId: string;
  status: Status;
}

/** Everything the gate needs, injected. */
export interface GateOptions {
  journal: JournalStore;
  target: Target;
  leases: LeaseStore;
  /** The wall clock, which the provider's key window is measured on. */
  wallClockMs: () => number;
  claimTtlMs?: number;
  owner?: string;
  killHook?: KillHook;
  /** How the gate waits between tries of a busy target (default: a timer). */
  sleep?: (ms: number) => Promise<void>;
  /** How long a send tries a busy target again before it lets go (default `limits.stripeBusyRetryMs`). */
  busyRetryMs?: number;
  /** The jitter of those waits, from 0 to 1 (default `Math.random`): a simulation that must replay gives its own. */
  random?: () => number;
}

/** The gate: sends an effect at most once, under live authority, on facts that still hold. */
export class Gate {
  readonly journal: JournalStore;
  readonly target: Target;
  readonly leases: LeaseStore;
  readonly wallClockMs: () => number;
  readonly claimTtlMs: number;
  /** The owner of this process's sends; distinct from any recovery owner, so recovery waits out our own sends. */
  readonly sender: string;
  readonly owner: string;
  killHook: KillHook | undefined;
  readonly sleep: (ms: number) => Promise<void>;
  readonly busyRetryMs: number;
  readonly #random: () => number;
  /** Checks and dispatches on one payment take turns in this process. */
  readonly #turns = new KeyedTurns();
  /**
   * So do the sends on one payment: Stripe answers concurrent writes to one charge with a 429
   * `lock_timeout`, so refunds of one payment go to Stripe one after another (refunds of other
   * payments still go at once).
   */
  readonly #sends = new KeyedTurns();

  constructor(options: GateOptions) {
    this.journal = options.journal;
    this.target = options.target;
    this.leases = options.leases;
    this.wallClockMs = options.wallClockMs;
    this.claimTtlMs = options.claimTtlMs ?? limits.claimTtlMs;
    this.owner = options.owner ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    this.sender = `${this.owner}/send`;
    this.killHook = options.killHook;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.busyRetryMs = options.busyRetryMs ?? limits.stripeBusyRetryMs;
    this.#random = options.random ?? Math.random;
  }

  /** The effect id a proposal maps to. */
  effectIdOf(proposal: Pick<Proposal, 'requestKey' | 'effect'>): string {
    return effectIdFor(proposal.requestKey ?? plain(proposal.effect));
  }

  async reached(point: KillPoint, effectId: string): Promise<void> {
    await this.killHook?.(point, effectId);
  }

  /** Decide and, when everything holds, send. The order of checks is the spec's (core §4.4). */
  async submit(proposal: Proposal): Promise<Outcome> {
    const effect = plain(proposal.effect);
    if (!isJsonObject(effect)) throw new InvalidEffectError('the effect must be a JSON object');
    const invalid = this.target.invalidEffect(effect);
    if (invalid) throw new InvalidEffectError(invalid);
    const lease = plain(proposal.lease);
    const premises = plain(proposal.premises);
    const effectId = this.effectIdOf(proposal);
    const done = (status: Status): Outcome => ({ effectId, status });
    const prior = await this.journal.entries(effectId);

    const request = proposal.request === undefined ? undefined : plain(proposal.request);
    if (request !== undefined && !isJsonObject(request)) throw new InvalidEffectError('the request must be a JSON object');
    const proposed: FieldsOf<'PROPOSED'> = {
      agent: proposal.agent,
      lease,
      premises,
      effect,
      ...(request === undefined ? {} : { request }),
      ...(proposal.atMs === undefined ? {} : { at_ms: proposal.atMs }),
      ...(proposal.httpRequestId === undefined ? {} : { http_request_id: proposal.httpRequestId }),
    };
    const step = decideSubmit(prior, { effect, lease, premises, recordConflict: proposal.recordConflict !== false }, (l) => this.leases.authority?.(l) ?? l);
    if (step.next === 'answer') return done(step.status);
    if (step.next === 'record_conflict') {
      await this.journal.append('PROPOSED', effectId, proposed);
      await this.refuse(effectId, 'conflicting_payload', { recorded: step.recorded, offered: effect });
      return done('REFUSED:conflicting_payload');
    }
    const { decidedOn } = step;
    // Conditional, so a payload another caller bound since our read is refused with nothing written.
    const offered = proposed.request;
    const written = await this.journal.appendIf('PROPOSED', effectId, (chain) => bindingConflict(chain, effect, offered), proposed);
    if (written.blocker !== null) return done('REFUSED:conflicting_payload');
    const checks: Checks = { ...(await this.leases.see(lease, effect)) };
    if (!checks.lease_live) {
      await this.refuse(effectId, 'lease', { checks });
      return done('REFUSED:lease');
    }
    await this.journal.append('AUTHORIZED', effectId, { lease });
    const fresh = isPolicyLease(lease) ? proposal.fresh : undefined;
    const key = this.target.reservationKey?.(effect) ?? null;
    // Nothing of the rate budget is held while waiting for another refund on the payment: the turn
    // ahead may need a read of its own, and places held by those behind it would starve it.
    if (this.#turns.busy(key)) this.target.yieldHeld?.();
    // The facts check and the write of the DISPATCHED take turns per reserved payment; the send
    // itself runs after the turn, so concurrent refunds on one payment still send in parallel.
    const held: { turn: SendTurn | null } = { turn: null };
    const inTurn = <T>(work: () => Promise<T>): Promise<T> => (held.turn ? held.turn.run(work) : work());
    try {
      const checked = await this.#turns.run(key, async () => {
        held.turn = (await this.target.sendTurn?.()) ?? null;
        return inTurn(() => this.checkAndDispatch(effectId, effect, lease, decidedOn, checks, fresh));
      });
      if (typeof checked === 'string') return done(checked);
      return await inTurn(() => this.send(effectId, effect, checked.ts_ms));
    } finally {
      held.turn?.release();
    }
  }

  /**
   * Check the facts the decision relied on, then write the DISPATCHED, guarded so that no other
   * dispatch on the same payment came in between: open dispatches count as already refunded when
   * the facts are read, so two refunds racing on one payment are never both sent on the same facts.
   * Answers the DISPATCHED written when the send may go ahead, else the status to answer.
   */
  private async checkAndDispatch(
    effectId: string,
    effect: JsonObject,
    lease: Json,
    decidedOn: Json,
    checks: Checks,
    given?: FreshFacts,
  ): Promise<Status | Dispatched> {
    const headroom = isPolicyLease(lease);
    const key = this.target.reservationKey?.(effect) ?? null;
    let fresh = given !== undefined && key !== null && given.key === key && this.target.judgeOn !== undefined ? given : undefined;
    for (let check = 1; ; check++) {
      let guard: { key: string; afterSeq: number } | undefined;
      let explained: Explained;
      if (fresh && this.target.judgeOn) {
        // The facts the rule ran on are the read: the DISPATCHED is guarded on the journal position
        // read before them, exactly as it would be on a read made now.
        guard = { key: fresh.key, afterSeq: fresh.seq };
        explained = this.target.judgeOn(decidedOn, fresh.facts, effect, { headroom });
      } else {
        // The journal before the world: a dispatch that reaches Stripe after this read is still open
        // here, and one made after it is newer than the guard, so no refund escapes both counts.
        const reserved = key === null ? null : await this.journal.reservations(key);
        guard = key === null || reserved === null ? undefined : { key, afterSeq: reserved.seq };
        explained = await this.target.explain(decidedOn, effectId, effect, { headroom, ...(reserved ? { reserved: reserved.open } : {}) });
      }
      checks.violations = explained.violations;
      if (explained.violations.length > 0) return this.refuseStale(effectId, explained, checks);
      if (this.leases.reserve) {
        checks.use_problems = await this.leases.reserve(lease, effectId, effect);
        if (checks.use_problems.length > 0) {
          const reason = `lease already used: ${checks.use_problems.join('; ')}`;
          await this.refuse(effectId, 'lease_used', { reason, checks });
          return 'REFUSED:lease_used';
        }
      }
      await this.reached('before_dispatch', effectId);
      // The authority again, as close to the write as can be: a turn on the payment, or facts read
      // again, can take long enough for an approval to expire or its approver to leave the group.
      const seen = await this.leases.see(lease, effect);
      checks.lease_live = seen.lease_live;
      checks.lease = seen.lease;
      if (!checks.lease_live) {
        await this.refuse(effectId, 'lease', { checks });
        return 'REFUSED:lease';
      }
      // Facts reused only while fresh at the write itself: older than that, they are read again.
      if (fresh && this.wallClockMs() - fresh.readAtWallMs > limits.factsReuseMs) {
        fresh = undefined;
        continue;
      }
      const result = await this.journal.appendIf(
        'DISPATCHED',
        effectId,
        (chain) => dispatchBlocker(chain, effect, lease, decidedOn),
        { effect, lease, premises: decidedOn, checks, ...(guard ? { reserves: guard.key } : {}) },
        { owner: this.sender, ttlMs: this.claimTtlMs },
        guard,
      );
      if (result.blocker === null) return result.entry;
      if (result.blocker !== RESERVATION_MOVED) return this.blocked(effectId, result.blocker);
      // Another dispatch on the payment since the facts were read: read them again.
      fresh = undefined;
      if (check >= limits.reservationChecksMax) {
        const violations = [`other refunds on ${guard?.key ?? 'this payment'} kept landing while this one was checked`];
        return this.refuseStale(effectId, { violations, changes: [], repairs: [] }, { ...checks, violations });
      }
    }
  }

  private async refuseStale(effectId: string, explained: Explained, checks: Checks): Promise<Status> {
    await this.refuse(effectId, 'stale_premise', {
      reason: explained.violations,
      checks,
      ...(explained.changes.length ? { changes: explained.changes } : {}),
      ...(explained.repairs.length ? { repairs: explained.repairs } : {}),
    });
    return 'REFUSED:stale_premise';
  }

  /** What a dispatch refused by the chain's own state answers, with the refusal it writes. */
  private async blocked(effectId: string, blocker: string): Promise<Status> {
    if (!isDispatchBlocker(blocker)) throw new Error(`unknown dispatch blocker ${blocker}`);
    const { status, refuse } = blockedDispatch(blocker);
    if (refuse) await this.refuse(effectId, blocker, {});
    return status;
  }

  /** Send a dispatched effect (dispatched at `dispatchedAtMs` on the wall clock) and record how it went. */
  private async send(effectId: string, effect: JsonObject, dispatchedAtMs: number): Promise<Outcome> {
    const done = (status: Status): Outcome => ({ effectId, status });
    let sent: Json;
    try {
      await this.reached('after_dispatch', effectId);
      const applied = await this.applyUntilNotBusy(effectId, effect, dispatchedAtMs);
      if (applied === null) return done('IN_FLIGHT');
      sent = applied;
      await this.reached('after_send', effectId);
    } catch (error) {
      if (error instanceof SimulatedCrash) {
        // In-process stand-in for a death: a real death keeps the claim until its TTL runs out.
        await this.journal.release(effectId, this.sender);
        throw error;
      }
      if (error instanceof TargetRejectedError) {
        return done((await this.settleFailed(effectId, error.message, this.sender)) ?? (await this.settledStatus(effectId)));
      }
      // Unknown outcome: the dispatch stays open and our claim stays, so nobody resends before recovery.
      throw error;
    }
    await this.journal.append('COMMITTED', effectId, { result: sent }, { release: this.sender });
    await this.reached('after_commit', effectId);
    return done('COMMITTED');
  }

  /**
   * Apply the effect, trying again under the same key while the target says it is busy and did
   * nothing (a 429), or asks for another try: with a backoff and jitter, the claim refreshed before
   * each try, for `busyRetryMs` (`limits.stripeBusyRetryMs`). Null when the tries ran out on a busy target, or the
   * claim was lost: nothing was done, the claim is let go, and recovery checks the authority and
   * the facts again before it resends. Where recovery could not resend it (tier 3: no key, no
   * lookup) it would have to call the open dispatch ambiguous though nothing was done, so a busy
   * target is tried for `limits.busyRetryWithoutResendMs` instead. A target that asked for another
   * try and may have done it is an unknown outcome when the tries run out (thrown, the claim kept).
   */
  private async applyUntilNotBusy(effectId: string, effect: JsonObject, dispatchedAtMs: number): Promise<Json | null> {
    const startedMs = this.wallClockMs();
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#sends.run(this.target.reservationKey?.(effect) ?? null, () => this.target.apply(effectId, effect));
      } catch (error) {
        const busy = error instanceof TargetBusyError;
        if (!busy && !(error instanceof TargetRetryableError)) throw error;
        const backoffMs = Math.min(limits.stripeBusyBackoffMaxMs, limits.stripeBusyBackoffFirstMs * 2 ** attempt);
        const waitMs = backoffMs / 2 + this.#random() * (backoffMs / 2);
        const resendable = recoveryTier(this.target, dispatchedAtMs, this.wallClockMs()) !== 3;
        const retryMs = busy && !resendable ? Math.max(this.busyRetryMs, limits.busyRetryWithoutResendMs) : this.busyRetryMs;
        if (this.wallClockMs() - startedMs + waitMs > retryMs) {
          if (!busy) throw error;
          await this.journal.release(effectId, this.sender);
          return null;
        }
        await this.sleep(waitMs);
        // Nobody else may send it meanwhile; a claim that lapsed and was taken is theirs now.
        if (!(await this.journal.claim(effectId, this.sender, this.claimTtlMs))) return null;
      }
    }
  }

  /** Append a refusal with the plain reason for its code unless one is given. */
  async refuse(effectId: string, code: string, fields: Omit<FieldsOf<'REFUSED'>, 'code' | 'reason'> & { reason?: Json }): Promise<Refused> {
    return this.journal.append('REFUSED', effectId, { ...fields, code, reason: fields.reason ?? whyFor(code) });
  }

  /**
   * The target said the send failed. Look it up before believing it: if it landed anyway it is
   * committed; otherwise the refusal resolves the dispatch and blocks every later send until a
   * person sees it again (core §4.8).
   */
  async settleFailed(effectId: string, reason: string, owner: string): Promise<Status | null> {
    const chain = await this.journal.entries(effectId);
    if (!isOpenDispatch(chain)) return null;
    const dispatched = lastOf(chain, 'DISPATCHED')!;
    let landed: Json = null;
    let lookupNote = '';
    if (this.target.queryable) {
      try {
        landed = await this.target.query(effectId, dispatched.effect);
      } catch (error) {
        lookupNote = `; lookup failed: ${error instanceof Error ? error.message : String(error)}`;
      }
    }
    try {
      if (landed) {
        await this.journal.append('COMMITTED', effectId, { via: 'failed-but-landed', found: landed });
        return 'COMMITTED_ON_QUERY';
      }
      await this.refuse(effectId, 'target_error', { reason: `target reported failure: ${reason}${lookupNote}`, resolves: true });
      return 'REFUSED:target_error';
    } finally {
      await this.journal.release(effectId, owner);
    }
  }

  /** The status of an effect someone else settled while we were looking. */
  private async settledStatus(effectId: string): Promise<Status> {
    const chain = await this.journal.entries(effectId);
    if (isOpenDispatch(chain)) return 'IN_FLIGHT';
    if (has(chain, 'COMMITTED')) return 'DUPLICATE_IGNORED';
    if (has(chain, 'AMBIGUOUS')) return 'AMBIGUOUS';
    return 'REFUSED:target_error';
  }

  /**
   * Settle every in-flight effect this process can claim (core §4.7). `candidates` names them
   * when the caller already knows which chains have an open dispatch (a projection that has
   * caught up with the journal), instead of asking the journal; each is claimed and re-read
   * either way, so one whose dispatch has closed since is left alone.
   */
  async recover(options: { only?: ReadonlySet<string>; candidates?: Iterable<string> } = {}): Promise<Map<string, Status>> {
    const out = new Map<string, Status>();
    const run = async () => {
      for (const effectId of options.candidates ?? (await this.journal.inFlight())) {
        if (options.only && !options.only.has(effectId)) continue;
        const status = await recoverEffect(this, effectId);
        if (status !== null) out.set(effectId, status);
      }
      return out;
    };
    return this.target.recoveryTurn ? this.target.recoveryTurn(run) : run();
  }
}
