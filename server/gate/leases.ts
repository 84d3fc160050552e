import type { Checks, PersonLease } from '../../shared/entries.ts';
import { isJsonObject, type Json, type JsonObject } from '../../shared/json.ts';

/** What the gate asks of whoever vouches for an authority. */
export interface LeaseStore {
  /** Whether the lease is live and covers this effect, and how the store describes it for the record. */
  see(lease: Json, effect: JsonObject): Promise<Pick<Checks, 'lease_live' | 'lease'>> | Pick<Checks, 'lease_live' | 'lease'>;
  /** The identity of the underlying approval, for judging retries on the facts first decided on. */
  authority?(lease: Json): Json;
  /** Bind the approval to this effect for good; problems when another effect owns it. */
  reserve?(lease: Json, effectId: string, effect: JsonObject): Promise<string[]> | string[];
}

/** Grants by id with no expiry or amount: the experiments' authority. */
export class MemoryLeases implements LeaseStore {
  readonly #granted = new Set<string>();

  grant(id: string): void {
    this.#granted.add(id);
  }

  revoke(id: string): void {
    this.#granted.delete(id);
  }

  see(lease: Json): Pick<Checks, 'lease_live' | 'lease'> {
    return { lease_live: typeof lease === 'string' && this.#granted.has(lease), lease: null };
  }
}

/** The name reserved for rule-approved sends; no person may decide as it. */
export const POLICY = 'policy';

/** True for a well-formed person lease. Anything else is not an approval and fails closed. */
export function isPersonLease(lease: Json): lease is PersonLease & JsonObject {
  return (
    isJsonObject(lease) &&
    typeof lease.by === 'string' &&
    lease.by !== POLICY &&
    lease.by.length > 0 &&
    Number.isSafeInteger(lease.at_ms) &&
    typeof lease.group === 'string' &&
    typeof lease.escalation === 'string' &&
    (lease.co_approvals === undefined || (Array.isArray(lease.co_approvals) && lease.co_approvals.every(isCoApproval)))
  );
}

/** True for one more approval a four-eyes lease carries: a person (never policy) and when. */
function isCoApproval(value: Json): boolean {
  return isJsonObject(value) && typeof value.by === 'string' && value.by !== POLICY && value.by.length > 0 && Number.isSafeInteger(value.at_ms);
}

/** Every approval a person lease carries: the one that completed it, then the earlier ones. */
export function approvalsIn(lease: PersonLease): { by: string; at_ms: number }[] {
  return [{ by: lease.by, at_ms: lease.at_ms }, ...(lease.co_approvals ?? [])];
}

/** True for the policy lease: every rule passed. */
export function isPolicyLease(lease: Json): boolean {
  return isJsonObject(lease) && lease.by === POLICY && Array.isArray(lease.rules);
}

/** Why a person lease is not live now, or null when it is. */
export type PersonLeaseProblem = 'approval_expired' | 'approver_removed' | 'not_an_approval';

/**
 * Person and policy authority behind the inbox. Group membership is read live on every check,
 * so removing someone takes effect at the next send; an approval expires `maxAgeMs` after it
 * was given, on the application clock.
 */
export class Authority implements LeaseStore {
  constructor(
    private readonly options: {
      members: (group: string) => readonly string[];
      maxAgeMs: number | null;
      nowMs: () => number;
    },
  ) {}

  /** Members of a group now; an unknown group has none, so a misrouted item fails closed. */
  members(group: string): readonly string[] {
    return this.options.members(group);
  }

  /**
   * The first reason a lease is not live, in the order a person would want to hear it. A lease
   * carrying two approvals is live only while both are: neither expired, both people still members.
   */
  problem(lease: Json): PersonLeaseProblem | null {
    if (isPolicyLease(lease)) return null;
    if (!isPersonLease(lease)) return 'not_an_approval';
    const { maxAgeMs, nowMs } = this.options;
    const approvals = approvalsIn(lease);
    if (maxAgeMs !== null && approvals.some((a) => nowMs() - a.at_ms > maxAgeMs)) return 'approval_expired';
    const members = this.members(lease.group);
    if (approvals.some((a) => !members.includes(a.by))) return 'approver_removed';
    return null;
  }

  see(lease: Json): Pick<Checks, 'lease_live' | 'lease'> {
    return { lease_live: this.problem(lease) === null, lease: null };
  }
}
