import { type TSchema, Type } from 'typebox';
import { DECISION_ACTIONS, ERROR_CODES, type ErrorCode, ROLES, type Role } from './codes.ts';
import { DECIDER_KINDS, LEDGER_CONFIRMATIONS, LEDGER_OUTCOMES } from './ledger.ts';
import type { Change, Repair } from './entries.ts';
import type { Json } from './json.ts';
import { limits } from './limits.ts';
import { RECEIPT_VERSION } from './receipts/report.ts';
import { RECONCILIATION_CATEGORIES, RECONCILIATION_PHASES, RECONCILIATION_STATES } from './reconciliation.ts';
import { type Status, WAITING_FOR, type WaitingFor } from './statuses.ts';

// The contract as JSON Schema: the server validates every body, path and query against these
// (Ajv, with nothing coerced and nothing removed), answers through the response schemas, and
// publishes them as OpenAPI at /openapi.json; the TypeScript types of shared/api.ts come from
// them. A field's `description` is also the message a refusal of that field carries.

/** A string that is one of `values`, typed as their union (an enum, so a refusal names the field once). */
function oneOf<const T extends readonly string[]>(values: T, description: string) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], description });
}

/** An object whose members are listed for the reader but not all pinned: every member is kept when answered. */
function openObject<T>(description: string, properties: Record<string, TSchema> = {}) {
  return Type.Unsafe<T>({ type: 'object', properties, additionalProperties: true, description });
}

/** Text with no lone surrogate: what can be hashed, signed and shown. */
const WELL_FORMED = '^\\P{Cs}*$';

export const RequestId = Type.String({
  minLength: 1,
  maxLength: limits.requestIdCharsMax,
  pattern: '^[A-Za-z0-9._:/-]+$',
  description: `the agent's own id for this decision, 1 to ${limits.requestIdCharsMax} characters of A-Z a-z 0-9 . _ : / -; the same id is the same decision forever`,
});

export const PaymentIntentId = Type.String({
  minLength: 4,
  maxLength: limits.paymentIntentCharsMax,
  pattern: '^pi_[A-Za-z0-9_]+$',
  description: 'must be a Stripe payment intent id (pi_...)',
});

export const EffectId = Type.String({
  pattern: `^[0-9a-f]{${limits.effectIdHexChars}}$`,
  description: `the effect id Interlock gave the request: ${limits.effectIdHexChars} lowercase hex characters`,
});

const Amount = Type.Integer({
  minimum: 1,
  maximum: limits.refundCentsMax,
  description: `must be a whole number in the smallest currency unit (cents for USD, whole yen for JPY), from 1 to ${limits.refundCentsMax}`,
});

const Currency = Type.String({
  pattern: '^[A-Za-z]{3}$',
  description:
    "the payment's currency as the agent worked the amount out in, three letters as Stripe writes them (usd, jpy), capitals aside; " +
    'refused (422 currency_mismatch, nothing written or sent) unless it is the payment currency. Not part of the bound payload: the same request_id with or without it is the same request',
});

const Flag = Type.String({
  minLength: 1,
  maxLength: limits.flagCharsMax,
  pattern: '^[a-z0-9_-]+$',
  description: `lowercase letters, digits, _ and -, at most ${limits.flagCharsMax}`,
});

