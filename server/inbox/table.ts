import type { DerivedRow } from '../../db/port/derived.ts';
import { isRefundRequest, type RefundRequest } from '../../shared/api.ts';
import { type Entry, type EntryKind, type EntryOf, MESSAGE_KINDS } from '../../shared/entries.ts';
import { isJsonObject, type Json, type JsonObject, plain } from '../../shared/json.ts';
import { statusRank } from '../journal/confirmations.ts';
import { isEntry, isKind } from '../journal/shapes.ts';
import { toolCommand } from '../tools.ts';
import { type ChainSummary, summaryState } from './summary.ts';

// The inbox's derived table: one row per chain the inbox folds (every refund request, whoever
// asked), keyed by effect id, ordered by when the chain last moved on the application clock (the
// done and closed lists' order), its body the chain's whole summary (summary.ts) with where the
// chain stands in the journal, so a chain read back from its row folds on as if never put away.

/** The inbox's view name in the derived tables. */
export const INBOX_VIEW = 'inbox';

/** A chain's summary as its row holds it: where the chain starts and ends in the journal, and whether it waits its turn. */
export interface HeldSummary {
  summary: ChainSummary;
  /** The seq of the chain's first entry the inbox folded. */
  headSeq: number;
  /** The seq of the last entry folded into `summary`. */
  lastSeq: number;
  /** A lone PROPOSED bound with no facts: waiting its turn for Stripe. */
  waitingTurn: boolean;
}

/** A damaged row: the body is no summary the inbox wrote. */
export class InboxRowError extends Error {
  readonly code = 'inbox_row_invalid';
}

/**
 * Still open work: anything a person or the server still has to do, which a reader of memory alone
 * may need (the queue, the sweeps' index, the reconciler, the figures). Open: a request waiting its
 * turn, a send under way, a refund sent and not yet confirmed final by Stripe (the reconciler looks
 * it up), an ambiguous chain never committed, even once a person closed it (AMBIGUOUS waits for a
 * person to settle it with Stripe; Interlock never resolves it, `interlock_ambiguous_items` counts
 * every one from memory, and such chains are rare), a chain waiting for a person or owed a send, an
 * escalation or a step, and one closed by a repair (its repair's chain may still be owed: whether it
 * exists is another chain's fact, so the row stays open, and a start holds it only while it does
 * not, `InboxViewOptions.repairBegun`). Finished for good: sent and confirmed final, closed by a
 * rejection, or refused for good before a send (Stripe knows no such payment: the agent was told,
 * no person is asked, no sweep has work on it).
 */
export function isOpenSummary(held: Pick<HeldSummary, 'summary' | 'waitingTurn'>): boolean {
  const s = held.summary;
  if (held.waitingTurn || s.openDispatch) return true;
  if (s.committed !== null) return !s.confirmations.some((status) => statusRank(status) > 0);
  if (s.ambiguous) return true;
  if (s.refusedForGood && summaryState(s) === 'NEW') return false;
  return s.closedBy === null || s.closedBy.decision === 'repair';
}

/** A chain closed by a repair: it needs no more work once its repair's chain exists. */
export function closedByRepair(summary: ChainSummary): boolean {
  return summary.closedBy?.decision === 'repair' && summary.openDispatch === false && summary.committed === null && !summary.ambiguous;
}

/** The table row of a chain's summary. */
export function inboxRow(held: HeldSummary): DerivedRow {
  const s = held.summary;
  const body: JsonObject = {
    head_seq: held.headSeq,
    last_seq: held.lastSeq,
    waiting_turn: held.waitingTurn,
    effect_id: s.effectId,
    agent: s.agent,
    request: s.request,
    currency: s.currency,
    open_dispatch: s.openDispatch,
    committed: plain(s.committed),
    ambiguous: s.ambiguous,
    refused_for_good: s.refusedForGood,
    closed_by: plain(s.closedBy),
    latest: plain(s.latest),
    missed_due_ms: s.missedDueMs,
    breached: s.breached,
    asked_at_ms: s.askedAtMs,
    http_request_id: s.httpRequestId,
    waiting_since_ms: s.waitingSinceMs,
    moved_from: s.movedFrom,
    latest_decision: plain(s.latestDecision),
    // Earliest approval first: the order the approvals are named in.
    latest_approvers: [...s.latestApprovers].map(([by, atMs]) => [by, atMs]),
    owes_since_decision: s.owesSinceDecision,
    escalated: s.escalated,
    groups: [...s.groups].sort(),
    last_dispatch_lease: s.lastDispatchLease,
    last_refusal: plain(s.lastRefusal),
    confirmations: s.confirmations,
    updated_at_ms: s.updatedAtMs,
  };
  return { key: s.effectId, order: s.updatedAtMs, open: isOpenSummary(held), body };
}

/** Reads a row's body field by field, failing on the first that is not what the inbox wrote. */
class BodyReader {
  constructor(
    readonly key: string,
    readonly body: JsonObject,
  ) {}

  fail(field: string): never {
    throw new InboxRowError(`the derived inbox row ${this.key} has no valid ${field}; stop the server and rebuild the views' tables from the journal: ${toolCommand('rebuild-views', '--db <file>')}`);
  }

