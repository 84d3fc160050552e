import type { Static } from 'typebox';
import type { ErrorCode } from './codes.ts';
import type { Change, Entry, FailedRule, Repair } from './entries.ts';
import { isJsonObject, type Json, type JsonObject } from './json.ts';
import type {
  CheckpointAnswerSchema,
  ConflictingPayloadSchema,
  DecisionBodySchema,
  LoginBodySchema,
  ReconciliationResultSchema,
  ReconciliationRowSchema,
  ReconciliationRunDetailSchema,
  ReconciliationRunSchema,
  ReconciliationStartSchema,
  RefundAnswerSchema,
  RefundRequestBodySchema,
  SessionInfoSchema,
} from './schemas.ts';

export { DECISION_ACTIONS, type DecisionAction, ERROR_CODES, type ErrorCode, ROLES, type Role } from './codes.ts';
export type { DeciderKind, LedgerConfirmation, LedgerOutcome, LedgerPage, LedgerRow } from './ledger.ts';
import type { LedgerOutcome } from './ledger.ts';
import type { Status } from './statuses.ts';


/** The body of every error answer. */
export interface ErrorBody {
  error: { code: ErrorCode; message: string };
}

/** `POST /v1/refunds`: what an agent asks for (its schema is the contract, shared/schemas.ts). */
export type RefundRequestBody = Static<typeof RefundRequestBodySchema>;

/**
 * What a request asks for, normalised: two requests under one request id are the same decision
 * only when these are equal. `flags` is a sorted set (missing is `[]`); a missing `reason` stays
 * missing, which is not the same as `""`; so does a missing `context_url` or `on_behalf_of`.
 */
export type RequestPayload = {
  payment_intent: string;
  amount: number;
  reason?: string;
  flags: string[];
  /** The ticket or conversation behind the request, shown to approvers as a link. */
  context_url?: string;
  /** The person the refund benefits, by name or email address: they may not approve it. */
  on_behalf_of?: string;
};

/** The normalised payload of a request body or of a request bound in the journal. */
export function requestPayload(request: {
  payment_intent: string;
  amount: number;
  reason?: string;
  flags?: readonly string[];
  context_url?: string;
  on_behalf_of?: string;
}): RequestPayload {
  return {
    payment_intent: request.payment_intent,
    amount: request.amount,
    ...(request.reason === undefined ? {} : { reason: request.reason }),
    flags: [...new Set(request.flags ?? [])].sort(),
    ...(request.context_url === undefined ? {} : { context_url: request.context_url }),
    ...(request.on_behalf_of === undefined ? {} : { on_behalf_of: request.on_behalf_of }),
  };
}

/**
 * A refund request, the one type from the agents' API to the Stripe call: who asked, under which
 * id, for which payload; the inbox binds it in the journal as the `request` of the first PROPOSED.
 * A repair child also names the request it repairs (`repair_of`).
 */
export type RefundRequest = JsonObject & RequestPayload & { id: string; agent: string; repair_of?: string };

/**
 * True for a request record as the inbox binds it: an id and a whole amount. The agents' API
 * checked every refund field before binding it; the inbox itself is generic over its target's
 * payload, so only what every target's requests share is checked here.
 */
export function isRefundRequest(value: Json | undefined): value is RefundRequest {
  return value !== undefined && isJsonObject(value) && typeof value.id === 'string' && Number.isSafeInteger(value.amount);
}

/** The answer to an agent: always the current status, never a second send. */
export type RefundAnswer = Static<typeof RefundAnswerSchema>;

/** The `409` answer to a request id reused with another payload: both payloads, normalised. */
/** `GET /.well-known/interlock-checkpoint`. */
export type CheckpointAnswer = Static<typeof CheckpointAnswerSchema>;
export type ConflictingPayloadAnswer = Static<typeof ConflictingPayloadSchema>;

/** Where an item stands, derived from its journal chain alone. */
export const CHAIN_STATES = ['NEW', 'SENDING', 'DONE', 'CLOSED', 'ESCALATED', 'NEEDS_ESCALATION', 'APPROVED'] as const;
/** One chain state. */
export type ChainState = (typeof CHAIN_STATES)[number];

