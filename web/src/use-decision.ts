import { useRef, useState } from 'react';
import type { DecisionAction, DecisionAnswer, DecisionBody, DecisionShown, ItemDetail } from '../../shared/api.ts';
import type { Repair } from '../../shared/entries.ts';
import { LANDED_STATUSES, type Status } from '../../shared/statuses.ts';
import { ApiError, callApi, messageOf } from './api-client.ts';
import type { PendingDecision } from './components/ConfirmDialog.tsx';
import { formatMoney } from './format.ts';
import { noteOwnRepair } from './toasts.ts';

/** What the last decision from this page answered. */
export interface Outcome extends Pick<DecisionAnswer, 'status' | 'message'> {
  repair: Repair | null;
  /** Someone else's decision that came first, when this one lost the race. */
  decided: DecisionShown | null;
}

/**
 * Statuses that mean this person's decision took effect and the item is off their plate: the page
 * moves on. A first approval of two is one: the item waits for someone else, not for them.
 */
const FINISHED: ReadonlySet<Status> = new Set<Status>([...LANDED_STATUSES, 'REJECTED', 'CLOSED', 'APPROVED', 'IN_FLIGHT', 'QUEUED', 'PARTLY_APPROVED']);

/** True when a decision's answer finished the item for this person (anything else stays on the page to be read). */
export function finishedItem(status: Status): boolean {
  return FINISHED.has(status);
}

/** Each decision as a noun; a missing action does not compile. */
const DECISION_NOUNS: Record<DecisionAction, string> = { approve: 'approval', reject: 'rejection', repair: 'repair', close: 'closing' };

/** The decision in words, for a notice that says it was not sent: "your approval of $56.00 (request case-1)". */
export function decisionInWords(pending: PendingDecision): string {
  const amount = formatMoney(pending.amountCents, pending.currency);
  return `your ${DECISION_NOUNS[pending.action]} of ${amount} (request ${pending.requestId})`;
}

/**
 * Why a decision did not reach Interlock, when it did not: offline, nothing left the browser;
 * unreachable, the server may not have it, and the page shows what the journal says on reload.
 */
function unsentMessage(caught: unknown, pending: PendingDecision): string {
  if (!(caught instanceof ApiError) || caught.code !== 'network_error') return messageOf(caught);
  const words = decisionInWords(pending);
  return navigator.onLine
    ? `The server could not be reached, so ${words} may not have arrived. Nothing is sent without a record in Interlock: reload the item to see whether it was, then decide again if not.`
    : `You are offline: nothing was sent. Make ${words} again once you are back online.`;
}

/**
 * The two-step decision of the item page: choose (opens the confirmation), then confirm (posts
 * the decision with the escalation the page shows). The answer's item replaces the page's; when
 * the decision finished the item, `onFinished` is told instead of the page showing the outcome.
 */
export function useDecision(
  effectId: string,
  detail: ItemDetail | null,
  show: (detail: ItemDetail) => void,
  onFinished: (answer: DecisionAnswer, decided: PendingDecision) => boolean,
) {
  const [pending, setPending] = useState<PendingDecision | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const outcomeRef = useRef<HTMLDivElement>(null);
  /** The escalation shown when the confirmation opened: the decision is about that one, whatever the page shows later. */
  const shown = useRef<string | null>(null);

  const choose = (next: PendingDecision) => {
    setError(null);
    shown.current = detail?.item?.escalation ?? null;
    setPending(next);
  };

  const confirm = async (reason: string | undefined) => {
    const escalation = shown.current;
    if (!pending || !escalation || busy) return;
    // Offline, the call cannot leave the browser: say so before trying.
    if (!navigator.onLine) {
      setError(unsentMessage(new ApiError('network_error', '', 0), pending));
      return;
    }
    const body: DecisionBody = {
      action: pending.action,
      escalation,
      ...(pending.repairIndex === undefined ? {} : { repair_index: pending.repairIndex }),
      ...(reason === undefined ? {} : { reason }),
    };
    setBusy(true);
    if (pending.action === 'repair') noteOwnRepair(pending.requestId);
    try {
      const answer = await callApi<DecisionAnswer>('POST', `/api/items/${effectId}/decisions`, body, { unsent: decisionInWords(pending) });
      const decided = pending;
      setPending(null);
      if (finishedItem(answer.status) && onFinished(answer, decided)) return;
      show(answer.item);
      setOutcome({
        status: answer.status,
        message: answer.message,
        repair: decided.action === 'repair' ? (decided.repair ?? null) : null,
        decided: answer.decided ?? null,
      });
      // The buttons that opened the dialog may be gone: put the focus on what happened.
      requestAnimationFrame(() => outcomeRef.current?.focus());
    } catch (caught) {
      setError(unsentMessage(caught, pending));
    } finally {
      setBusy(false);
    }
  };

  return {
    pending,
    busy,
    error,
    outcome,
    outcomeRef,
    choose,
    confirm: (reason: string | undefined) => void confirm(reason),
    cancel: () => {
      if (!busy) setPending(null);
    },
    forget: () => setOutcome(null),
    /** The item moved under the page: a confirmation still open is about what it no longer is. */
    drop: () => {
      if (busy) return;
      setPending(null);
      setError(null);
    },
  };
}
