import type { ReactNode } from 'react';
import type { ReceiptSubject } from '../../../shared/receipts/subject.ts';
import type { VerifyReport } from '../../../shared/receipts/verify.ts';
import { formatMoney } from '../format.ts';
import { confirmationLabel, type Tone } from '../labels.ts';
import { Badge } from './StateViews.tsx';

// A verification report as a person reads it. A receipt is valid or not as a whole: a valid one
// says first what it proves (the refund, its amount and currency, the request, the payment), then
// each claim; one that fails says first what is wrong, and what its entries claim is shown only
// as unproven, with no part of it in green.

/** How a person is named: their name where this page knows it, beside the login the receipt records. */
export type NameOf = (login: string) => string | null;

/** One claim of the report: what it asks, the short answer as a badge, and a sentence. */
function Claim({ label, tone, answer, children }: { label: string; tone: Tone; answer: string; children?: ReactNode }) {
  return (
    <div>
      <dt>{label}</dt>
      <dd>
        <Badge tone={tone}>{answer}</Badge> {children}
      </dd>
    </div>
  );
}

type Answer = { tone: Tone; answer: string; text?: string | null };

/** A yes/no claim that has nothing to judge when null. */
function yesNo(value: boolean | null, none: string): Answer {
  if (value === null) return { tone: 'neutral', answer: none };
  return value ? { tone: 'success', answer: 'Yes' } : { tone: 'danger', answer: 'No' };
}

/** A login with the person's name beside it when known: "Ana Lopez (ana)". */
export function personLabel(login: string, nameOf: NameOf): string {
  const name = nameOf(login);
  return name === null || name === login ? login : `${name} (${login})`;
}

/** Who approved what a report covers: both people of a two-approver send, the earlier first ("Ana Lopez (ana) and Bea Novak (bea)"); null when no person did. */
export function approversLabel(report: Pick<VerifyReport, 'approved_by' | 'approvers'>, nameOf: NameOf): string | null {
  if (report.approved_by === null) return null;
  const people = report.approvers && report.approvers.length > 1 ? report.approvers : [report.approved_by];
  const labels = people.map((login) => personLabel(login, nameOf));
  return labels.length === 1 ? labels[0]! : `${labels.slice(0, -1).join(', ')} and ${labels.at(-1)}`;
}

/** What Stripe's confirmations came to, by `confirmed_by_target`. */
const STRIPE_ANSWERS: Record<string, string> = { true: 'Succeeded', pending: 'Pending', false: 'Failed', null: 'No confirmation' };

/** The claims of a report as short answers. On a receipt that fails, nothing is shown as good news. */
function claimsOf(report: VerifyReport, signatureChecked: boolean, nameOf: NameOf) {
  const unreadable = report.problems.some((problem) => problem.code === 'malformed_receipt' && problem.entry === undefined);
  const chain: Answer = report.tamper_evident
    ? { tone: 'success', answer: 'Intact', text: 'Every entry matches its hash and links to the one before it.' }
    : unreadable
      ? { tone: 'danger', answer: 'Unreadable', text: 'The receipt could not be read as a chain of entries.' }
      : { tone: 'danger', answer: 'Broken', text: 'An entry was altered, moved, removed or added.' };
  const signature: Answer =
    report.signed === true
      ? report.valid
        ? { tone: 'success', answer: 'Valid' }
        : { tone: 'neutral', answer: 'Matches the last entry', text: 'It covers the last entry only, so it vouches for nothing in a receipt that fails.' }
      : report.signed === false
        ? { tone: 'danger', answer: 'Not valid' }
        : { tone: 'warning', answer: 'Not checked', text: signatureChecked ? null : 'No published key was available, so entries cut off the end would go unnoticed.' };
  const happened: Answer =
    report.happened === true
      ? { tone: 'success', answer: 'Yes', text: 'The refund was sent to Stripe.' }
      : report.happened === false
        ? { tone: 'neutral', answer: 'No', text: 'Nothing was sent to Stripe.' }
        : { tone: 'warning', answer: 'Unknown', text: 'A send is unresolved, so whether it landed is not known.' };
  const approval: Answer =
    report.approval_verified === false
      ? { tone: 'danger', answer: 'Does not check out' }
      : report.approved_by !== null
        ? { tone: 'info', answer: approversLabel(report, nameOf) ?? report.approved_by }
        : { tone: 'neutral', answer: 'No person', text: 'It cleared under the rules.' };
  const stripe: Answer = { tone: confirmationLabel(report.confirmed_by_target).tone, answer: STRIPE_ANSWERS[String(report.confirmed_by_target)] ?? 'No confirmation' };
  const claims: Record<'chain' | 'signature' | 'happened' | 'once' | 'authorized' | 'held' | 'approval' | 'stripe', Answer> = {
    chain,
    signature,
    happened,
    once: report.happened_once ? { tone: 'success', answer: 'Yes' } : { tone: 'danger', answer: 'No' },
    authorized: yesNo(report.authorized_when_fired, 'Nothing sent'),
    held: yesNo(report.assumptions_held, 'Nothing sent'),
    approval,
    stripe,
  };
  // What entries that do not verify say proves nothing, so none of it is shown as good news.
  if (!report.valid) for (const claim of Object.values(claims)) if (claim.tone === 'success') claim.tone = 'neutral';
  return claims;
}

