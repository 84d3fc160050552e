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
  'MESSAGE',
  'ATTEMPT',
  'GAVE_UP',
  'EPOCH',
  'CONFIG',
] as const;
/** One journal entry kind. */
export type EntryKind = (typeof ENTRY_KINDS)[number];

/** A fact that changed between a decision and now. */
export type Change = {
  field: string;
  was: Json;
  now: Json;
};

/** Repair codes the targets can suggest. */
export const REPAIR_CODES = ['still_fits', 'refund_remaining'] as const;
/** One repair code. */
export type RepairCode = (typeof REPAIR_CODES)[number];

/** What a repair changes in the payload: a new amount, or nothing ("the same, decided again"). */
export type RepairSet = { amount: number } | { [field: string]: never };

/** A safe repair suggestion: `set` patches the payload; an empty `set` means "the same, decided again". */
export type Repair = {
  code: RepairCode;
  set: RepairSet;
  why: string;
};

/**
 * A policy rule that failed, and how it was worded for people when it ran: "over $50.00", "over
 * ¥7,000", "disputed", "flag: vip". The words are fixed into the escalation, so a journal keeps
 * them whatever the config says later.
 */
export type FailedRule = {
  rule: string;
  words: string;
};

/** The lease the gate records: a grant id, a policy lease, a person lease, or null (binding only). */
export type Lease = Json;

/** One more person's approval of the same escalation, carried by a four-eyes lease. */
export type CoApproval = {
  by: string;
  at_ms: number;
};

/**
 * A person's approval of one escalation, as a lease: the approval that completed it (`by`,
 * `at_ms`), and for an escalation that needs two approvers the earlier ones (`co_approvals`),
 * each by another person of the same group. Every one of them must be live for the lease to be.
 */
export type PersonLease = {
  by: string;
  at_ms: number;
  group: string;
  escalation: string;
  co_approvals?: CoApproval[];
};

/** The policy lease: every rule passed. */
export type PolicyLease = {
  by: 'policy';
  rules: string[];
};

/** What the gate recorded about the authority and facts when it sent (or refused). */
export type Checks = {
  lease_live: boolean;
  lease: Json;
  violations?: string[];
  use_problems?: string[];
};

/** Fields common to every sealed entry. */
export interface EntryEnvelope {
  effect_id: string;
  kind: EntryKind;
  ts_ms: number;
  prev: string | null;
  hash: string;
}

/** The envelope's keys: the store alone sets them. */
export type EnvelopeKey = keyof EntryEnvelope;

type Sealed<K extends EntryKind, Fields> = { effect_id: string; kind: K; ts_ms: number; prev: string | null; hash: string } & Fields;

/** How a COMMITTED came to be: sent now (no `via`), or settled by recovery or a lookup. */
export const COMMIT_VIAS = ['retry-idempotent', 'recovery-reapply', 'recovery-query', 'failed-but-landed'] as const;
/** One way a commit came to be. */
export type CommitVia = (typeof COMMIT_VIAS)[number];

/** A decision recorded with a repair: which suggestion, what it set, and the request it became. */
export type DecidedRepair = { code: string; set: JsonObject; request_id: string };

/**
 * An agent's (or the inbox's) proposal: binds the payload at the first one (core §4.4).
 * `http_request_id` is the `x-request-id` of the HTTP request that asked (to find its log lines);
 * it is no part of the payload, and never reaches Stripe. Missing on entries written before it was kept.
 */
export type Proposed = Sealed<
  'PROPOSED',
  { agent: string; lease: Json; premises: Json; effect: JsonObject; request?: JsonObject; at_ms?: number; http_request_id?: string }
>;
/** The lease was live when the proposal was checked. */
export type Authorized = Sealed<'AUTHORIZED', { lease: Json }>;
/** Durable before the send starts: what was sent, under which authority, on which facts; `reserves` names the payment it holds. */
export type Dispatched = Sealed<'DISPATCHED', { effect: JsonObject; lease: Json; premises: Json; checks: Checks; reserves?: string }>;
/** The effect landed (sent now, or found by recovery). */
export type Committed = Sealed<'COMMITTED', { result?: Json; via?: CommitVia; rechecked?: Checks | null; found?: Json }>;
/** It was refused; `resolves` closes an open dispatch. */
export type Refused = Sealed<
  'REFUSED',
  {
    code: string;
    reason: Json;
    checks?: Checks;
    changes?: Change[];
    repairs?: Repair[];
    resolves?: boolean;
    rechecked?: Checks;
    recorded?: Json;
    offered?: Json;
  }
