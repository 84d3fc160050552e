import { useRef, useState } from 'react';
import type { DecisionAnswer, DecisionBody, ItemDetail } from '../../shared/api.ts';
import type { Repair } from '../../shared/entries.ts';
import { callApi, messageOf } from './api-client.ts';
import type { PendingDecision } from './components/ConfirmDialog.tsx';

/** What the last decision from this page answered. */
export interface Outcome extends Pick<DecisionAnswer, 'status' | 'message'> {
  repair: Repair | null;
}

/**
 * The two-step decision of the item page: choose (opens the confirmation), then confirm (posts
 * the decision with the escalation the page shows). The answer's item replaces the page's.
 */
export function useDecision(effectId: string, detail: ItemDetail | null, show: (detail: ItemDetail) => void) {
  const [pending, setPending] = useState<PendingDecision | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const outcomeRef = useRef<HTMLDivElement>(null);

  const choose = (next: PendingDecision) => {
    setError(null);
    setPending(next);
  };

  const confirm = async () => {
    const escalation = detail?.item?.escalation;
    if (!pending || !escalation || busy) return;
    const body: DecisionBody = {
      action: pending.action,
      escalation,
      ...(pending.repairIndex === undefined ? {} : { repair_index: pending.repairIndex }),
    };
    setBusy(true);
    try {
      const answer = await callApi<DecisionAnswer>('POST', `/api/items/${effectId}/decisions`, body);
      show(answer.item);
      setOutcome({ status: answer.status, message: answer.message, repair: pending.action === 'repair' ? (pending.repair ?? null) : null });
      setPending(null);
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
    confirm: () => void confirm(),
    cancel: () => {
      if (!busy) setPending(null);
    },
    forget: () => setOutcome(null),
  };
}