function ClaimList({ report, signatureChecked, nameOf }: { report: VerifyReport; signatureChecked: boolean; nameOf: NameOf }) {
  const claims = claimsOf(report, signatureChecked, nameOf);
  return (
    <dl className="receipt-facts verify-claims">
      <Claim label="Chain of entries" {...claims.chain}>
        {claims.chain.text}
      </Claim>
      <Claim label="Signature" {...claims.signature}>
        {claims.signature.text}
      </Claim>
      <Claim label="Happened" {...claims.happened}>
        {claims.happened.text}
      </Claim>
      <Claim label="At most once" {...claims.once} />
      <Claim label="Authorized when sent" {...claims.authorized} />
      <Claim label="Assumptions held" {...claims.held} />
      <Claim label="Approved by" {...claims.approval}>
        {claims.approval.text}
      </Claim>
      <Claim label="Confirmed by Stripe" {...claims.stripe} />
      {typeof report.refused === 'string' && <Claim label="Refused" tone="neutral" answer={report.refused} />}
    </dl>
  );
}

const NOT_RECORDED = 'not recorded';

/** The money of a subject, e.g. "$20.00 (USD)"; the currency is never guessed. */
function moneyOf(amountMinor: number | null, currency: string | null): string {
  if (amountMinor === null) return NOT_RECORDED;
  return currency === null ? formatMoney(amountMinor, null) : `${formatMoney(amountMinor, currency)} (${currency.toUpperCase()})`;
}

/** What a valid receipt proves, in one sentence: what was (or was not) sent, of how much, on which payment, for which request. */
export function provenSentence(report: VerifyReport, subject: ReceiptSubject, nameOf: NameOf): string {
  const request = `request ${subject.request_id ?? NOT_RECORDED}${subject.agent === null ? '' : ` of agent ${subject.agent}`}`;
  const payment = `payment ${subject.payment_intent ?? NOT_RECORDED}`;
  const approvers = approversLabel(report, nameOf);
  const by = approvers === null ? 'cleared under the rules with no person' : `approved by ${approvers}`;
  if (report.happened === true) {
    const amount = moneyOf(subject.sent_amount_minor ?? subject.amount_minor, subject.currency);
    const once = report.happened_once ? 'exactly once' : 'more than once';
    return `A refund of ${amount} on ${payment} was sent to Stripe ${once}, for ${request}, ${by}, under authority that was live when it was sent and on facts that still held.`;
  }
  const asked = `A refund of ${moneyOf(subject.amount_minor, subject.currency)} on ${payment} was asked for by ${request}`;
  if (report.happened === false) return `${asked}, and nothing was sent to Stripe${typeof report.refused === 'string' ? ` (refused: ${report.refused})` : ''}.`;
  return `${asked}; whether the send landed at Stripe is not known, and it is never sent again.`;
}

