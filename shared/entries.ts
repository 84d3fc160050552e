import type { Json, JsonObject } from './json.ts';

/** Every kind of journal entry, in the order a chain usually meets them. */
export const ENTRY_KINDS = [
  'PROPOSED',
  'AUTHORIZED',
  'DISPATCHED',
  'COMMITTED',
  'REFUSED',
  'AMBIGUOUS',
  'ESCALATED',
  'DECIDED',
  'CONFIRMED',
] as const;
/** One journal entry kind. */
export type EntryKind = (typeof ENTRY_KINDS)[number];

/** A fact that changed between a decision and now. */
export interface Change {
  field: string;
  was: Json;
  now: Json;
}

/** Repair codes the targets can suggest. */
export const REPAIR_CODES = ['still_fits', 'refund_remaining'] as const;
/** One repair code. */
export type RepairCode = (typeof REPAIR_CODES)[number];

/** A safe repair suggestion: `set` patches the payload; an empty `set` means "the same, decided again". */
export interface Repair {
  code: RepairCode;
  set: { amount?: number };
  why: string;
}

/** The lease the gate records: a grant id, a policy lease, a person lease, or null (binding only). */
export type Lease = Json;

/** A person's approval of one escalation, as a lease. */
export interface PersonLease {
  by: string;
  at_ms: number;
  group: string;
  escalation: string;
}

/** The policy lease: every rule passed. */
export interface PolicyLease {
  by: 'policy';
  rules: string[];
}

/** What the gate recorded about the authority and facts when it sent (or refused). */
export interface Checks {
  lease_live: boolean;
  lease: Json;
  violations?: string[];
  use_problems?: string[];
}

/** Fields common to every sealed entry. */
export interface EntryEnvelope {
  effect_id: string;
  kind: EntryKind;
  ts_ms: number;
  prev: string | null;
  hash: string;
}

/** A sealed journal entry: the envelope plus kind-specific fields. */
export type Entry = EntryEnvelope & JsonObject;

/** Kind-specific fields before sealing. */
export type EntryFields = JsonObject;

/** ESCALATED carries exactly these fields. */
export const ESCALATED_FIELDS = [
  'at_ms',
  'reason',
  'why',
  'detail',
  'facts',
  'changes',
  'repairs',
  'route',
  'group',
  'routed_to',
  'level',
  'due_ms',
  'breach',
] as const;

/** DECIDED carries exactly these fields. */
export const DECIDED_FIELDS = ['at_ms', 'by', 'decision', 'escalation', 'group', 'members', 'repair'] as const;

/** CONFIRMED carries exactly these fields. */
export const CONFIRMED_FIELDS = ['via', 'event', 'refund', 'status', 'amount', 'payment_intent', 'created'] as const;

/** Decisions a person can record. */
export const DECISIONS = ['approve', 'reject', 'repair'] as const;
/** One decision. */
export type Decision = (typeof DECISIONS)[number];
