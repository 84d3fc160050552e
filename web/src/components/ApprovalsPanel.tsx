import type { ApprovalShown, ItemDetail } from '../../../shared/api.ts';
import { formatFull, formatMinute } from '../format.ts';
import { VOID_REASON_WORDS } from '../labels.ts';

/**
 * Where a two-approver item's approvals stand: "1 of 2", who approved and when (so the second
 * approver sees the first), and an approval that no longer counts with why. Nothing when one
 * approver is enough.
 */
export function ApprovalsPanel({ detail, appNowMs }: { detail: ItemDetail; appNowMs: number }) {
  const shown = detail.approvals;
  if (!shown) return null;
  const counting = shown.approvals.filter((a) => a.voided === null);
  const lapsed = [...shown.approvals.filter((a) => a.voided !== null), ...shown.voided];
  return (
    <section className="panel approvals-panel" aria-labelledby="approvals-title">
      <h2 id="approvals-title">
        Approvals: <span className="approvals-count">{counting.length} of {shown.required}</span>
      </h2>
      <p className="approvals-lede">Two different people must approve this refund before it is sent. Nobody approves a refund made for their own benefit.</p>
      {counting.length > 0 && (
        <ul className="approvals-list">
          {counting.map((a) => (
            <li key={`${a.by}-${a.at_ms}`}>
              Approved by <strong>{a.display_name}</strong> at <Moment ms={a.at_ms} appNowMs={appNowMs} />
            </li>
          ))}
        </ul>
      )}
      {lapsed.length > 0 && (
        <ul className="approvals-list approvals-voided">
          {lapsed.map((a) => (
            <li key={`void-${a.by}-${a.at_ms}`}>
              <VoidedApproval approval={a} appNowMs={appNowMs} />
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function VoidedApproval({ approval, appNowMs }: { approval: ApprovalShown; appNowMs: number }) {
  return (
    <>
      <strong>Voided:</strong> {approval.display_name}’s approval at <Moment ms={approval.at_ms} appNowMs={appNowMs} /> no longer counts,{' '}
      {approval.voided === null ? '' : VOID_REASON_WORDS[approval.voided]}. The count starts again.
    </>
  );
}

function Moment({ ms, appNowMs }: { ms: number; appNowMs: number }) {
  return (
    <time dateTime={new Date(ms).toISOString()} title={formatFull(ms)}>
      {formatMinute(ms, appNowMs)}
    </time>
  );
}
