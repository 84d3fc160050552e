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
] as const satisfies readonly (keyof LedgerRow)[];

/** One page of the ledger, newest request first; `next_cursor` asks for the rows after it, null on the last page. */
export interface LedgerPage {
  rows: LedgerRow[];
  next_cursor: string | null;
  now_ms: number;
}

// Every field of a row is a column: a field added to LedgerRow and not here does not compile.
type ColumnsLeftOut = Exclude<keyof LedgerRow, (typeof LEDGER_COLUMNS)[number]>;
const everyFieldIsAColumn: [ColumnsLeftOut] extends [never] ? true : never = true;
void everyFieldIsAColumn;
