import type { LedgerOutcome, LedgerRow } from '../../shared/ledger.ts';
import { isWithin, type ReadBound } from '../access/rules.ts';

/** Which rows a reader asked for, within what they may read (`within`); every field left out matches everything. */
export interface LedgerFilter extends ReadBound {
  /** Requests made at or after this time (application clock). */
  fromMs?: number;
  /** Requests made before this time. */
  toMs?: number;
  agent?: string;
  /** Requests ever routed to this group. */
  group?: string;
  /** The status the agent is told, exactly. */
  status?: string;
  currency?: string;
  /** How the request ended (`rejected`, `repaired`, …), whatever the agent was told. */
  outcome?: LedgerOutcome;
}

/** True when the row is one the filter asks for. A bound on the period leaves out rows with no request time. */
export function rowMatches(row: LedgerRow, filter: LedgerFilter): boolean {
  const at = row.requested_at_ms;
  if (filter.fromMs !== undefined && (at === null || at < filter.fromMs)) return false;
  if (filter.toMs !== undefined && (at === null || at >= filter.toMs)) return false;
  if (filter.agent !== undefined && row.agent !== filter.agent) return false;
  if (filter.group !== undefined && !row.groups.includes(filter.group)) return false;
  if (!isWithin(filter, row.groups)) return false;
  if (filter.status !== undefined && row.status !== filter.status) return false;
  if (filter.currency !== undefined && row.currency !== filter.currency) return false;
  if (filter.outcome !== undefined && row.outcome !== filter.outcome) return false;
  return true;
}

const CURSOR_PREFIX = 'ledger:v1:';
const CURSOR_SEQ = /^ledger:v1:([1-9][0-9]{0,15})$/;

/**
 * The cursor of the rows after this one: opaque to readers, it names the journal position of the
 * request's first entry. Requests made later sit above it, so paging on never skips or repeats a
 * row whatever is appended in between.
 */
export function encodeCursor(headSeq: number): string {
  return Buffer.from(`${CURSOR_PREFIX}${headSeq}`, 'utf8').toString('base64url');
}

/** The journal position a cursor names, or null for anything this ledger did not give out. */
export function decodeCursor(cursor: string): number | null {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const seq = CURSOR_SEQ.exec(text)?.[1];
  if (seq === undefined) return null;
  const headSeq = Number(seq);
  // Only the exact text given out: base64url decoding forgives stray characters.
  return Number.isSafeInteger(headSeq) && encodeCursor(headSeq) === cursor ? headSeq : null;
}