/** `POST /v1/refunds`. */
export const RefundRequestBodySchema = Type.Object(
  {
    request_id: RequestId,
    payment_intent: PaymentIntentId,
    amount: Amount,
    currency: Type.Optional(Currency),
    reason: Type.Optional(
      Type.String({
        maxLength: limits.reasonCharsMax,
        pattern: WELL_FORMED,
        description: `must be well-formed text of at most ${limits.reasonCharsMax} characters; shown to approvers`,
      }),
    ),
    flags: Type.Optional(
      Type.Array(Flag, { maxItems: limits.flagsMax, description: `must be a list of at most ${limits.flagsMax} flags; a set: order and repeats do not matter` }),
    ),
    context_url: Type.Optional(
      Type.String({
        maxLength: limits.contextUrlCharsMax,
        pattern: '^https?://[^\\s]+$',
        format: 'uri',
        description: `an http(s) URL of at most ${limits.contextUrlCharsMax} characters: the ticket or conversation behind the request, shown to approvers as a link`,
      }),
    ),
    on_behalf_of: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: limits.onBehalfOfCharsMax,
        pattern: '^[^\\s]+$',
        description:
          `the person the refund benefits, by their name in Interlock or their email address (no spaces, at most ${limits.onBehalfOfCharsMax} characters): ` +
          'that person may not approve it (compared without regard to case). Part of the bound payload',
      }),
    ),
  },
  {
    additionalProperties: false,
    description: 'a refund an agent asks for',
    examples: [
      {
        request_id: 'case-4471',
        payment_intent: 'pi_3QeXampLe0000000000000',
        amount: 2000,
        currency: 'usd',
        reason: 'cracked jar',
        flags: ['vip'],
        context_url: 'https://support.example/tickets/4471',
        on_behalf_of: 'jo@example.com',
      },
    ],
  },
);

const ChangeSchema = Type.Unsafe<Change>({
  type: 'object',
  required: ['field', 'was', 'now'],
  properties: { field: { type: 'string' }, was: {}, now: {} },
  description: 'a fact that changed since the request: what it was, what it is now',
});

const RepairSchema = Type.Unsafe<Repair>({
  type: 'object',
  required: ['code', 'set', 'why'],
  properties: {
    code: { type: 'string', enum: ['still_fits', 'refund_remaining'] },
    set: { type: 'object', properties: { amount: { type: 'integer' } }, additionalProperties: false },
    why: { type: 'string' },
  },
  description: 'a safe repair: `set` patches the request (a new amount), an empty `set` means the same, decided again',
});

const StatusSchema = Type.Unsafe<Status>({
  type: 'string',
  description:
    'COMMITTED, COMMITTED_BY_RETRY, COMMITTED_ON_QUERY, REAPPLIED_AFTER_QUERY, DUPLICATE_IGNORED, QUEUED, IN_FLIGHT, APPROVED, AMBIGUOUS, CLOSED, REFUSED:<code>, …',
});

/** The answer about one refund request, to POST and GET alike. */
export const RefundAnswerSchema = Type.Object(
  {
    request_id: RequestId,
    effect_id: EffectId,
    status: StatusSchema,
    why: Type.String({ description: 'the status in plain words' }),
    currency: Type.Union([Type.String(), Type.Null()], {
      description: "the payment's currency, which every amount of the answer is in (its smallest unit); null when the facts name none",
    }),
    refund: Type.Union([Type.String(), Type.Null()], { description: "Stripe's refund id once sent" }),
    waiting_for: Type.Union([Type.Unsafe<WaitingFor>({ type: 'string', enum: [...WAITING_FOR] }), Type.Null()], {
      description:
        'what a QUEUED request waits for: `person`, an approver must decide it; `stripe`, it waits its turn to reach Stripe within its rate limits, no person has it and nothing was sent yet. Null when it is not QUEUED',
    }),
    changes: Type.Array(ChangeSchema),
    repairs: Type.Array(RepairSchema),
    receipt: Type.String({ description: 'where the signed receipt is' }),
    decision: Type.Union(
      [
        Type.Object({
          action: Type.Unsafe<'approve' | 'reject' | 'repair'>({ type: 'string', enum: ['approve', 'reject', 'repair'] }),
          by: Type.String({ description: "the approver's display name" }),
          at: Type.String({ description: 'when, ISO 8601 UTC (the application clock)' }),
          reason: Type.Union([Type.String(), Type.Null()], { description: "a rejection's reason, in the approver's words" }),
        }),
        Type.Null(),
      ],
      { description: "a person's last decision on it, null when no person decided; a first approval of two is no decision" },
    ),
    approvals: Type.Union(
      [
        Type.Object({
          required: Type.Integer({ description: 'how many distinct people must approve it (2)' }),
          given: Type.Array(
            Type.Object({
              by: Type.String({ description: "the approver's display name" }),
              at: Type.String({ description: 'when, ISO 8601 UTC (the application clock)' }),
            }),
            { description: 'the approvals that count so far on what it shows now, oldest first: one expired or by someone no longer in the group does not' },
          ),
        }),
        Type.Null(),
      ],
      { description: 'for a request two distinct people must approve, the approvals so far (1 of 2 while it waits for the second); null when one approver decides it or no person has it' },
    ),
  },
  { description: '200 once final, 202 while QUEUED, APPROVED or IN_FLIGHT' },
);