  num(field: string): number {
    const value = this.body[field];
    return typeof value === 'number' ? value : this.fail(field);
  }

  numOrNull(field: string): number | null {
    const value = this.body[field];
    return value === null ? null : typeof value === 'number' ? value : this.fail(field);
  }

  json(field: string): Json {
    const value = this.body[field];
    return value === undefined ? this.fail(field) : value;
  }

  str(field: string): string {
    const value = this.body[field];
    return typeof value === 'string' ? value : this.fail(field);
  }

  strOrNull(field: string): string | null {
    const value = this.body[field];
    return value === null ? null : typeof value === 'string' ? value : this.fail(field);
  }

  bool(field: string): boolean {
    const value = this.body[field];
    return typeof value === 'boolean' ? value : this.fail(field);
  }

  strings(field: string): string[] {
    const value = this.body[field];
    if (!Array.isArray(value)) return this.fail(field);
    return value.map((item) => (typeof item === 'string' ? item : this.fail(field)));
  }

  entryOrNull<K extends EntryKind>(field: string, kind: K): EntryOf<K> | null {
    const value = this.body[field];
    if (value === null || value === undefined) return value === null ? null : this.fail(field);
    return isEntry(value) && isKind(value, kind) ? value : this.fail(field);
  }

  anyEntryOrNull(field: string): Entry | null {
    const value = this.body[field];
    if (value === null) return null;
    return value !== undefined && isEntry(value) ? value : this.fail(field);
  }

  approvers(): Map<string, number> {
    const value = this.body.latest_approvers;
    if (!Array.isArray(value)) return this.fail('latest_approvers');
    const approvers = new Map<string, number>();
    for (const pair of value) {
      if (!Array.isArray(pair) || typeof pair[0] !== 'string' || typeof pair[1] !== 'number') return this.fail('latest_approvers');
      approvers.set(pair[0], pair[1]);
    }
    return approvers;
  }

  movedFrom(): ChainSummary['movedFrom'] {
    const value = this.body.moved_from;
    if (value === null) return null;
    if (!isJsonObject(value) || typeof value.group !== 'string' || typeof value.atMs !== 'number' || (value.dueMs !== null && typeof value.dueMs !== 'number')) return this.fail('moved_from');
    return { group: value.group, dueMs: value.dueMs, atMs: value.atMs };
  }

  request(): RefundRequest | null {
    const value = this.body.request;
    if (value === null) return null;
    return value !== undefined && isRefundRequest(value) ? value : this.fail('request');
  }
}

/** A chain's summary read back from its row; a body that is no summary fails (InboxRowError). */
export function heldOfRow(row: DerivedRow): HeldSummary {
  const b = new BodyReader(row.key, row.body);
  const summary: ChainSummary = {
    effectId: b.str('effect_id'),
    agent: b.strOrNull('agent'),
    request: b.request(),
    currency: b.strOrNull('currency'),
    openDispatch: b.bool('open_dispatch'),
    committed: b.entryOrNull('committed', 'COMMITTED'),
    ambiguous: b.bool('ambiguous'),
    refusedForGood: b.bool('refused_for_good'),
    closedBy: b.entryOrNull('closed_by', 'DECIDED'),
    latest: b.entryOrNull('latest', 'ESCALATED'),
    missedDueMs: b.numOrNull('missed_due_ms'),
    breached: b.bool('breached'),
    askedAtMs: b.numOrNull('asked_at_ms'),
    httpRequestId: b.strOrNull('http_request_id'),
    waitingSinceMs: b.numOrNull('waiting_since_ms'),
    movedFrom: b.movedFrom(),
    latestDecision: b.entryOrNull('latest_decision', 'DECIDED'),
    latestApprovers: b.approvers(),
    owesSinceDecision: b.bool('owes_since_decision'),
    escalated: b.bool('escalated'),
    groups: new Set(b.strings('groups')),
    lastDispatchLease: b.json('last_dispatch_lease'),
    lastRefusal: b.anyEntryOrNull('last_refusal'),
    confirmations: b.strings('confirmations'),
    updatedAtMs: b.num('updated_at_ms'),
  };
  if (summary.effectId !== row.key) b.fail('effect_id');
  return { summary, headSeq: b.num('head_seq'), lastSeq: b.num('last_seq'), waitingTurn: b.bool('waiting_turn') };
}

const MESSAGE_KIND_SET: ReadonlySet<string> = new Set(MESSAGE_KINDS);

/** An entry the inbox folds: none of a message's chain (the outbox's), of an epoch's first entry or of a config reload. */
export function foldedByInbox(entry: Entry): boolean {
  return !MESSAGE_KIND_SET.has(entry.kind) && entry.kind !== 'EPOCH' && entry.kind !== 'CONFIG';
}

/** Whether a chain waits its turn for Stripe once `entry` is folded into `summary` (given before the fold): only its first PROPOSED, bound with no facts, can make it wait. */
export function waitsAfter(summary: ChainSummary, entry: Entry): boolean {
  return summary.agent === null && entry.kind === 'PROPOSED' && entry.lease === null && entry.premises === null;
}
