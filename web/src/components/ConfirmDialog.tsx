import { useEffect, useId, useRef, useState } from 'react';
import type { DecisionAction } from '../../../shared/api.ts';
import type { Repair } from '../../../shared/entries.ts';
import { limits } from '../../../shared/limits.ts';
import { assertNever } from '../../../shared/statuses.ts';
import { formatMoney, namesInWords } from '../format.ts';

/** What is about to be decided, with everything the words need. */
export interface PendingDecision {
  action: DecisionAction;
  repairIndex?: number;
  repair?: Repair;
  amountCents: number;
  currency: string | null;
  paymentIntent: string;
  requestId: string;
  /**
   * Set when the facts already changed since the agent asked: why approving the original is
   * refused ("only $70.00 is left of the $80.00 asked"). The confirmation then says so instead
   * of "if they changed".
   */
  staleBecause?: string | null;
  /** Set when an approval now (or accepting the same refund on the new facts) is the first of the two the item needs: it sends nothing by itself. */
  firstOfTwo?: boolean;
  /**
   * Set when this approval completes an item two people must approve: who approved it before, by
   * their names, so the confirmation and the toast say "2 of 2" and whose approval came first.
   */
  approvedBefore?: string[];
  /** Who paid, as the payment names them (a name, else an email), so a toast names them; null when unknown. */
  customer?: string | null;
}

interface Copy {
  title: string;
  body: string;
  confirm: string;
  danger: boolean;
}

/** The actions that say why, in the person's words, and tell the agent. */
export function needsReason(action: DecisionAction): boolean {
  return action === 'reject' || action === 'close';
}

/** The words of a confirmation: each names the amount and what happens to it. */
export function confirmCopy(p: PendingDecision): Copy {
  const amount = formatMoney(p.amountCents, p.currency);
  switch (p.action) {
    case 'approve':
      if (p.staleBecause) {
        return {
          title: `Approve the original ${amount}?`,
          body: `The facts already changed: ${p.staleBecause}. As things stand this approval is refused (Interlock checks the facts again before sending, and Stripe refunds no more than is left): nothing is sent for payment ${p.paymentIntent} (request ${p.requestId}), and the item comes back to be decided again.`,
          confirm: `Approve ${amount} anyway`,
          danger: false,
        };
      }
      if (p.firstOfTwo) {
        return {
          title: `Approve ${amount} (1 of 2)?`,
          body: `This refund needs two different approvers. Your approval is recorded and shown to the next approver; nothing is sent for payment ${p.paymentIntent} (request ${p.requestId}) until someone else approves it too, and Interlock checks the facts again then.`,
          confirm: `Approve (1 of 2)`,
          danger: false,
        };
      }
      if (p.approvedBefore?.length) {
        return {
          title: `Approve and send ${amount} (${p.approvedBefore.length + 1} of ${p.approvedBefore.length + 1})?`,
          body: `${namesInWords(p.approvedBefore)} approved it first. Yours is the last approval it needs: Interlock sends one refund of ${amount} for payment ${p.paymentIntent} (request ${p.requestId}) to Stripe under both approvals, after checking the facts again. If they changed, nothing is sent and the item comes back.`,
          confirm: `Send ${amount} refund`,
          danger: false,
        };
      }
      return {
        title: `Approve and send ${amount}?`,
        body: `Interlock sends one refund of ${amount} for payment ${p.paymentIntent} (request ${p.requestId}) to Stripe, after checking the facts again. If they changed, nothing is sent and the item comes back.`,
        confirm: `Send ${amount} refund`,
        danger: false,
      };
    case 'reject':
      return {
        title: `Reject the ${amount} refund?`,
        body: `The refund of ${amount} for payment ${p.paymentIntent} (request ${p.requestId}) is never sent. The agent is told it was rejected, and why, in your words.`,
        confirm: `Reject ${amount} refund`,
        danger: true,
      };
    case 'repair': {
      const repaired = p.repair?.set.amount;
      // The same payload on the facts as they are now: an approval, nothing is closed or replaced.
      if (p.repair && Object.keys(p.repair.set).length === 0) {
        if (p.firstOfTwo) {
          return {
            title: `Approve ${amount} on the facts now (1 of 2)?`,
            body: `${p.repair.why}. This refund needs two different approvers. Your approval is recorded and shown to the next approver; nothing is sent for payment ${p.paymentIntent} (request ${p.requestId}) until someone else approves it too, and Interlock checks the facts again then.`,
            confirm: `Approve (1 of 2)`,
            danger: false,
          };
        }
        const place = p.approvedBefore?.length ? ` (${p.approvedBefore.length + 1} of ${p.approvedBefore.length + 1})` : '';
        const first = p.approvedBefore?.length ? ` ${namesInWords(p.approvedBefore)} approved it first; yours is the last approval it needs.` : '';
        return {
          title: `Approve and send ${amount} on the facts now${place}?`,
          body: `${p.repair.why}.${first} Interlock sends one refund of ${amount} for payment ${p.paymentIntent} (request ${p.requestId}) to Stripe, after checking that the facts are still the ones shown now.`,
          confirm: `Send ${amount} refund`,
          danger: false,
        };
      }
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
        body: `Nobody knows whether this ${amount} refund for payment ${p.paymentIntent} reached Stripe. Closing never sends it again. Check the payment in Stripe first. The agent is told it was closed, and why.`,
        confirm: `Close, never send ${amount}`,
        danger: true,
      };
    default:
      return assertNever(p.action);
  }
}

/** The reason as the server will count it: trimmed, in characters (not UTF-16 units). */
function reasonLength(text: string): number {
  return [...text.trim()].length;
}