const RequestPayloadSchema = Type.Object({
  payment_intent: Type.String(),
  amount: Type.Integer(),
  reason: Type.Optional(Type.String()),
  flags: Type.Array(Type.String()),
  context_url: Type.Optional(Type.String()),
  on_behalf_of: Type.Optional(Type.String()),
});

/** The body of every error answer, with the codes a route can answer under one HTTP status. */
export function errorBody(codes: readonly ErrorCode[]) {
  return Type.Object(
    {
      error: Type.Object({
        code: Type.Unsafe<ErrorCode>({ type: 'string', enum: [...codes] }),
        message: Type.String({ description: 'for a person; never exception text' }),
      }),
    },
    { description: codes.join(', ') },
  );
}

/** `/readyz` not ready: the error, and while the derived tables are rebuilt at start, how far. */
export const NotReadySchema = Type.Object(
  {
    error: errorBody(['not_ready', 'journal_unavailable']).properties.error,
    rebuild: Type.Optional(
      Type.Object(
        {
          reason: Type.Unsafe<'missing' | 'version' | 'ahead' | 'foreign'>({ type: 'string', enum: ['missing', 'version', 'ahead', 'foreign'], description: 'none yet, another views version, past the journal, or not this journal\'s' }),
          entries: Type.Integer({ description: 'journal entries folded so far' }),
          size: Type.Integer({ description: "the journal's size when the rebuild began" }),
          percent: Type.Number({ description: 'entries of size, to a tenth' }),
          seconds: Type.Number({ description: 'since the rebuild began' }),
        },
        { description: "while the views' derived tables are rebuilt at start" },
      ),
    ),
  },
  { description: 'not_ready, journal_unavailable' },
);

export const ConflictingPayloadSchema = Type.Object(
  {
    error: Type.Object({ code: Type.Unsafe<'conflicting_payload'>({ type: 'string', enum: ['conflicting_payload'] }), message: Type.String() }),
    status: Type.Unsafe<'REFUSED:conflicting_payload'>({ type: 'string', enum: ['REFUSED:conflicting_payload'] }),
    recorded: RequestPayloadSchema,
    offered: RequestPayloadSchema,
  },
  { description: 'conflicting_payload: the request id was used with another payload; nothing was written or sent' },
);

/**
 * Response schemas for a route: its answers, plus one error schema per HTTP status listing the
 * codes it can answer there (from ERROR_CODES).
 */
export function responses(answers: Record<number, TSchema>, codes: readonly ErrorCode[]): Record<number, TSchema> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) byStatus.set(ERROR_CODES[code], [...(byStatus.get(ERROR_CODES[code]) ?? []), code]);
  const out: Record<number, TSchema> = { ...answers };
  for (const [status, list] of byStatus) if (out[status] === undefined) out[status] = errorBody(list);
  return out;
}

/** An answer that is a CSV file rather than JSON: the document gives it under text/csv. */
export function csvAnswer(description: string) {
  return Type.Unsafe<string>({ description, content: { 'text/csv': { schema: Type.String({ description: 'CSV in UTF-8, a header line first' }) } } });
}

export const ReceiptSchema = Type.Object(
  {
    v: Type.Literal(RECEIPT_VERSION, { description: 'the receipt version, which says what the signature covers; a receipt without v is version 1' }),
    effect_id: EffectId,
    entries: Type.Array(openObject<Json>('one journal entry, hash-chained to the one before it')),
    signature: Type.String({
      description: 'base64url Ed25519 signature over the UTF-8 of the JSON ["interlock-receipt-v2",2,<effect_id>,<hash of the last entry or null>,<key_id>]',
    }),
    key_id: Type.String({ description: 'the key at /.well-known/interlock-keys that signed it' }),
  },
  { description: "an effect's whole chain, signed; verify it offline with npm run verify or the typed client" },
);

