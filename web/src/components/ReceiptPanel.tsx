import type { ItemDetail } from '../../../shared/api.ts';
import { isJsonObject, type Json } from '../../../shared/json.ts';
import { useDirectory } from '../directory.ts';
import { confirmationLabel } from '../labels.ts';
import { VERIFY_PATH } from '../router.ts';
import { Link } from './Link.tsx';
import { Badge } from './StateViews.tsx';
import { approversLabel } from './VerifyReportView.tsx';

/** The signed receipt, verified by the server against its published key, and the download. */
export function ReceiptPanel({ detail }: { detail: ItemDetail }) {
  const directory = useDirectory();
  const v = detail.verification;
  const valid = v.valid === true;
  const keyId = typeof v.key_id === 'string' ? v.key_id : null;
  const confirmed = v.confirmed_by_target === true || v.confirmed_by_target === false || v.confirmed_by_target === 'pending' ? v.confirmed_by_target : null;
  const stripe = confirmationLabel(confirmed);
  const problems = Array.isArray(v.problems) ? v.problems.filter(isJsonObject).map((p) => String(p.message ?? p.code ?? '')) : [];
  const approversOf = (value: Json | undefined) => (Array.isArray(value) ? value.filter((a): a is string => typeof a === 'string') : undefined);
  const happened = v.happened === true ? (v.happened_once === true ? 'Sent to Stripe exactly once' : 'Sent more than once') : v.happened === false ? 'Nothing sent to Stripe' : 'Unknown whether it was sent';
  return (
    <section className="panel receipt-panel" aria-labelledby="receipt-title">
      <h2 id="receipt-title">Receipt</h2>
      <p className={`receipt-verdict ${valid ? 'ok' : 'bad'}`} data-testid="receipt-verdict">
        <span className="verdict-icon" aria-hidden="true">
          {valid ? '✓' : '✕'}
        </span>
        {valid ? 'Receipt is valid' : 'Receipt does NOT verify'}
      </p>
      <dl className="receipt-facts">
        <div>
          <dt>Signed with key</dt>
          <dd className="mono">{keyId ?? 'none'}</dd>
        </div>
        <div>
          <dt>Chain and signature</dt>
          <dd>{v.tamper_evident === true && v.signed === true ? 'Intact and signed' : 'Not intact'}</dd>
        </div>
        <div>
          <dt>What happened</dt>
          <dd>{happened}</dd>
        </div>
        {typeof v.approved_by === 'string' && (
          <div>
            <dt>Approved by</dt>
            {/* The receipt records the login; the name is the directory's, beside it. */}
            <dd>{approversLabel({ approved_by: v.approved_by, approvers: approversOf(v.approvers) }, (login) => directory.people.find((person) => person.name === login)?.display_name ?? null)}</dd>
          </div>
        )}
        <div>
          <dt>Stripe</dt>
          <dd>
            <Badge tone={stripe.tone}>{v.happened === false && confirmed === null ? 'Nothing to confirm' : stripe.text}</Badge>
          </dd>
        </div>
      </dl>
      {problems.length > 0 && (
        <ul className="problem-list" aria-label="Problems found in the receipt">
          {problems.map((p) => (
            <li key={p}>{p}</li>
          ))}
        </ul>
      )}
      <a className="button small" href={detail.receipt} download={`interlock-receipt-${detail.effect_id}.json`}>
        Download signed receipt (JSON)
      </a>
      <p className="subtle">
        Anyone can check the downloaded file in their own browser on the <Link href={VERIFY_PATH}>Verify page</Link>, without logging in.
      </p>
    </section>
  );
}
