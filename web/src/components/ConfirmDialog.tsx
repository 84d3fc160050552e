import { useEffect, useRef } from 'react';
import type { DecisionAction } from '../../../shared/api.ts';
import type { Repair } from '../../../shared/entries.ts';
import { assertNever } from '../../../shared/statuses.ts';
import { formatMoney } from '../format.ts';

/** What is about to be decided, with everything the words need. */
export interface PendingDecision {
  action: DecisionAction;
  repairIndex?: number;
  repair?: Repair;
  amountCents: number;
  currency: string | null;
  paymentIntent: string;
  requestId: string;
}

interface Copy {
  title: string;
  body: string;
  confirm: string;
  danger: boolean;
}

/** The words of a confirmation: each names the amount and what happens to it. */
export function confirmCopy(p: PendingDecision): Copy {
  const amount = formatMoney(p.amountCents, p.currency);
  switch (p.action) {
    case 'approve':
      return {
        title: `Approve and send ${amount}?`,
        body: `Interlock sends one refund of ${amount} for payment ${p.paymentIntent} (request ${p.requestId}) to Stripe, after checking the facts again. If they changed, nothing is sent and the item comes back.`,
        confirm: `Send ${amount} refund`,
        danger: false,
      };
    case 'reject':
      return {
        title: `Reject the ${amount} refund?`,
        body: `The refund of ${amount} for payment ${p.paymentIntent} (request ${p.requestId}) is never sent. The agent is told it was rejected.`,
        confirm: `Reject ${amount} refund`,
        danger: true,
      };
    case 'repair': {
      const repaired = p.repair?.set.amount;
      const newAmount = repaired === undefined ? amount : formatMoney(repaired, p.currency);
      return {
        title: repaired === undefined ? `Decide ${amount} again?` : `Refund ${newAmount} instead of ${amount}?`,
        body: `${p.repair?.why ?? 'The suggested repair'}. The original ${amount} request is closed and a new request of ${newAmount} for payment ${p.paymentIntent} takes its place; if you may approve it, it is sent at once, otherwise it waits for its group.`,
        confirm: `Accept: refund ${newAmount}`,
        danger: false,
      };
    }
    case 'close':
      return {
        title: `Close without sending ${amount}?`,
        body: `Nobody knows whether this ${amount} refund for payment ${p.paymentIntent} reached Stripe. Closing never sends it again. Check the payment in Stripe first.`,
        confirm: `Close, never send ${amount}`,
        danger: true,
      };
    default:
      return assertNever(p.action);
  }
}

interface ConfirmDialogProps {
  pending: PendingDecision | null;
  busy: boolean;
  error: string | null;
  onConfirm: () => void;
  onCancel: () => void;
}

/** The second step of every decision: a modal that names the amount; Esc or Cancel backs out. */
export function ConfirmDialog({ pending, busy, error, onConfirm, onCancel }: ConfirmDialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (pending && !dialog.open) {
      dialog.showModal();
      dialog.querySelector<HTMLElement>('[data-autofocus]')?.focus();
    }
    if (!pending && dialog.open) dialog.close();
  }, [pending]);
  const copy = pending ? confirmCopy(pending) : null;
  return (
    <dialog
      ref={ref}
      className="dialog confirm-dialog"
      aria-labelledby="confirm-title"
      aria-describedby="confirm-body"
      onCancel={(event) => {
        if (busy) event.preventDefault();
      }}
      onClose={onCancel}
    >
      {copy && (
        <form
          method="dialog"
          className="dialog-body"
          onSubmit={(event) => {
            event.preventDefault();
            if (!busy) onConfirm();
          }}
        >
          <h2 id="confirm-title">{copy.title}</h2>
          <p id="confirm-body">{copy.body}</p>
          {error && (
            <p className="form-error" role="alert">
              {error}
            </p>
          )}
          <div className="dialog-actions">
            <button type="button" className="button" onClick={onCancel} disabled={busy}>
              Cancel
            </button>
            <button type="submit" className={`button ${copy.danger ? 'danger' : 'primary'}`} data-autofocus disabled={busy}>
              {busy ? 'Sending decision…' : copy.confirm}
            </button>
          </div>
        </form>
      )}
    </dialog>
  );
}