export const VerifyReportSchema = openObject<Json>('what the receipt proves: valid, signed, happened, once, under live authority, on facts that held, by whom, and each problem found', {
  valid: Type.Boolean(),
  signed: Type.Union([Type.Boolean(), Type.Null()]),
  problems: Type.Array(openObject<Json>('a problem: its code and a sentence')),
});

export const PublicKeySetSchema = Type.Object({
  keys: Type.Array(
    Type.Object({
      key_id: Type.String(),
      alg: Type.Unsafe<'Ed25519'>({ type: 'string', enum: ['Ed25519'] }),
      public_key_pem: Type.String({ description: 'SPKI PEM' }),
    }),
  ),
});

/** `GET /.well-known/interlock-checkpoint`. */
export const CheckpointAnswerSchema = Type.Object(
  {
    origin: Type.String({ description: 'interlock/journal/<journal id>/epoch/<n>: the journal and its epoch' }),
    size: Type.Integer({ minimum: 0, description: 'how many entries the checkpoint covers' }),
    head: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'the global chain after the last of them, hex' }),
    epoch: Type.Integer({ minimum: 0 }),
    signed_at_ms: Type.Integer({ description: 'when it was signed, Unix ms' }),
    key_id: Type.String({ description: 'the key at /.well-known/interlock-keys that signed it' }),
    note: Type.String({ description: 'the checkpoint as a C2SP signed note: origin, size, base64 head, a blank line, the signature line' }),
  },
  { description: 'the latest signed checkpoint; hold an export against it with npm run verify -- --journal <file> --checkpoint <note> --key <pem>' },
);

export const EffectParams = Type.Object({ effect_id: EffectId });
export const RequestParams = Type.Object({ request_id: RequestId });

/** `POST /api/session`. */
export const LoginBodySchema = Type.Object(
  {
    name: Type.String({ maxLength: limits.loginNameCharsMax, description: `text of at most ${limits.loginNameCharsMax} characters` }),
    password: Type.String({ maxLength: limits.loginPasswordCharsMax, description: `text of at most ${limits.loginPasswordCharsMax} characters` }),
  },
  { additionalProperties: false },
);

export const SessionInfoSchema = Type.Object({
  name: Type.String(),
  display_name: Type.String(),
  role: Type.Unsafe<Role>({ type: 'string', enum: [...ROLES] }),
  groups: Type.Array(Type.String()),
  csrf_token: Type.String({ description: 'send it as x-csrf-token on every call that changes anything' }),
  sandbox: Type.Boolean(),
  demo: Type.Boolean({ description: 'an agent named demo asks for refunds now and then (npm start on the embedded sandbox; INTERLOCK_DEMO=0 turns it off)' }),
  live: Type.Boolean({ description: 'refunds go to Stripe live mode and move real money (stripe.mode: live)' }),
});

/** `POST /api/items/:effect_id/decisions`. */
export const DecisionBodySchema = Type.Object(
  {
    action: oneOf(DECISION_ACTIONS, `one of ${DECISION_ACTIONS.join(', ')}`),
    escalation: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'the hash of the escalation you decide' }),
    repair_index: Type.Optional(Type.Integer({ minimum: 0, description: 'which repair to accept, from 0; only for action repair' })),
    reason: Type.Optional(
      Type.String({
        maxLength: limits.rejectReasonCharsMax * 4,
        pattern: WELL_FORMED,
        description: `why, for action reject or close: 1 to ${limits.rejectReasonCharsMax} characters after trimming; the agent is told it`,
      }),
    ),
  },
  { additionalProperties: false },
);

export const HistoryQuery = Type.Object({
  q: Type.Optional(
    Type.String({ maxLength: limits.searchCharsMax, description: `a request id or payment intent to look for, at most ${limits.searchCharsMax} characters` }),
  ),
});

const TIME_MS = Type.String({ pattern: '^[0-9]{1,16}$', description: 'a time in ms since the epoch' });
export const ScoreboardQuery = Type.Object({
  from_ms: Type.Optional(Type.Union([TIME_MS, Type.Literal('')])),
  to_ms: Type.Optional(Type.Union([TIME_MS, Type.Literal('')])),
  group: Type.Optional(
    Type.String({
      maxLength: limits.searchCharsMax,
      description: "a group in the config; finance may name any, an approver only one of their own (another is 403 forbidden): an approver's figures are those of the requests ever routed to their groups",
    }),
  ),
});

