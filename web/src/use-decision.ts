import { useRef, useState } from 'react';
import type { DecisionAnswer, DecisionBody, DecisionShown, ItemDetail } from '../../shared/api.ts';
import type { Repair } from '../../shared/entries.ts';
import { LANDED_STATUSES, type Status } from '../../shared/statuses.ts';
import { callApi, messageOf } from './api-client.ts';
import type { PendingDecision } from './components/ConfirmDialog.tsx';
import { noteOwnRepair } from './toasts.ts';

/** What the last decision from this page answered. */
export interface Outcome extends Pick<DecisionAnswer, 'status' | 'message'> {
  repair: Repair | null;
  /** Someone else's decision that came first, when this one lost the race. */
  decided: DecisionShown | null;
}

/** Statuses that mean this person's decision took effect and the item is off their plate: the page moves on. */
const FINISHED: ReadonlySet<Status> = new Set<Status>([...LANDED_STATUSES, 'REJECTED', 'CLOSED', 'APPROVED', 'IN_FLIGHT', 'QUEUED']);

/** True when a decision's answer finished the item for this person (anything else stays on the page to be read). */
export function finishedItem(status: Status): boolean {
  return FINISHED.has(status);
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

  const choose = (next: PendingDecision) => {
    setError(null);
    setPending(next);
  };

  const confirm = async (reason: string | undefined) => {
    const escalation = detail?.item?.escalation;
    if (!pending || !escalation || busy) return;
    const body: DecisionBody = {
      action: pending.action,
      escalation,
      ...(pending.repairIndex === undefined ? {} : { repair_index: pending.repairIndex }),
      ...(reason === undefined ? {} : { reason }),
    };
    setBusy(true);
    if (pending.action === 'repair') noteOwnRepair(pending.requestId);
    try {
      const answer = await callApi<DecisionAnswer>('POST', `/api/items/${effectId}/decisions`, body);
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
      setError(messageOf(caught));
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
  };
}