/** The request and the refund as the receipt names them. */
function SubjectList({ subject }: { subject: ReceiptSubject }) {
  const rows: [string, string, boolean][] = [
    ['Request', subject.request_id ?? NOT_RECORDED, true],
    ['Agent', subject.agent ?? NOT_RECORDED, false],
    ['Payment', subject.payment_intent ?? NOT_RECORDED, true],
    ['Amount asked', moneyOf(subject.amount_minor, subject.currency), false],
    ['Amount sent', subject.sent_amount_minor === null ? 'nothing sent' : moneyOf(subject.sent_amount_minor, subject.currency), false],
    ['Stripe refund', subject.refund ?? 'none', subject.refund !== null],
  ];
  return (
    <dl className="receipt-facts verify-subject">
      {rows.map(([label, value, mono]) => (
        <div key={label}>
          <dt>{label}</dt>
          <dd className={mono ? 'mono' : undefined}>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

interface ReportViewProps {
  report: VerifyReport;
  subject: ReceiptSubject | null;
  signatureChecked: boolean;
  nameOf: NameOf;
  /** True when names come from the directory of a signed-in person; else the receipt's logins alone. */
  namesKnown: boolean;
}

/** The verdict; then what the receipt proves, or what is wrong with it; then the claims. */
export function ReportView({ report, subject, signatureChecked, nameOf, namesKnown }: ReportViewProps) {
  return (
    <section className="panel verify-report" aria-labelledby="verify-verdict">
      <h2 id="verify-verdict" className={`receipt-verdict ${report.valid ? 'ok' : 'bad'}`} data-testid="verify-verdict">
        <span className="verdict-icon" aria-hidden="true">
          {report.valid ? '✓' : '✕'}
        </span>
        {report.valid ? 'This receipt is valid' : 'This receipt does NOT verify'}
      </h2>
      <p className="muted">
        Effect <span className="mono">{report.effect_id ?? 'unnamed'}</span>
        {report.key_id && (
          <>
            , signed with key <span className="mono">{report.key_id}</span>
          </>
        )}
        . Checked in this browser.
      </p>
      {report.valid ? <Proven report={report} subject={subject} nameOf={nameOf} namesKnown={namesKnown} /> : <Wrong report={report} />}
      {report.valid ? (
        <ClaimList report={report} signatureChecked={signatureChecked} nameOf={nameOf} />
      ) : (
        <details className="verify-unproven">
          <summary>What its entries claim, proven by nothing</summary>
          <ClaimList report={report} signatureChecked={signatureChecked} nameOf={nameOf} />
        </details>
      )}
    </section>
  );
}

function Proven({ report, subject, nameOf, namesKnown }: { report: VerifyReport; subject: ReceiptSubject | null; nameOf: NameOf; namesKnown: boolean }) {
  if (subject === null) return null;
  return (
    <section className="verify-proves" aria-labelledby="verify-proves-title">
      <h3 id="verify-proves-title">What this receipt proves</h3>
      <p data-testid="verify-proven">{provenSentence(report, subject, nameOf)}</p>
      <SubjectList subject={subject} />
      {report.approved_by !== null && !namesKnown && (
        <p className="subtle">The receipt names people by their Interlock login; log in to see their names.</p>
      )}
    </section>
  );
}

/** What is wrong, first and plainly: a receipt that fails proves nothing, whatever parts of it still match. */
function Wrong({ report }: { report: VerifyReport }) {
  const count = report.problems.length;
  return (
    <section className="verify-problems" aria-labelledby="verify-wrong-title">
      <h3 id="verify-wrong-title">What is wrong{count > 1 ? ` (${count} problems)` : ''}</h3>
      <ul className="problem-list">
        {report.problems.map((problem, index) => (
          // A receipt can repeat one problem on several entries; the position keeps them apart.
          // biome-ignore lint/suspicious/noArrayIndexKey: the list is rebuilt whole for each report.
          <li key={index} data-code={problem.code}>
            {problem.message} <span className="mono problem-code">{problem.code}</span>
          </li>
        ))}
      </ul>
      <p className="muted">So it proves nothing: not the amount, not the payment, not who approved it, whatever parts of it still match.</p>
    </section>
  );
}