/** `POST /api/test/clock`, only with `test_mode: true`. */
export const ClockBodySchema = Type.Object(
  { advance_ms: Type.Integer({ minimum: 0, description: 'a whole number of ms, 0 or more' }) },
  { additionalProperties: false },
);

export const InboxItemSchema = openObject<Json>('an open escalation: the request, why, facts, changes, repairs, group, level, deadline, and the escalation hash a decision names');
export const HistoryItemSchema = openObject<Json>('a finished or closed item: the request, its status, how it ended (outcome) and why a person rejected it (reject_reason), who decided, the refund and whether Stripe confirmed it');
const MinorUnits = Type.Integer({ description: 'in the smallest currency unit, as Stripe counts it (cents for USD, whole yen for JPY)' });
export const MoneyFiguresSchema = Type.Object(
  {
    refunded_minor: MinorUnits,
    refunded_no_person_minor: MinorUnits,
    refunded_after_person_minor: MinorUnits,
    repaired_minor: MinorUnits,
    rejected_minor: MinorUnits,
    refused_stale_minor: MinorUnits,
    failed_at_stripe_minor: MinorUnits,
    exposure_minor: MinorUnits,
    exposure_queued_minor: MinorUnits,
    exposure_waiting_stripe_minor: MinorUnits,
    exposure_approved_minor: MinorUnits,
  },
  { description: "one currency's money figures; a request counts at the amount it asked for, once" },
);
export const ScoreboardSchema = openObject<Json>("finance's figures, all recomputable from the journal alone", {
  sla_breaches_missed_by_group: Type.Record(Type.String(), Type.Integer(), { description: 'SLA breaches by the group that missed the deadline' }),
  money: Type.Record(Type.String(), MoneyFiguresSchema, { description: 'money by currency (lowercase ISO code, or unknown), never summed across currencies' }),
});
export const ItemDetailSchema = openObject<Json>('the request, facts then and now, changes, repairs, the journal history, the receipt verification, whether you may decide');

// Reconciliation with Stripe (GET and POST /api/reconciliation): a run compares the journal with
// Stripe's refunds for a period; its result is a reading of Stripe, kept apart from the journal.

const TIME = Type.Integer({ minimum: 0, maximum: 8_640_000_000_000_000, description: 'a time in ms since the epoch' });

/** `POST /api/reconciliation`. */
export const ReconciliationStartSchema = Type.Object(
  {
    from_ms: TIME,
    to_ms: Type.Integer({
      minimum: 0,
      maximum: 8_640_000_000_000_000,
      description: `the end of the period in ms since the epoch (not in it), after from_ms and at most ${limits.reconcilePeriodMsMax / 86_400_000} days later`,
    }),
  },
  { additionalProperties: false },
);

export const ReconciliationRunParams = Type.Object({
  run_id: Type.String({ pattern: '^rec_[0-9a-f]{16}$', description: 'a run id as POST /api/reconciliation answered it (rec_ and 16 hex characters)' }),
});

const NullableString = Type.Union([Type.String(), Type.Null()]);
const NullableInteger = Type.Union([Type.Integer(), Type.Null()]);

/** One refund of a reconciliation, as each side has it (null where a side has nothing). Money in the currency's smallest unit. */
export const ReconciliationRowSchema = Type.Object({
  payment_intent: Type.String(),
  effect_id: Type.Union([Type.String(), Type.Null()], { description: "the Interlock item; null for a refund Interlock did not make" }),
  request_id: NullableString,
  agent: NullableString,
  currency: NullableString,
  journal_refund: Type.Union([Type.String(), Type.Null()], { description: 'the Stripe refund id the journal recorded with COMMITTED' }),
  journal_amount: NullableInteger,
  journal_at_ms: Type.Union([Type.Integer(), Type.Null()], { description: 'when the journal recorded COMMITTED (wall clock)' }),
  stripe_refund: NullableString,
  stripe_amount: NullableInteger,
  stripe_status: NullableString,
  stripe_created_ms: NullableInteger,
  payment_items: Type.Array(Type.String(), { description: 'Interlock items on the same payment (effect ids), to open one from a refund by hand' }),
});

