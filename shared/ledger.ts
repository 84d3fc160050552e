// The refund ledger's closed sets of words and its columns: one row per request, as finance reads
// it (GET /api/ledger, GET /api/ledger.csv and the Ledger page). No I/O.

/**
 * Where Stripe stands on a row's refund: `not_sent` (nothing landed), `unconfirmed` (sent, no
 * word from Stripe yet), or the refund status that stands among Stripe's confirmations
 * (`succeeded`, `failed`, `canceled`; any status still moving reads `pending`).
 */
export const LEDGER_CONFIRMATIONS = ['not_sent', 'unconfirmed', 'pending', 'succeeded', 'failed', 'canceled'] as const;
/** One confirmation state of a ledger row. */
export type LedgerConfirmation = (typeof LEDGER_CONFIRMATIONS)[number];

/**
 * How a request ended, for finance, from its journal alone (the agent's `status` says it in the
 * agent's words; `CLOSED` there is any of rejected, repaired and closed):
 * - `open`: not settled yet: waiting its turn, for a person, approved and not sent yet, or being sent;
 * - `refunded`: sent to Stripe, and Stripe has not reported the refund failed;
 * - `failed_at_stripe`: sent, then reported `failed` or `canceled` by Stripe: no money went back;
 * - `rejected`: a person rejected it; never sent;
 * - `repaired`: a person accepted a repair instead: a new request (its `repair_of` names this one)
 *   replaced it, and this one was never sent;
 * - `refused`: refused for good with no person (Stripe knows no such payment); never sent;
 * - `ambiguous`: a crash left it unknowable whether the send reached Stripe; never sent again, and
 *   it waits for a person to close it;
 * - `closed`: an ambiguous request a person closed; never sent again (whether the first send
 *   landed is for reconciliation with Stripe to say).
 */
export const LEDGER_OUTCOMES = ['open', 'refunded', 'failed_at_stripe', 'rejected', 'repaired', 'refused', 'ambiguous', 'closed'] as const;
/** One outcome of a ledger row. */
export type LedgerOutcome = (typeof LEDGER_OUTCOMES)[number];

/** True for an outcome of the closed list. */
export function isLedgerOutcome(value: string): value is LedgerOutcome {
  return (LEDGER_OUTCOMES as readonly string[]).includes(value);
}

/** Who decided a request: the policy's rules with no person, or a person. */
export const DECIDER_KINDS = ['policy', 'person'] as const;
/** One kind of decider. */
export type DeciderKind = (typeof DECIDER_KINDS)[number];

/**
 * One request in the ledger. Money is in the smallest currency unit of `currency`, as Stripe
 * counts it (cents for USD, whole yen for JPY), hence `_minor`; times are application-clock ms.
 */
export interface LedgerRow {
  request_id: string;
  agent: string;
  payment_intent: string;
  amount_asked_minor: number;
  /**
   * What Stripe refunded for it; null until a refund landed, and null for a refund Stripe then
   * reported failed or canceled (no money went back: `amount_failed_minor` holds it).
   */
  amount_sent_minor: number | null;
  /** The payment's currency as Stripe writes it (`usd`, `jpy`), from the facts read when it was asked. */
  currency: string | null;
  /** The status the agent is told (`GET /v1/refunds/:request_id`). */
  status: string;
  decided_by_kind: DeciderKind | null;
  /** The person's display name, or `policy`; null while nobody has decided. */
  decided_by: string | null;
  /** The person's login name; null for the policy. */
  decided_by_login: string | null;
  /** The rules the policy cleared it under; empty for a person. */
  policy_rules: string[];
  decided_at_ms: number | null;
  refund_id: string | null;
  confirmation: LedgerConfirmation;
  /** How the confirmation that stands arrived: `webhook` or `lookup`. */
  confirmed_via: string | null;
  effect_id: string;
  /** The signed receipt of the request's journal chain. */
  receipt_url: string;
  requested_at_ms: number | null;
  /** Every group it was routed to, in order. */
  groups: string[];
  /** For a repair a person accepted: the request it repairs. */
  repair_of: string | null;
  /** What was sent and Stripe then reported `failed` or `canceled`: no money went back. Null otherwise. */
  amount_failed_minor: number | null;
  /** How the request ended, from the journal; `status` stays what the agent is told. */
  outcome: LedgerOutcome;
  /** Why a person rejected (or closed) it, in their words; null otherwise, and for a decision journaled before reasons were kept. */
  reject_reason: string | null;
  /**
   * Every person whose approval sent it (or, not sent yet, approved it), by login, the earliest
   * first: both for a refund two people approved (four-eyes), the one for one approver; empty for
   * the policy and for a request no approval sent. `decided_by` names the last of them.
   */
  approved_by_logins: string[];
  /** The person the refund is made for, as the agent named them (`on_behalf_of`: a login or an email); null when it named nobody. */
  beneficiary: string | null;
}

