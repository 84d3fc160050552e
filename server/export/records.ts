import type { Entry } from '../../shared/entries.ts';
import { isJsonObject, type Json, type JsonObject } from '../../shared/json.ts';
import { currentStatus } from '../refunds/answers.ts';
import { boundRequest } from '../inbox/state.ts';
import { refundOf } from '../inbox/summary.ts';
import { allOf, firstOf, lastOf } from '../journal/chain.ts';
import { isEntry } from '../journal/shapes.ts';
import type { Period, ReadReceipt } from './read-journal.ts';
import { exportLimits } from './limits.ts';
import { effectAmountOf } from '../refunds/effect.ts';

// What every format exports, as flat rows with stable keys in a fixed order: one row per receipt
// (an effect's chain as it stood at the period's end) and one per decision a person made in the
// period. No key is a reserved word of SQL or BigQuery (no `by`, `group`, `hash`, `from`, `to`),
// so the rows load into a warehouse table as they are.

/** One receipt: who asked, what was sent under whose authority, what Stripe said, and whether it verifies. */
export interface ReceiptRecord {
  record: 'receipt';
  /** `r.<effect id>.<24 hex of the last entry's hash>`: one version of one receipt, the same on every export. */
  id: string;
  effect_id: string;
  request_id: string | null;
  agent: string | null;
  payment_intent: string | null;
  currency: string | null;
  amount_asked_cents: number | null;
  amount_sent_cents: number | null;
  /** What an agent is told for this chain (COMMITTED, QUEUED, CLOSED, REFUSED:<code>, …); null when an entry is unreadable. */
  status: string | null;
  /** The code of the chain's latest refusal (stale_premise, lease, …), whatever came after it; null when none was refused. */
  refusal: string | null;
  /** Whose authority the send ran under: `policy` or the person who approved it; null when nothing was sent. */
  authority: string | null;
  refund: string | null;
  /** The latest status Stripe confirmed for the refund (pending, succeeded, failed, canceled). */
  confirmation: string | null;
  entry_count: number;
  first_at_ms: number | null;
  last_at_ms: number | null;
  last_hash: string | null;
  key_id: string;
  verified: boolean;
  /** Why it does not verify, `code: message` for each problem the verifier found; empty when it verifies. */
  verify_problems: string[];
  /** The signed receipt as `npm run verify` reads it. */
  receipt_json: string;
}

/** One decision a person made on an item, with the verification of the receipt it is part of. */
export interface DecisionRecord {
  record: 'decision';
  /** `d.<effect id>.<24 hex of the DECIDED entry's hash>`. */
  id: string;
  effect_id: string;
  request_id: string | null;
  decided_at_ms: number;
  decided_by: string;
  decision: string;
  group_name: string;
  reason: string | null;
  /** The request a repair became, for a repair. */
  repair_request_id: string | null;
  amount_asked_cents: number | null;
  currency: string | null;
  verified: boolean;
  verify_problems: string[];
}

/** A receipt and the decisions of the period in it. */
export interface ExportRecords {
  receipt: ReceiptRecord;
  decisions: DecisionRecord[];
  /** The receipt's entries, well formed or not, for formats that carry one event per entry. */
  entries: Json[];
}

const shortHash = (hash: string | null): string => (hash ?? 'none').slice(0, exportLimits.recordIdHashHexChars);