const CategorySchema = Type.Object({
  count: Type.Integer({ description: 'every refund in the category; rows holds the first of them' }),
  amounts: Type.Record(Type.String(), Type.Integer(), { description: 'the sum per currency (never added across currencies); Stripe amount where Stripe has one' }),
  rows: Type.Array(ReconciliationRowSchema, { description: `at most ${limits.reconcileRowsPerCategoryMax}` }),
});

const categories = Object.fromEntries(RECONCILIATION_CATEGORIES.map((category) => [category, CategorySchema])) as Record<
  (typeof RECONCILIATION_CATEGORIES)[number],
  typeof CategorySchema
>;

export const ReconciliationResultSchema = Type.Object({
  ...categories,
  slack_ms: Type.Integer({ description: 'how far across the period edges each side was looked for' }),
  payment_intents: Type.Integer({ description: 'payment intents Interlock has seen, whose refunds were listed' }),
  refunds_listed: Type.Integer(),
});

const runFields = {
  id: ReconciliationRunParams.properties.run_id,
  from_ms: Type.Integer(),
  to_ms: Type.Integer(),
  state: oneOf(RECONCILIATION_STATES, RECONCILIATION_STATES.join(', ')),
  started_by: Type.String(),
  started_at_ms: Type.Integer(),
  finished_at_ms: NullableInteger,
  progress: Type.Object({
    phase: oneOf(RECONCILIATION_PHASES, RECONCILIATION_PHASES.join(', ')),
    payment_intents_done: Type.Integer(),
    payment_intents_total: Type.Union([Type.Integer(), Type.Null()], { description: 'null until the journal has been read' }),
    refunds_listed: Type.Integer(),
  }),
  error: Type.Union([Type.String(), Type.Null()], { description: 'why a failed run stopped, for a person' }),
  counts: Type.Union([Type.Record(Type.String(), Type.Integer()), Type.Null()], { description: 'refunds per category, once done' }),
};

/** A run without its rows: the list of runs. */
export const ReconciliationRunSchema = Type.Object(runFields);
/** A run with its result (null until done). */
export const ReconciliationRunDetailSchema = Type.Object({ ...runFields, result: Type.Union([ReconciliationResultSchema, Type.Null()]) });

/** The ledger's filter: the period, agent, group, status and currency asked for; an empty value asks for everything. */
const ledgerFilter = {
  from_ms: Type.Optional(Type.Union([TIME_MS, Type.Literal('')])),
  to_ms: Type.Optional(Type.Union([TIME_MS, Type.Literal('')])),
  agent: Type.Optional(Type.String({ maxLength: 64, pattern: '^[a-z0-9._-]*$', description: 'an agent name: 1 to 64 of a-z, 0-9, ".", "_", "-"' })),
  group: Type.Optional(Type.String({ maxLength: limits.searchCharsMax, description: 'a group in the config' })),
  status: Type.Optional(Type.String({ maxLength: 64, description: 'a status as agents are told it: COMMITTED, QUEUED, CLOSED, REFUSED:stale_premise, …' })),
  currency: Type.Optional(Type.String({ pattern: '^([a-z]{3})?$', description: 'a currency as Stripe writes it: three lowercase letters (usd, jpy)' })),
  outcome: Type.Optional(oneOf(['', ...LEDGER_OUTCOMES], `how the request ended: one of ${LEDGER_OUTCOMES.join(', ')}`)),
};

/** `GET /api/ledger.csv` and `GET /api/ledger/totals`: the filter only; both cover every row of it, unpaged. */
export const LedgerFilterQuery = Type.Object(ledgerFilter, { additionalProperties: false });

/** `GET /api/ledger`: the filter, and the page (a cursor from the page before, and its size). */
export const LedgerQuery = Type.Object(
  {
    ...ledgerFilter,
    cursor: Type.Optional(Type.String({ maxLength: 64, description: 'the next_cursor of the page before, as it was given' })),
    limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,3}$', description: `rows per page, 1 to ${limits.ledgerPageRowsMax}` })),
  },
  { additionalProperties: false },
);