>;
/** Nobody can know whether it was sent; never sent again. */
export type Ambiguous = Sealed<'AMBIGUOUS', { code: string; reason?: string; rechecked?: Checks; changes?: Change[] }>;
/**
 * The chain of groups and the SLA an item was routed with, copied from its route when it was
 * routed, so a config reloaded later does not move it another way.
 */
export type Routing = { chain: string[]; sla_ms: number | null };

/**
 * Put in front of a person: exactly ESCALATED_FIELDS. For a rule failure (`needs_judgment`),
 * `detail` names the failed rules and `failed_rules` words each; `why` is those words. Entries
 * written before the words were kept have no `failed_rules` (shared/escalation-words.ts reads both).
 * `routing` is the route's chain and SLA as routed; escalations written before it was kept have
 * none (or null), and read their route from the config by name.
 */
export type Escalated = Sealed<
  'ESCALATED',
  {
    at_ms: number;
    reason: string;
    why: string;
    detail: Json;
    failed_rules?: FailedRule[];
    facts: JsonObject;
    changes: Change[];
    repairs: Repair[];
    route: string;
    routing?: Routing | null;
    group: string;
    routed_to: string[];
    level: number;
    due_ms: number | null;
    breach: boolean;
    /**
     * How many distinct people must approve it, pinned when it was routed (the route's
     * `two_approvers_from`): written only when more than one; missing means one.
     */
    approvals_required?: number;
  }
>;
/**
 * A person's decision on one escalation: exactly DECIDED_FIELDS. On an escalation that needs two
 * approvers, an approval by one person is journaled as a DECIDED too; the escalation is answered
 * by the approval that brings the distinct approvers to the count (or by a reject or a repair).
 */
export type Decided = Sealed<
  'DECIDED',
  {
    at_ms: number;
    by: string;
    decision: Decision;
    escalation: string;
    group: string;
    members: string[];
    repair: DecidedRepair | null;
    /** Why a person rejected it, in their words (null for an approval or a repair); missing on decisions journaled before reasons were kept. */
    reason?: string | null;
  }
>;
/** Stripe confirmed (or failed) the refund: exactly CONFIRMED_FIELDS. */
export type Confirmed = Sealed<
  'CONFIRMED',
  { via: string; event: string | null; refund: string; status: string; amount: number; payment_intent: string; created: number | null }
>;

/**
 * A message Interlock decided to send (a notification to a person or a team, a callback to an
 * agent), journaled before its first attempt in a chain of its own: `effect_id` is the message
 * id, `hash({about, event, level, recipient, channel})`, so deciding it again finds it there.
 * `about` is the item's effect id (null for a digest); `held` names the digest that carries it
 * instead of an attempt of its own; `content` is what it says, fixed when it was decided.
 */
export type MessageEntry = Sealed<
  'MESSAGE',
  {
    at_ms: number;
    event: string;
    about: string | null;
    level: number | null;
    recipient: { kind: string; name: string };
    channel: string;
    content: JsonObject;
    held: string | null;
  }
>;
/** One attempt to deliver a message and what came of it; `next_at_ms` (wall clock) is when the next one may go, null for none. */
export type Attempt = Sealed<
  'ATTEMPT',
  { n: number; at_ms: number; outcome: 'delivered' | 'failed'; status: number | null; detail: string; next_at_ms: number | null }
>;
/** No more attempts: after the last one, or past the delivery window, or a failure no retry can fix. */
export type GaveUp = Sealed<'GAVE_UP', { at_ms: number; attempts: number; reason: string }>;

/** The checkpoint an epoch's first entry names: the last one of the epoch before, as a mirror held it. */
export type EpochPrevious = { origin: string; size: number; head: string; note: string };