/** What an approver is shown for one open escalation. */
export interface InboxItem {
  effect_id: string;
  request: RefundRequest;
  state: ChainState;
  reason: string;
  why: string;
  detail: Json;
  /**
   * Each failed rule and its words, as the escalation kept them; for an escalation journaled
   * before they were kept, worded again from the facts it kept (server/inbox/rule-words-before.ts).
   * Missing when no rule failed.
   */
  failed_rules?: FailedRule[];
  facts: JsonObject;
  changes: Change[];
  repairs: Repair[];
  route: string;
  group: string;
  routed_to: string[];
  level: number;
  escalated_at_ms: number;
  due_ms: number | null;
  breach: boolean;
  /**
   * At the top of its chain (breached, no deadline left): the deadline it missed there, on the
   * application clock; null otherwise. "Overdue by" counts from it.
   */
  missed_due_ms: number | null;
  /** The hash of the escalation a decision must name. */
  escalation: string;
  /** When the agent asked, on the application clock. */
  asked_at_ms: number;
  /** When this trip to a person began (the first escalation since the last decision): how long it has waited. */
  waiting_since_ms: number;
  /**
   * The group it last moved up from because its deadline passed there, that deadline and when the
   * move was recorded (application clock); null when it has not moved up since it reached a person.
   */
  moved_from: { group: string; due_ms: number | null; at_ms: number } | null;
  /** The payment's facts now (display only), when they have been read. */
  current?: CurrentFacts | null;
  /**
   * For an escalation two distinct people must approve: how many must, and who approved this
   * escalation so far (logins) in approvals that still count (not expired, their approver still in
   * the group), as the agent is told. Missing when one approver is enough. The item page's
   * `approvals` also lists those that no longer count, and why.
   */
  approvals?: { required: number; given: { by: string; at_ms: number }[] };
}

/**
 * What Stripe says about an item's payment now, for display only: kept apart from the journal's
 * views, never used for a decision (a send reads Stripe again), and shown "as of" its read time.
 * `error` says the last refresh failed (the figures are the last good read, or null).
 */
export interface CurrentFacts {
  payment_intent: string;
  currency: string;
  amount_received: number;
  /** Refunded so far by anyone but this item, including Interlock's own dispatches Stripe does not show yet. */
  refunded_by_others: number;
  /** The part of it made outside Interlock (the dashboard, another system). */
  refunded_outside: number;
  /** What is left to refund: amount_received - refunded_by_others. */
  remaining: number;
  disputed: boolean;
  /** Wall clock of the read these figures come from. */
  as_of_ms: number;
  error: string | null;
  /** Who paid, as the charge's billing details name them; null when they name no one (or before a read). */
  customer: PaymentCustomer | null;
}

/** A payment's customer: a name, an email, either or both. */
export interface PaymentCustomer {
  name: string | null;
  email: string | null;
}

/** One earlier refund on a payment, and who made it. */
export interface PaymentRefund {
  id: string;
  amount: number;
  status: string;
  created_ms: number;
  /** `interlock` with the request id it was made for, or `outside` (the dashboard, another system). */
  by: 'interlock' | 'outside';
  request_id: string | null;
}

/** The payment an item is about, as Stripe has it (read through the SDK, cached per item). */
export interface PaymentPanel {
  payment_intent: string;
  amount: number;
  currency: string;
  /** When the charge was made (wall clock ms), null when Stripe has no charge yet. */
  charged_at_ms: number | null;
  customer: PaymentCustomer | null;
  card: { brand: string; last4: string } | null;
  refunds: PaymentRefund[];
  /**
   * The latest dispute, from Stripe's Dispute object: its status and reason, the amount the bank
   * took back (in the dispute's currency, its smallest unit) and when evidence is due (wall clock
   * ms, Stripe's `evidence_details.due_by`; null when Stripe names no deadline).
   */
  dispute: { status: string; reason: string | null; amount: number; currency: string; due_by_ms: number | null } | null;
  /** The payment in Stripe's dashboard (test mode), null for the local sandbox. */
  dashboard_url: string | null;
  as_of_ms: number;
}

