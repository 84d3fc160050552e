import type { ChainState, DecisionShown, ItemDetail } from '../../shared/api.ts';
import type { LedgerOutcome } from '../../shared/ledger.ts';
import type { Decided } from '../../shared/entries.ts';

/**
 * What changed under an open item page, as the page tells the person: the live feed says the
 * item moved, and the page reads it again at once to say who decided, where it went, or what it
 * shows now. The server decides; this only names what the journal already says.
 */
export type LiveNews =
  /** The feed said the item moved; the page is reading what it is now (no decision may start meanwhile). */
  | { kind: 'checking' }
  /** Someone decided it: who, what, when and why. */
  | { kind: 'decided'; decided: DecisionShown; state: ChainState; outcome: LedgerOutcome }
  /** It left the inbox with no person's decision (sent or closed by Interlock itself). */
  | { kind: 'finished'; state: ChainState; outcome: LedgerOutcome }
  /** It moved up to a group this person is not in. */
  | { kind: 'moved'; group: string; level: number }
  /**
   * It is shown again on new facts, with the repairs offered to this reader on them (none while
   * disputed, none to the person it is made for); `stillFits` when the same refund fits them, which
   * is approved as it is (an approval on the facts now), not offered as a repair.
   */
  | { kind: 'reshown'; repairs: number; stillFits: boolean }
  /** The page could not read the item again: the person asks for it. */
  | { kind: 'unread'; message: string };

/** The latest person's decision on the chain, if any. */
function lastDecided(detail: ItemDetail): Decided | null {
  for (let i = detail.history.length - 1; i >= 0; i--) {
    const entry = detail.history[i];
    if (entry?.kind === 'DECIDED') return entry;
  }
  return null;
}

/**
 * What a person must be told about the item read again (`after`) against the one they were
 * looking at (`before`); null when nothing they could act on changed (a fact read again, the same
 * escalation).
 */
export function newsOf(before: ItemDetail, after: ItemDetail, myGroups: readonly string[], displayName: (name: string) => string): LiveNews | null {
  const item = after.item;
  if (item === null) {
    const decided = lastDecided(after);
    // A decision the page has not shown yet: it came after the escalation the person was looking at.
    if (decided !== null && !before.history.some((e) => e.hash === decided.hash)) {
      return {
        kind: 'decided',
        state: after.state,
        outcome: after.outcome,
        decided: { action: decided.decision, by: decided.by, display_name: displayName(decided.by), at_ms: decided.at_ms, reason: decided.reason ?? null },
      };
    }
    return before.item === null && before.state === after.state ? null : { kind: 'finished', state: after.state, outcome: after.outcome };
  }
  if (before.item?.escalation === item.escalation) return null;
  if (before.item?.group !== item.group && !myGroups.includes(item.group)) return { kind: 'moved', group: item.group, level: item.level };
  const fits = item.repairs.filter((repair) => Object.keys(repair.set).length === 0).length;
  const offered = after.approval_block?.code === 'beneficiary' ? 0 : item.repairs.length - fits;
  return { kind: 'reshown', repairs: offered, stillFits: fits > 0 };
}

/** True while the news means the decision buttons must not be offered: the page is finding out what changed. */
export function holdsDecisions(news: LiveNews | null): boolean {
  return news?.kind === 'checking' || news?.kind === 'unread';
}
