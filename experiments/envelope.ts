import type { Checks } from '../shared/entries.ts';
import { isJsonObject, type Json, type JsonObject, jsonEqual } from '../shared/json.ts';
import { canonical, sha256Hex } from '../server/journal/hash.ts';
import type { LeaseStore } from '../server/gate/leases.ts';

/**
 * An approval from the system of record that bounds a payload the agent chooses (core §5.3):
 * `{id, match?, max?, expires_ms?, attempt?}`. `match` names effect fields that must equal the
 * given values; `max` names numeric fields that must not exceed the given maximum.
 */
export interface Approval extends JsonObject {
  id: string;
}

/** Hex characters of SHA-256 kept for an attempt key derived from the effect. */
const ATTEMPT_KEY_HEX_CHARS = 16;

/** True for a number that can bound money: finite, and never a boolean, string or null. */
function isFiniteNumber(value: Json | undefined): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/**
 * The Envelope lease store, in memory, for the experiments (core §5.3). An approval covers an
 * effect when it is live (not expired, not revoked, attempts cap not reached) and the effect
 * matches it and stays within its maxima. The first effect id to reach dispatch reserves the
 * approval for good; every other effect is then refused as `lease_used`.
 */
export class Envelope implements LeaseStore {
  /** Approval id → the effect id that reserved it. Never released. */
  readonly #sends = new Map<string, { effectId: string; atMs: number }>();
  readonly #revoked = new Map<string, { atMs: number; by: string | null }>();
  /** Approval id → its distinct attempt keys, in the order first seen. */
  readonly #attempts = new Map<string, string[]>();

  constructor(
    private readonly options: {
      /** At most this many distinct attempts are judged on their merits; later ones are refused. */
      attempts?: number | null;
      nowMs: () => number;
      /** The named values of an effect that `match` and `max` refer to (identity by default). */
      fields?: (effect: JsonObject) => JsonObject;
    },
  ) {}

  /** All attempts under one approval are judged on the facts first decided on. */
  authority(lease: Json): Json {
    return isJsonObject(lease) && typeof lease.id === 'string' ? lease.id : null;
  }

  /** The key one attempt is counted under: the approval's own, else a hash of the effect. */
  attemptKey(approval: JsonObject, effect: JsonObject): string {
    if (typeof approval.attempt === 'string') return approval.attempt;
    return sha256Hex(canonical(effect)).slice(0, ATTEMPT_KEY_HEX_CHARS);
  }

  /** Everything that keeps the approval from covering the effect (or, with no effect, from being live); empty when fine. */
  problems(approval: Json, effect?: JsonObject): string[] {
    if (!isJsonObject(approval) || typeof approval.id !== 'string' || approval.id.length === 0) return ['no approval'];
    const problems: string[] = [];
    if (approval.expires_ms !== undefined) {
      if (!isFiniteNumber(approval.expires_ms)) problems.push('expiry is not a number');
      else if (this.options.nowMs() > approval.expires_ms) problems.push('approval expired');
    }
    if (this.#revoked.has(approval.id)) problems.push('approval revoked');
    const cap = this.options.attempts ?? null;
    if (cap !== null) {
      const seen = this.#attempts.get(approval.id) ?? [];
      const over = effect === undefined ? seen.length >= cap : seen.length >= cap && !seen.slice(0, cap).includes(this.attemptKey(approval, effect));
      if (over) problems.push(`attempts cap of ${cap} reached`);
    }
    if (effect !== undefined) problems.push(...this.boundProblems(approval, effect));
    return problems;
  }

  /** Match and maximum problems of one effect; a bound that is not a finite number fails closed. */
  private boundProblems(approval: JsonObject, effect: JsonObject): string[] {
    const values = this.options.fields ? this.options.fields(effect) : effect;
    const problems: string[] = [];
    const { match, max } = approval;
    if (match !== undefined && !isJsonObject(match)) problems.push('match is not an object');
    if (max !== undefined && !isJsonObject(max)) problems.push('max is not an object');
    for (const [field, wanted] of Object.entries(isJsonObject(match) ? match : {})) {
      // jsonEqual is strict: true never equals 1, unlike Python's ==.
      if (!jsonEqual(values[field] ?? null, wanted)) problems.push(`${field} must be ${JSON.stringify(wanted)}, got ${JSON.stringify(values[field] ?? null)}`);
    }
    for (const [field, maximum] of Object.entries(isJsonObject(max) ? max : {})) {
      const value = values[field];
      if (!isFiniteNumber(maximum)) problems.push(`maximum of ${field} is not a number`);
      else if (!isFiniteNumber(value)) problems.push(`${field} is not a number`);
      else if (value > maximum) problems.push(`${field} ${value} is over the approved maximum of ${maximum}`);
    }
    return problems;
  }

  /** Record this attempt (once per key), then judge it. */
  allows(approval: Json, effect: JsonObject): boolean {
    if (isJsonObject(approval) && typeof approval.id === 'string') {
      const keys = this.#attempts.get(approval.id) ?? [];
      const key = this.attemptKey(approval, effect);
      if (!keys.includes(key)) this.#attempts.set(approval.id, [...keys, key]);
    }
    return this.problems(approval, effect).length === 0;
  }

  /** Live with no effect in view: not expired, not revoked, attempts left. */
  isLive(approval: Json): boolean {
    return this.problems(approval).length === 0;
  }

  /** The effect id that reserved the approval, or null. */
  holder(approvalId: string): string | null {
    return this.#sends.get(approvalId)?.effectId ?? null;
  }

  /** What the gate records about the approval and this effect. */
  describeEffect(approval: Json, effect?: JsonObject): JsonObject {
    const id = isJsonObject(approval) && typeof approval.id === 'string' ? approval.id : null;
    return { approval, used_by: id === null ? null : this.holder(id), problems: this.problems(approval, effect) };
  }

  see(lease: Json, effect: JsonObject): Pick<Checks, 'lease_live' | 'lease'> {
    const live = this.allows(lease, effect);
    return { lease_live: live, lease: this.describeEffect(lease, effect) };
  }

  /** The first effect id to reach dispatch owns the approval for good. */
  reserve(lease: Json, effectId: string): string[] {
    const id = this.authority(lease);
    if (typeof id !== 'string') return ['no approval'];
    if (!this.#sends.has(id)) this.#sends.set(id, { effectId, atMs: this.options.nowMs() });
    const holder = this.holder(id);
    return holder === effectId ? [] : [`approval ${id} already used by ${holder}`];
  }

  revoke(approvalId: string, by: string | null = null): void {
    if (!this.#revoked.has(approvalId)) this.#revoked.set(approvalId, { atMs: this.options.nowMs(), by });
  }
}