/** A person who decided, as the inbox names them. */
export interface Decider {
  name: string;
  display_name: string;
}

/** Who is looking at an item now (over the websocket; never journaled). */
export interface Viewer {
  name: string;
  display_name: string;
}

/** A finished or closed item, for the done and closed lists. */
export interface HistoryItem {
  effect_id: string;
  request: RefundRequest;
  state: ChainState;
  status: string;
  decided_by: string | null;
  /**
   * Every person whose approval sent it, by login, the earliest first (both of a refund two people
   * approved), as the ledger's `approved_by_logins`; empty for the policy and for one never approved.
   */
  approved_by: string[];
  /** The payment's currency as the ledger has it (`usd`, `jpy`); null when no facts named it. */
  currency: string | null;
  group: string | null;
  refund: string | null;
  confirmed: boolean | 'pending' | null;
  updated_at_ms: number;
  /** How it ended, as the ledger names it (`rejected`, `repaired`, `refunded`, …). */
  outcome: LedgerOutcome;
  /** Why a person rejected (or closed) it, in their words; null otherwise. */
  reject_reason: string | null;
}

/** Who was told about an item, over which channel, and whether it reached them (the outbox). */
export interface NotificationRecord {
  id: string;
  /** escalated, moved_up, reminder, breach, final (a callback to the agent), failed_at_stripe. */
  event: string;
  level: number | null;
  recipient: { kind: string; name: string };
  /** `email:0`, `slack:1`, `webhook:0`, `callback:0`: the kind and which of the recipient's channels. */
  channel: string;
  /** When it was decided, on the application clock. */
  decided_at_ms: number;
  attempts: number;
  /**
   * pending (not attempted yet), delivered, retrying, given_up, or in_digest (held for a digest
   * not sent yet). A message a digest carries stands where the digest stands: delivered once the
   * digest is, and its attempts, times and errors are the digest's.
   */
  status: 'pending' | 'delivered' | 'retrying' | 'given_up' | 'in_digest';
  /**
   * When it was delivered, on the application clock like `decided_at_ms` (the wall-clock time of
   * the attempt, moved by the gap between the two clocks when the message was decided).
   */
  delivered_at_ms: number | null;
  /** When the next attempt may go, on the same clock. */
  next_attempt_at_ms: number | null;
  last_error: string | null;
  gave_up_reason: string | null;
  /** The digest message that carries it (its id), for a message held for one; null otherwise. */
  digest: string | null;
}

/** The item page: the request, the facts then and now, the changes, the repairs, the history, the receipt's verification. */
export interface ItemDetail {
  effect_id: string;
  request: RefundRequest;
  state: ChainState;
  /** How it ended (or that it is open), as the ledger and the lists name it. */
  outcome: LedgerOutcome;
  item: InboxItem | null;
  facts_then: JsonObject;
  facts_now: JsonObject | null;
  facts_now_error: string | null;
  changes: Change[];
  history: Entry[];
  verification: JsonObject;
  receipt: string;
  may_decide: boolean;
  /** Who was told, when, how, and whether it was delivered. */
  notifications: NotificationRecord[];
  /** The payment as Stripe has it (read through the SDK, cached per item), and why it could not be read. */
  payment?: PaymentPanel | null;
  payment_error?: string | null;
  /** Where the approvals stand when two distinct people must approve it; null when one is enough. */
  approvals?: ApprovalsShown | null;
  /** Why the reader may not approve it although their group decides it (they are its beneficiary, or approved it already); null when nothing stops them. */
  approval_block?: ApprovalBlock | null;
  /** Every approval in `history` of an escalation two people must approve: which of how many, the one that completed it, or why it no longer counts. */
  history_approvals?: HistoryApproval[];
}

/** One approval in an item's history, of an escalation that needs more than one approver. */
export interface HistoryApproval {
  /** The DECIDED entry's hash in `history`. */
  hash: string;
  by: string;
  display_name: string;
  at_ms: number;
  /** Its place among the approvals of its escalation: 1 for the first. */
  nth: number;
  /** How many distinct approvers its escalation needs. */
  required: number;
  /** True for the approval that brought its escalation to the count: the item was approved for sending. */
  completes: boolean;
  /** Null while it counts (or once it completed); else why it no longer does. */
  voided: ApprovalVoidReason | null;
}