/** The rows of one receipt read from the journal: pure, so the same receipt gives the same rows on every export. */
export function exportRecords(read: ReadReceipt, period: Period): ExportRecords {
  const { effectId, entries, receipt, report, journalProblem } = read;
  const objects = entries.filter(isJsonObject);
  const whole = objects.filter(isEntry);
  const chain: Entry[] | null = whole.length === entries.length ? whole : null;
  const first = objects[0];
  const last = objects.at(-1);
  const lastHash = typeof last?.hash === 'string' ? last.hash : null;
  const request = chain === null ? null : boundRequest(chain);
  const facts = isJsonObject(first?.premises) ? first.premises : null;
  const verifyProblems = [...report.problems.map((problem) => `${problem.code}: ${problem.message}`), ...(journalProblem === null ? [] : [journalProblem])];
  const common = {
    request_id: request?.id ?? null,
    currency: text(facts?.currency),
    verified: report.valid && journalProblem === null,
    verify_problems: verifyProblems,
  };
  const receiptRecord: ReceiptRecord = {
    record: 'receipt',
    id: `r.${effectId}.${shortHash(lastHash)}`,
    effect_id: effectId,
    request_id: common.request_id,
    agent: request?.agent ?? text(first?.agent),
    payment_intent: request?.payment_intent ?? null,
    currency: common.currency,
    amount_asked_cents: request?.amount ?? null,
    amount_sent_cents: chain === null ? null : amountSent(chain),
    status: chain === null ? null : currentStatus(chain),
    refusal: chain === null ? null : (lastOf(chain, 'REFUSED')?.code ?? null),
    authority: chain === null ? null : authorityOf(chain),
    refund: chain === null ? null : refundIdOf(chain),
    confirmation: chain === null ? null : (lastOf(chain, 'CONFIRMED')?.status ?? null),
    entry_count: entries.length,
    first_at_ms: number(first?.ts_ms),
    last_at_ms: number(last?.ts_ms),
    last_hash: lastHash,
    key_id: receipt.key_id,
    verified: common.verified,
    verify_problems: verifyProblems,
    receipt_json: JSON.stringify(receipt),
  };
  const decided = objects.filter((entry) => entry.kind === 'DECIDED' && inPeriod(entry, period));
  const decisions = decided.map((entry) => decisionRecord(effectId, entry, request?.amount ?? null, common));
  return { receipt: receiptRecord, decisions, entries };
}

function decisionRecord(
  effectId: string,
  entry: JsonObject,
  amountAskedCents: number | null,
  common: { request_id: string | null; currency: string | null; verified: boolean; verify_problems: string[] },
): DecisionRecord {
  const repair = isJsonObject(entry.repair) ? entry.repair : null;
  return {
    record: 'decision',
    id: `d.${effectId}.${shortHash(text(entry.hash))}`,
    effect_id: effectId,
    request_id: common.request_id,
    decided_at_ms: number(entry.at_ms) ?? number(entry.ts_ms) ?? 0,
    decided_by: text(entry.by) ?? '',
    decision: text(entry.decision) ?? '',
    group_name: text(entry.group) ?? '',
    reason: text(entry.reason),
    repair_request_id: text(repair?.request_id),
    amount_asked_cents: amountAskedCents,
    currency: common.currency,
    verified: common.verified,
    verify_problems: common.verify_problems,
  };
}

/** A decision belongs to the period its entry was journaled in. */
function inPeriod(entry: JsonObject, period: Period): boolean {
  return typeof entry.ts_ms === 'number' && entry.ts_ms >= period.fromMs && entry.ts_ms < period.toMs;
}

/** The send that landed (the last DISPATCHED before the first COMMITTED), else the latest send. */
function sendOf(chain: readonly Entry[]) {
  const commit = chain.findIndex((entry) => entry.kind === 'COMMITTED');
  return lastOf(commit < 0 ? chain : chain.slice(0, commit), 'DISPATCHED');
}

/**
 * Whose authority the send ran under, as the DISPATCHED recorded it: the lease it carried names
 * the person (or `policy`). It is read from the send, never from a later entry, so a chain that
 * grows afterwards does not change who authorised what was sent.
 */
function authorityOf(chain: readonly Entry[]): string | null {
  const lease = sendOf(chain)?.lease;
  return isJsonObject(lease) && typeof lease.by === 'string' ? lease.by : null;
}

function amountSent(chain: readonly Entry[]): number | null {
  if (firstOf(chain, 'COMMITTED') === undefined) return null;
  return effectAmountOf(sendOf(chain)?.effect);
}

function refundIdOf(chain: readonly Entry[]): string | null {
  const commit = firstOf(chain, 'COMMITTED');
  return commit === undefined ? (allOf(chain, 'CONFIRMED')[0]?.refund ?? null) : refundOf(commit);
}

function text(value: Json | undefined): string | null {
  return typeof value === 'string' ? value : null;
}

function number(value: Json | undefined): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}
