import type { Json, JsonObject } from '../shared/json.ts';
import type { GrantDescription, GrantSight, GrantTerms } from './port/grants.ts';

// The rules of grants over any store: which terms may be kept, and what a kept row says of an
// effect. Every value read back is checked again, so a damaged row fails closed rather than open.

/** A grant as a store keeps it: values as read back, checked before they are believed. */
export interface GrantRecord {
  leaseId: string;
  maxCents: unknown;
  expiresAtMs: unknown;
  grantedAtMs: unknown;
  revokedAtMs: unknown;
}

/** The terms as a store keeps them; throws on terms that could not be enforced. */
export function checkedTerms(leaseId: unknown, terms: GrantTerms): { leaseId: string; maxCents: number | null; expiresAtMs: number | null } {
  assertLeaseId(leaseId);
  const maxCents = terms.maxCents ?? null;
  const expiresAtMs = terms.expiresAtMs ?? null;
  if (maxCents !== null && !(Number.isSafeInteger(maxCents) && maxCents > 0)) {
    throw new TypeError(`maxCents must be a whole number of cents above 0, not ${String(maxCents)}`);
  }
  if (expiresAtMs !== null && !Number.isSafeInteger(expiresAtMs)) {
    throw new TypeError(`expiresAtMs must be a whole number of ms, not ${String(expiresAtMs)}`);
  }
  return { leaseId, maxCents, expiresAtMs };
}

export function assertLeaseId(leaseId: unknown): asserts leaseId is string {
  if (typeof leaseId !== 'string' || leaseId.length === 0) throw new TypeError('a lease id is a non-empty string');
}

/** The lease id a lease names, or null when it names none (only a non-empty string does). */
export function leaseIdOf(lease: Json): string | null {
  return typeof lease === 'string' && lease.length > 0 ? lease : null;
}

/** A clock read as whole ms; anything else is our bug, and comparing against it would decide nothing. */
export function wholeMs(nowMs: number, who: string): number {
  if (!Number.isSafeInteger(nowMs)) throw new Error(`${who}: the clock read ${String(nowMs)}, not whole ms`);
  return nowMs;
}

export function describeGrant(row: GrantRecord | null): GrantDescription | null {
  if (row === null) return null;
  return { lease_id: row.leaseId, max_cents: asJson(row.maxCents), revoked: asJson(row.revokedAtMs), granted: asJson(row.grantedAtMs) };
}

/** What a kept grant says of an effect at `nowMs`. */
export function sightOf(row: GrantRecord | null, effect: JsonObject, nowMs: () => number): GrantSight {
  return { lease_live: row !== null && covers(row, effect, nowMs), lease: describeGrant(row) };
}

function covers(row: GrantRecord, effect: JsonObject, nowMs: () => number): boolean {
  if (row.revokedAtMs !== null) return false;
  const expiresAtMs = row.expiresAtMs;
  if (expiresAtMs !== null) {
    // A NaN, fractional or non-numeric expiry cannot be compared honestly: not live.
    if (typeof expiresAtMs !== 'number' || !Number.isSafeInteger(expiresAtMs)) return false;
    if (!(nowMs() < expiresAtMs)) return false;
  }
  const maxCents = row.maxCents;
  if (maxCents === null) return true;
  if (typeof maxCents !== 'number' || !Number.isSafeInteger(maxCents) || maxCents <= 0) return false;
  // typeof rules out booleans: `true` is never an amount of cents.
  const amount = effect.amount;
  return typeof amount === 'number' && Number.isSafeInteger(amount) && amount > 0 && amount <= maxCents;
}

/** A stored value as JSON for the record: numbers and strings as they are, anything else as text. */
function asJson(value: unknown): Json {
  if (value === null || typeof value === 'string') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  return String(value);
}