/**
 * Why an approval no longer counts: the item moved up its chain, its facts were read again, the
 * approval expired, its approver left the group, it was escalated again; or, before a second
 * approval, another person rejected it or accepted a repair instead.
 */
export const APPROVAL_VOID_REASONS = ['moved_up', 'facts_changed', 'approval_expired', 'approver_removed', 'escalated_again', 'rejected', 'repaired'] as const;
/** One reason an approval no longer counts. */
export type ApprovalVoidReason = (typeof APPROVAL_VOID_REASONS)[number];

/** One approval of a two-approver item, as its page shows it. */
export interface ApprovalShown {
  by: string;
  display_name: string;
  at_ms: number;
  /** Null while it counts; else why it no longer does. */
  voided: ApprovalVoidReason | null;
}

/** A two-approver item's approvals: those of the escalation shown, and those voided just before it. */
export interface ApprovalsShown {
  required: number;
  approvals: ApprovalShown[];
  voided: ApprovalShown[];
}

/** Why the reader may not approve: they benefit from the refund (`beneficiary`), or already approved it (`same_approver`). */
export interface ApprovalBlock {
  code: 'beneficiary' | 'same_approver';
  why: string;
}


/** `POST /api/items/:effect_id/decisions`. */
export type DecisionBody = Static<typeof DecisionBodySchema>;

/** A decision as the inbox shows it, with the person's display name. */
export interface DecisionShown {
  action: 'approve' | 'reject' | 'repair';
  by: string;
  display_name: string;
  at_ms: number;
  reason: string | null;
}

/** The answer to a decision. `decided` is someone else's decision that came first (ALREADY_DECIDED, SUPERSEDED), else null. */
export interface DecisionAnswer {
  status: Status;
  message: string;
  decided: DecisionShown | null;
  item: ItemDetail;
}


/** `POST /api/session`: a person logs in. */
export type LoginBody = Static<typeof LoginBodySchema>;

/** Who is logged in. */
export type SessionInfo = Static<typeof SessionInfoSchema>;

/** `POST /api/reconciliation`: the period to compare, `from_ms` in it and `to_ms` not. */
export type ReconciliationStart = Static<typeof ReconciliationStartSchema>;
/** One refund of a reconciliation, as the journal and Stripe each have it. */
export type ReconciliationRow = Static<typeof ReconciliationRowSchema>;
/** A finished run's comparison, by category. */
export type ReconciliationResult = Static<typeof ReconciliationResultSchema>;
/** A run without its rows (`GET /api/reconciliation`). */
export type ReconciliationRun = Static<typeof ReconciliationRunSchema>;
/** A run with its result (`POST /api/reconciliation`, `GET /api/reconciliation/:run_id`). */
export type ReconciliationRunDetail = Static<typeof ReconciliationRunDetailSchema>;

/**
 * An item moved up its chain because its deadline passed in a group: told to that group only (its
 * members may still open the item), so the row does not vanish without a word.
 */
export interface MovedUp {
  request_id: string;
  amount: number;
  /** The payment's currency as the item's facts name it, or null when they do not. */
  currency: string | null;
  /** The group that missed the deadline, and the deadline (application clock). */
  from_group: string;
  missed_due_ms: number | null;
  to_group: string;
}

/** Websocket messages from the server. */
export type LiveMessage =
  | { type: 'snapshot'; items: InboxItem[]; now_ms: number }
  /** An item changed; `item: null` when it left the person's groups, with `moved_up` when it left because their group missed its deadline. */
  | { type: 'item'; effect_id: string; item: InboxItem | null; now_ms: number; moved_up?: MovedUp }
  | { type: 'scoreboard'; now_ms: number }
  | { type: 'clock'; now_ms: number }
  /** An item's payment facts were read again (display only). */
  | { type: 'facts'; effect_id: string; current: CurrentFacts; now_ms: number }
  /** Who is looking at an item now. */
  | { type: 'presence'; effect_id: string; viewers: Viewer[]; now_ms: number }
  /**
   * The session is ending (`warning`: in `ends_in_ms`, within limits.sessionWarningMs), or is no
   * longer about to (a call kept it alive). `renewable`: a call now would keep it alive (the idle
   * limit ends it, not the absolute one). At its end the feed is closed with 4401 session_expired.
   */
  | { type: 'session'; warning: boolean; ends_in_ms: number; renewable: boolean; now_ms: number };