interface ConfirmDialogProps {
  pending: PendingDecision | null;
  busy: boolean;
  error: string | null;
  /** Quick reasons a rejection can start from (the directory's `reject_reasons`). */
  quickReasons: readonly string[];
  /** `reason` is the trimmed text for reject and close, else undefined. */
  onConfirm: (reason: string | undefined) => void;
  onCancel: () => void;
}

/**
 * The second step of every decision: a modal that names the amount; a rejection also asks why.
 * Esc or Cancel backs out, and the focus goes back where it was when the dialog opened.
 */
export function ConfirmDialog({ pending, busy, error, quickReasons, onConfirm, onCancel }: ConfirmDialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const reasonRef = useRef<HTMLTextAreaElement>(null);
  const returnTo = useRef<HTMLElement | null>(null);
  /** The page closed it (the decision was answered): the page decides where the focus goes. */
  const closedByPage = useRef(false);
  const [reason, setReason] = useState('');
  const [reasonError, setReasonError] = useState<string | null>(null);
  const ids = useId();
  const asksReason = pending !== null && needsReason(pending.action);

  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (pending && !dialog.open) {
      const active = document.activeElement;
      returnTo.current = active instanceof HTMLElement && active !== document.body ? active : null;
      setReason('');
      setReasonError(null);
      dialog.showModal();
      dialog.querySelector<HTMLElement>('[data-autofocus]')?.focus();
    }
    if (!pending && dialog.open) {
      closedByPage.current = true;
      dialog.close();
    }
  }, [pending]);

  /** The person backed out (Escape, Cancel): the close event that follows has nothing left to do. */
  const cancelledByPerson = useRef(false);

  /**
   * Back out now, not when the dialog's close event comes: that event is queued behind the
   * close, so a key pressed in between (Escape, then r at once) would find the decision still
   * pending and be lost.
   */
  const cancel = () => {
    const dialog = ref.current;
    if (dialog?.open) {
      cancelledByPerson.current = true;
      dialog.close();
    }
    onCancel();
    // Back to where the person was: the button or row that opened it, or the decision panel when that is gone.
    const back = returnTo.current;
    returnTo.current = null;
    requestAnimationFrame(() => {
      if (ref.current?.open) return; // a key already opened the next confirmation: it has the focus
      if (back?.isConnected) back.focus();
      else document.querySelector<HTMLElement>('.decision-panel .decide-button')?.focus();
    });
  };

  const handleClose = () => {
    if (closedByPage.current) {
      closedByPage.current = false;
      returnTo.current = null;
      return;
    }
    if (cancelledByPerson.current) {
      cancelledByPerson.current = false;
      return;
    }
    cancel(); // closed some other way: as if the person backed out
  };

  const handleSubmit = () => {
    if (busy || !pending) return;
    if (!asksReason) {
      onConfirm(undefined);
      return;
    }
    const length = reasonLength(reason);
    if (length === 0 || length > limits.rejectReasonCharsMax) {
      setReasonError(length === 0 ? 'Say why: the agent is told your reason.' : `At most ${limits.rejectReasonCharsMax} characters.`);
      reasonRef.current?.focus();
      return;
    }
    onConfirm(reason.trim());
  };

  const copy = pending ? confirmCopy(pending) : null;
  const length = reasonLength(reason);
  return (
    <dialog
      ref={ref}
      className="dialog confirm-dialog"
      aria-labelledby="confirm-title"
      aria-describedby="confirm-body"
      onCancel={(event) => {
        event.preventDefault();
        if (!busy) cancel();
      }}
      onClose={handleClose}
    >
      {copy && pending && (
        <form
          method="dialog"
          className="dialog-body"
          noValidate
          onSubmit={(event) => {
            event.preventDefault();
            handleSubmit();
          }}
        >
          <h2 id="confirm-title">{copy.title}</h2>
          <p id="confirm-body">{copy.body}</p>
          {asksReason && (
            <div className="reason-field">
              <label htmlFor={`${ids}-reason`}>Why? The agent is told this.</label>
              {quickReasons.length > 0 && (
                <fieldset className="quick-reasons">
                  <legend className="sr-only">Quick reasons</legend>
                  <div className="quick-reason-list">
                  {quickReasons.map((quick) => (
                    <button
                      key={quick}
                      type="button"
                      className="button small quick-reason"
                      onClick={() => {
                        setReason(quick);
                        setReasonError(null);
                        reasonRef.current?.focus();
                      }}
                    >
                      {quick}
                    </button>
                  ))}
                  </div>
                </fieldset>
              )}
              <textarea
                ref={reasonRef}
                id={`${ids}-reason`}
                className="reason-text"
                rows={3}
                value={reason}
                data-autofocus
                aria-invalid={reasonError !== null}
                aria-describedby={`${ids}-count${reasonError ? ` ${ids}-error` : ''}`}
                onChange={(event) => {
                  setReason(event.target.value);
                  if (reasonError) setReasonError(null);
                }}
              />
              <p id={`${ids}-count`} className={`reason-count${length > limits.rejectReasonCharsMax ? ' over' : ''}`}>
                {length} / {limits.rejectReasonCharsMax}
              </p>
              {reasonError && (
                <p id={`${ids}-error`} className="field-error" role="alert">
                  {reasonError}
                </p>
              )}
            </div>
          )}
          {error && (
            <p className="form-error" role="alert">
              {error}
            </p>
          )}
          <div className="dialog-actions">
            <button type="button" className="button" onClick={cancel} disabled={busy}>
              Cancel
            </button>
            <button type="submit" className={`button ${copy.danger ? 'danger' : 'primary'}`} data-autofocus={asksReason ? undefined : true} disabled={busy}>
              {busy ? 'Sending decision…' : copy.confirm}
            </button>
          </div>
        </form>
      )}
    </dialog>
  );
}