/**
 * A restore starts a new epoch of the journal (a restored journal is behind its mirrors by
 * design): the first entry of the epoch names the last checkpoint of the old one that the mirrors
 * hold and what the restore found in Stripe, signed with the receipt key (`signature` over
 * `epochSigningInput`), so no one without the key can start an epoch to hide a cut. On the one
 * chain `EPOCH_CHAIN_ID`, never on an effect's or a message's.
 */
export type EpochEntry = Sealed<
  'EPOCH',
  { epoch: number; at_ms: number; previous: EpochPrevious | null; stripe: JsonObject; key_id: string; signature: string }
>;

/** The one chain the journal's epochs are on. */
export const EPOCH_CHAIN_ID = `j${'0'.repeat(23)}`;

/** One person's membership of one group. */
export type Membership = { group: string; name: string };

/** How a config came into force: reloaded while running, or found at a start to differ from the one the journal names. */
export const CONFIG_CAUSES = ['reload', 'start'] as const;
/** One way a config came into force. */
export type ConfigCause = (typeof CONFIG_CAUSES)[number];

/**
 * The config in force changed: reloaded while running, or found at a start to differ from the one
 * the last CONFIG entry names (edited while the server was down, or the journal's first start).
 * The SHA-256 of the file's bytes, and who came and went (people by name, and memberships of
 * groups) since the config it names in `compared_with`. On the one chain `CONFIG_CHAIN_ID`, so the
 * journal says from when on someone could no longer decide.
 *
 * `cause`, `compared_with`, `people` and `members` came with the start's entry; a reload's entry
 * written before has none of them. `compared_with` null: there was no roster to compare with (the
 * journal's first config, or one whose last CONFIG entry carried none), so no one is named added or
 * removed. `people` and `members` are everyone in force from this entry on, what the next start
 * compares with.
 */
export type ConfigEntry = Sealed<
  'CONFIG',
  {
    at_ms: number;
    sha256: string;
    people_added: string[];
    people_removed: string[];
    joined: Membership[];
    left: Membership[];
    cause?: ConfigCause;
    compared_with?: string | null;
    people?: string[];
    members?: Membership[];
  }
>;

/** The one chain config reloads are on. */
export const CONFIG_CHAIN_ID = `c${'0'.repeat(23)}`;

/** Kinds that belong to message chains, never to an effect's chain. */
export const MESSAGE_KINDS = ['MESSAGE', 'ATTEMPT', 'GAVE_UP'] as const;

/** A sealed journal entry: one of the kinds, told apart by `kind`. */
export type Entry = Proposed | Authorized | Dispatched | Committed | Refused | Ambiguous | Escalated | Decided | Confirmed | MessageEntry | Attempt | GaveUp | EpochEntry | ConfigEntry;

/** The entry of one kind. */
export type EntryOf<K extends EntryKind> = Extract<Entry, { kind: K }>;

/** The kind-specific fields of an entry, as a writer hands them to the journal before sealing. */
export type FieldsOf<K extends EntryKind> = Omit<EntryOf<K>, EnvelopeKey>;

/** Kind-specific fields of any kind (the store's generic input). */
export type EntryFields = FieldsOf<EntryKind>;

/** ESCALATED carries exactly these fields. */
export const ESCALATED_FIELDS = [
  'at_ms',
  'reason',
  'why',
  'detail',
  'failed_rules',
  'facts',
  'changes',
  'repairs',
  'route',
  'routing',
  'group',
  'routed_to',
  'level',
  'due_ms',
  'breach',
] as const;

/** ESCALATED may also carry these: written only when they say something (more than one approver). */
export const ESCALATED_OPTIONAL_FIELDS = ['approvals_required'] as const;

/** DECIDED carries exactly these fields. */
export const DECIDED_FIELDS = ['at_ms', 'by', 'decision', 'escalation', 'group', 'members', 'repair', 'reason'] as const;

/** CONFIRMED carries exactly these fields. */
export const CONFIRMED_FIELDS = ['via', 'event', 'refund', 'status', 'amount', 'payment_intent', 'created'] as const;

/** Decisions a person can record. */
export const DECISIONS = ['approve', 'reject', 'repair'] as const;
/** One decision. */
export type Decision = (typeof DECISIONS)[number];