/** The CSV's columns, in order: every field of a row, under its own name; a column added later goes after every earlier one. */
export const LEDGER_COLUMNS = [
  'request_id',
  'agent',
  'payment_intent',
  'amount_asked_minor',
  'amount_sent_minor',
  'currency',
  'status',
  'decided_by_kind',
  'decided_by',
  'decided_by_login',
  'policy_rules',
  'decided_at_ms',
  'refund_id',
  'confirmation',
  'confirmed_via',
  'effect_id',
  'receipt_url',
  'requested_at_ms',
  'groups',
  'repair_of',
  'amount_failed_minor',
  'outcome',
  'reject_reason',
] as const satisfies readonly (keyof LedgerRow)[];

/** Fields of a row added after the columns made for a spreadsheet: the CSV gives them after those, so every earlier column keeps its place. */
export const LEDGER_LATER_COLUMNS = ['approved_by_logins', 'beneficiary'] as const satisfies readonly (keyof LedgerRow)[];

/**
 * Columns the CSV adds after every field of a row, for a spreadsheet: the times as ISO-8601 UTC
 * (`2026-12-05T10:00:00.000Z`) and the amounts as decimals in the currency's own exponent (`20.00`
 * dollars, `3000` yen, `1.500` dinars; empty when the currency is not known). The JSON keeps ms
 * and minor units only.
 */
export const LEDGER_CSV_EXTRA_COLUMNS = ['requested_at', 'decided_at', 'amount_asked', 'amount_sent', 'amount_failed'] as const;
/** One column the CSV derives from a row. */
export type LedgerCsvExtraColumn = (typeof LEDGER_CSV_EXTRA_COLUMNS)[number];

/** The CSV's header, in order: a column added later goes after every earlier one. */
export const LEDGER_CSV_COLUMNS = [...LEDGER_COLUMNS, ...LEDGER_CSV_EXTRA_COLUMNS, ...LEDGER_LATER_COLUMNS] as const;

/** One outcome's share of a currency's totals. */
export interface LedgerOutcomeTotal {
  count: number;
  asked_minor: number;
}

/**
 * One currency's totals over every row of a filter, in its smallest unit: what was asked, what
 * Stripe refunded (sent and not failed), what was sent and failed at Stripe, and per outcome.
 */
export interface LedgerCurrencyTotals {
  count: number;
  asked_minor: number;
  sent_minor: number;
  failed_minor: number;
  by_outcome: Record<LedgerOutcome, LedgerOutcomeTotal>;
}

/** `GET /api/ledger/totals`: per currency (a row with no currency under `unknown`), never added across currencies. */
export interface LedgerTotals {
  count: number;
  currencies: Record<string, LedgerCurrencyTotals>;
  now_ms: number;
}

/** One page of the ledger, newest request first; `next_cursor` asks for the rows after it, null on the last page. */
export interface LedgerPage {
  rows: LedgerRow[];
  next_cursor: string | null;
  now_ms: number;
}

// Every field of a row is a column: a field added to LedgerRow and not here does not compile.
type ColumnsLeftOut = Exclude<keyof LedgerRow, (typeof LEDGER_COLUMNS)[number] | (typeof LEDGER_LATER_COLUMNS)[number]>;
const everyFieldIsAColumn: [ColumnsLeftOut] extends [never] ? true : never = true;
void everyFieldIsAColumn;