const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** One request in the ledger (shared/ledger.ts `LedgerRow`). */
export const LedgerRowSchema = Type.Object(
  {
    request_id: Type.String(),
    agent: Type.String(),
    payment_intent: Type.String(),
    amount_asked_minor: Type.Integer({ description: 'what was asked, in the smallest currency unit of `currency` (cents for USD, whole yen for JPY)' }),
    amount_sent_minor: nullable(
      Type.Integer({ description: 'what Stripe refunded, in the same unit; null until a refund landed, and null for one Stripe reported failed or canceled (see amount_failed_minor)' }),
    ),
    currency: nullable(Type.String()),
    status: Type.String({ description: 'the status the agent is told' }),
    decided_by_kind: nullable(oneOf(DECIDER_KINDS, 'policy or person')),
    decided_by: nullable(Type.String({ description: "the person's display name, or policy" })),
    decided_by_login: nullable(Type.String({ description: "the person's login name" })),
    policy_rules: Type.Array(Type.String()),
    decided_at_ms: nullable(Type.Integer()),
    refund_id: nullable(Type.String()),
    confirmation: oneOf(LEDGER_CONFIRMATIONS, "where Stripe's confirmations stand"),
    confirmed_via: nullable(Type.String({ description: 'webhook or lookup' })),
    effect_id: Type.String(),
    receipt_url: Type.String(),
    requested_at_ms: nullable(Type.Integer()),
    groups: Type.Array(Type.String()),
    repair_of: nullable(Type.String()),
    amount_failed_minor: nullable(
      Type.Integer({ description: "what was sent and Stripe then reported failed or canceled, in the currency's smallest unit: no money went back; null otherwise" }),
    ),
    outcome: oneOf(LEDGER_OUTCOMES, `how the request ended, from the journal (status stays what the agent is told): ${LEDGER_OUTCOMES.join(', ')}`),
    reject_reason: nullable(Type.String({ description: 'why a person rejected (or closed) it, in their words' })),
    approved_by_logins: Type.Array(Type.String(), {
      description:
        'every person whose approval sent it (or, not sent yet, approved it), by login, the earliest first: both for a refund two people approved, one for one approver; empty for the policy and when no approval sent it',
    }),
    beneficiary: nullable(Type.String({ description: "the person the refund is made for, as the agent named them in on_behalf_of (a login or an email); null when it named nobody" })),
  },
  { additionalProperties: false },
);

const OutcomeTotalSchema = Type.Object({ count: Type.Integer(), asked_minor: MinorUnits });

/** One currency's totals over a filter (shared/ledger.ts `LedgerCurrencyTotals`). */
export const LedgerCurrencyTotalsSchema = Type.Object(
  {
    count: Type.Integer({ description: 'requests in the currency' }),
    asked_minor: Type.Integer({ description: 'what they asked for, in the smallest currency unit' }),
    sent_minor: Type.Integer({ description: 'what Stripe refunded: sent, and not reported failed or canceled' }),
    failed_minor: Type.Integer({ description: 'what was sent and Stripe then reported failed or canceled: no money went back' }),
    by_outcome: Type.Object(Object.fromEntries(LEDGER_OUTCOMES.map((outcome) => [outcome, OutcomeTotalSchema])) as Record<(typeof LEDGER_OUTCOMES)[number], typeof OutcomeTotalSchema>, {
      description: 'each outcome: how many requests, and what they asked for',
    }),
  },
  { additionalProperties: false },
);

/** `GET /api/ledger/totals`. */
export const LedgerTotalsSchema = Type.Object({
  count: Type.Integer({ description: 'every row of the filter' }),
  currencies: Type.Record(Type.String(), LedgerCurrencyTotalsSchema, { description: 'per currency as Stripe writes it (unknown for a row with none), never added across currencies' }),
  now_ms: Type.Integer(),
});

export const LedgerPageSchema = Type.Object({
  rows: Type.Array(LedgerRowSchema),
  next_cursor: nullable(Type.String({ description: 'ask for the next page with it; null on the last page' })),
  now_ms: Type.Integer(),
});
