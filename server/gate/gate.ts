import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Checks, Entry } from '../../shared/entries.ts';
import { isJsonObject, type Json, type JsonObject, jsonEqual, plain } from '../../shared/json.ts';
import { limits } from '../../shared/limits.ts';
import { type Status, WHY } from '../../shared/statuses.ts';
import { dispatchBlocker, has, isOpenDispatch, lastOf, recordedEffect } from './chain.ts';
import { effectIdFor } from './hash.ts';
import type { JournalStore } from './journal.ts';
import type { LeaseStore } from './leases.ts';
import { recoverEffect } from './recovery.ts';
import { InvalidEffectError, SimulatedCrash, type Target, TargetRejectedError } from './target.ts';

/** Named points where a crash test may kill the process (`INTERLOCK_KILL_AT`). */
export const KILL_POINTS = ['before_dispatch', 'after_dispatch', 'after_send', 'after_commit', 'recovery_resend'] as const;
/** One kill point. */
export type KillPoint = (typeof KILL_POINTS)[number];

/** Called at each kill point; a crash test kills the process there, an experiment throws SimulatedCrash. */
export type KillHook = (point: KillPoint, effectId: string) => void | Promise<void>;

/** What an agent (or the inbox) asks the gate to do. */
export interface Proposal {
  agent: string;
  lease: Json;
  premises: Json;
  effect: JsonObject;
  /** The caller's key for this decision; fixes the effect id. Without it the payload does. */
  requestKey?: Json;
  request?: Json;
  /** When it was asked, on the application clock; recorded on the PROPOSED for reports. */
  atMs?: number;
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

  constructor(options: GateOptions) {
    this.journal = options.journal;
    this.target = options.target;
    this.leases = options.leases;
    this.wallClockMs = options.wallClockMs;
    this.claimTtlMs = options.claimTtlMs ?? limits.claimTtlMs;
    this.owner = options.owner ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    this.sender = `${this.owner}/send`;
    this.killHook = options.killHook;
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

    if (isOpenDispatch(prior)) return done('IN_FLIGHT');
    const proposed = {
      agent: proposal.agent,
      lease,
      premises,
      effect,
      ...(proposal.request === undefined ? {} : { request: plain(proposal.request) }),
      ...(proposal.atMs === undefined ? {} : { at_ms: proposal.atMs }),
    };
    const bound = recordedEffect(prior);
    if (bound !== undefined && !jsonEqual(bound, effect)) {
      await this.journal.append('PROPOSED', effectId, proposed);
      await this.refuse(effectId, 'conflicting_payload', { recorded: bound, offered: effect });
      return done('REFUSED:conflicting_payload');
    }
    if (has(prior, 'AMBIGUOUS')) return done('AMBIGUOUS');
    if (has(prior, 'COMMITTED')) return done('DUPLICATE_IGNORED');

    const decidedOn = this.decidedOn(prior, lease, premises);
    await this.journal.append('PROPOSED', effectId, proposed);
    const checks: Checks = { ...(await this.leases.see(lease, effect)) };
    if (!checks.lease_live) {
      await this.refuse(effectId, 'lease', { checks: checks as unknown as Json });
      return done('REFUSED:lease');
    }
    await this.journal.append('AUTHORIZED', effectId, { lease });

    const explained = await this.target.explain(decidedOn, effectId, effect);
    checks.violations = explained.violations;
    if (explained.violations.length > 0) {
      await this.refuse(effectId, 'stale_premise', {
        reason: explained.violations,
        checks: checks as unknown as Json,
        ...(explained.changes.length ? { changes: explained.changes as unknown as Json } : {}),
        ...(explained.repairs.length ? { repairs: explained.repairs as unknown as Json } : {}),
      });
      return done('REFUSED:stale_premise');
    }
    if (this.leases.reserve) {
      checks.use_problems = await this.leases.reserve(lease, effectId, effect);
      if (checks.use_problems.length > 0) {
        const reason = `lease already used: ${checks.use_problems.join('; ')}`;
        await this.refuse(effectId, 'lease_used', { reason, checks: checks as unknown as Json });
        return done('REFUSED:lease_used');
      }
    }
    return this.dispatchAndSend(effectId, effect, lease, decidedOn, checks);
  }

  /**
   * The facts a retry is judged on: those of the first proposal under the same authority, so a
   * retry cannot launder a refusal by re-reading the world; a new authority brings its own facts.
   */
  private decidedOn(prior: readonly Entry[], lease: Json, premises: Json): Json {
    const identity = (l: Json): Json => (this.leases.authority ? this.leases.authority(l) : l);
    const mine = identity(lease);
    const first = prior.find((e) => e.kind === 'PROPOSED' && jsonEqual(identity(e.lease ?? null), mine));
    return first ? (first.premises ?? null) : premises;
  }

  private async dispatchAndSend(effectId: string, effect: JsonObject, lease: Json, decidedOn: Json, checks: Checks): Promise<Outcome> {
    const done = (status: Status): Outcome => ({ effectId, status });
    await this.reached('before_dispatch', effectId);
    const result = await this.journal.appendIf(
      'DISPATCHED',
      effectId,
      (chain) => dispatchBlocker(chain, effect, lease, decidedOn),
      { effect, lease, premises: decidedOn, checks: checks as unknown as Json },
      { owner: this.sender, ttlMs: this.claimTtlMs },
    );
    if (result.blocker !== null) {
      switch (result.blocker) {
        case 'committed':
          return done('DUPLICATE_IGNORED');
        case 'ambiguous':
          return done('AMBIGUOUS');
        case 'in_flight':
          return done('IN_FLIGHT');
        case 'conflicting_payload':
        case 'closed':
        case 'awaiting_decision':
        case 'target_error':
          await this.refuse(effectId, result.blocker, {});
          return done(`REFUSED:${result.blocker}`);
        default:
          throw new Error(`unknown dispatch blocker ${result.blocker}`);
      }
    }
    let sent: Json;
    try {
      await this.reached('after_dispatch', effectId);
      sent = await this.target.apply(effectId, effect);
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

  /** Append a refusal with the plain reason for its code unless one is given. */
  async refuse(effectId: string, code: string, fields: JsonObject): Promise<Entry> {
    const reason = fields.reason ?? (WHY as Record<string, string>)[code] ?? code;
    return this.journal.append('REFUSED', effectId, { code, ...fields, reason });
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
        landed = await this.target.query(effectId, dispatched.effect as JsonObject);
      } catch (error) {
        lookupNote = `; lookup failed: ${(error as Error).message}`;
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
    for (const effectId of options.candidates ?? (await this.journal.inFlight())) {
      if (options.only && !options.only.has(effectId)) continue;
      const status = await recoverEffect(this, effectId);
      if (status !== null) out.set(effectId, status);
    }
    return out;
  }
}