/** Websocket messages from the page: which item the person is looking at (null: none). */
export type LiveClientMessage = { type: 'viewing'; effect_id: string | null };

/** Time to decision on the application clock, in ms; the statistics are null with no waits. */
export interface DecisionTimes {
  n: number;
  median_ms: number | null;
  p90_ms: number | null;
  max_ms: number | null;
}

/** Every figure finance reads (inbox §17.2), all recomputable from the journal alone. */
export interface Scoreboard {
  requests: number;
  cleared_no_person: number;
  cleared_verified: number;
  no_person_share: number;
  sent_after_person: number;
  rejected: number;
  closed_by_repair: number;
  repairs_accepted: number;
  open: number;
  escalated: number;
  escalated_by_reason: Record<string, number>;
  stale_approvals_caught: number;
  crash_to_person: number;
  repairs_suggested: number;
  sla_breaches: number;
  sla_breaches_by_group: Record<string, number>;
  confirmed_by_target: number;
  unconfirmed_sent: number;
  time_to_decision: DecisionTimes;
  /**
   * The same breaches, by the group that missed the deadline: the group the item was with when
   * its SLA passed (the group before the move, or the last group that kept it).
   */
  sla_breaches_missed_by_group: Record<string, number>;
  /**
   * Approvals of the same refund on the facts as they are now, after the payment changed under the
   * item (a refund outside Interlock that left room for it): approvals, counted apart from repairs.
   */
  approved_on_facts_now: number;
  /** Money by currency (lowercase ISO code, `unknown` when the facts named none); never summed across currencies. */
  money: Record<string, MoneyFigures>;
}

/**
 * One currency's money figures, each in the currency's smallest unit as Stripe counts it (cents
 * for USD, yen for JPY). A request counts at the amount it asked for, once.
 */
export interface MoneyFigures {
  /** Sent to Stripe (committed) and not reported failed since: with no person plus after a person. */
  refunded_minor: number;
  /** Sent on policy alone: the requests cleared with no person. */
  refunded_no_person_minor: number;
  /** Sent after a person saw it or chose it: approvals, and the new requests of accepted repairs. */
  refunded_after_person_minor: number;
  /** Sent on an accepted repair: the new requests of repairs (an approval on the facts now is no repair). */
  repaired_minor: number;
  /** Asked for by requests a person rejected (or closed): never sent. */
  rejected_minor: number;
  /** Asked for by requests refused as stale (a fact changed before the send) and not sent. */
  refused_stale_minor: number;
  /** Sent to Stripe, then reported failed (or canceled) by Stripe: no money went back, and none of it counts as refunded. */
  failed_at_stripe_minor: number;
  /** Open exposure: waiting for a person, waiting its turn to reach Stripe, plus approved and not sent yet. */
  exposure_minor: number;
  /** Asked for by requests waiting for a person; never a request only waiting its turn to reach Stripe. */
  exposure_queued_minor: number;
  /** Asked for by requests waiting their turn to reach Stripe (its rate budget): no person has them, nothing was sent yet. */
  exposure_waiting_stripe_minor: number;
  /** Approved (by a person or by policy) and not sent yet, or being sent now. */
  exposure_approved_minor: number;
}

/** One currency's refunded money in one bucket of the chart: with no person, and after a person. */
export interface MoneyPoint {
  start_ms: number;
  no_person_minor: number;
  after_person_minor: number;
}

/** One bucket of the volume chart. */
export interface VolumePoint {
  start_ms: number;
  requests: number;
  cleared_no_person: number;
}
