import { type DragEvent, type FormEvent, type ReactNode, useEffect, useId, useState } from 'react';
import { keysFromKeySet, type ReceiptKeys, type VerifyReport, verifyReceipt } from '../../../shared/receipts/verify.ts';
import { useDocumentTitle } from '../hooks.ts';
import { confirmationLabel, type Tone } from '../labels.ts';
import { Badge } from './StateViews.tsx';

/** Where anyone can read the keys receipts are signed with; no session needed. */
const KEYS_PATH = '/.well-known/interlock-keys';
/** The largest receipt file read: a chain of thousands of entries fits many times over, and a wrong file is not read whole. */
const receiptFileBytesMax = 10 * 1024 * 1024;

/** The published keys as the page holds them: loading, read, or why they could not be. */
type KeysState = { phase: 'loading' } | { phase: 'ready'; keys: Map<string, string> } | { phase: 'failed'; message: string };

/** What the last check came to: nothing yet, checking, a report, or why the text is no receipt at all. */
type Outcome = { phase: 'idle' } | { phase: 'checking' } | { phase: 'done'; report: VerifyReport; signatureChecked: boolean } | { phase: 'unreadable'; message: string };

/**
 * Check a signed receipt here, in the browser: the text is parsed and verified by the same
 * verifier the server and the command line use (shared/receipts/verify.ts), against the keys the
 * server publishes. Nothing but the key set is fetched, and the receipt is never uploaded.
 */
export function VerifyPage() {
  useDocumentTitle('Verify a receipt');
  const keys = usePublishedKeys();
  const [text, setText] = useState('');
  const [fileName, setFileName] = useState<string | null>(null);
  const [dragging, setDragging] = useState(false);
  const [outcome, setOutcome] = useState<Outcome>({ phase: 'idle' });
  const textId = useId();
  const fileId = useId();
  // A receipt is checked once the keys are known, so a signature is never skipped for being early.
  const ready = keys.phase !== 'loading';

  const check = async (receiptText: string) => {
    if (!receiptText.trim()) {
      setOutcome({ phase: 'unreadable', message: 'Choose a receipt file or paste its JSON first.' });
      return;
    }
    let receipt: unknown;
    try {
      receipt = JSON.parse(receiptText);
    } catch (error) {
      setOutcome({ phase: 'unreadable', message: `This is not JSON, so it cannot be a receipt (${error instanceof Error ? error.message : String(error)}).` });
      return;
    }
    setOutcome({ phase: 'checking' });
    const given: ReceiptKeys | undefined = keys.phase === 'ready' ? keys.keys : undefined;
    try {
      setOutcome({ phase: 'done', report: await verifyReceipt(receipt, given), signatureChecked: given !== undefined });
    } catch (error) {
      // Only the browser can fail here (no WebCrypto outside https); a bad receipt is a report.
      setOutcome({ phase: 'unreadable', message: error instanceof Error ? error.message : String(error) });
    }
  };

  const readFile = async (file: File | undefined) => {
    if (file === undefined) return;
    setFileName(file.name);
    if (file.size > receiptFileBytesMax) {
      setOutcome({ phase: 'unreadable', message: `${file.name} is ${Math.ceil(file.size / 1024 / 1024)} MB; a receipt file is at most 10 MB.` });
      return;
    }
    const content = await file.text();
    setText(content);
    await check(content);
  };

  const handleSubmit = (event: FormEvent) => {
    event.preventDefault();
    void check(text);
  };

  const handleDrop = (event: DragEvent<HTMLElement>) => {
    event.preventDefault();
    setDragging(false);
    if (ready) void readFile(event.dataTransfer.files[0]);
  };

  return (
    <section className="page narrow verify-page" aria-labelledby="page-title">
      <h1 id="page-title" tabIndex={-1}>
        Verify a receipt
      </h1>
      <p className="lede">
        Check a signed Interlock receipt yourself. It is checked here, in your browser, against the key Interlock publishes: the chain of entries,
        the signature, and what the entries prove. The receipt is not sent anywhere.
      </p>
      <KeysNote keys={keys} />

      <form className="panel verify-form" onSubmit={handleSubmit} noValidate>
        {/* Dropping is the pointer's shortcut; the file input inside is the way for everyone. */}
        <fieldset
          className={`drop-zone${dragging ? ' dragging' : ''}`}
          onDragOver={(event) => {
            event.preventDefault();
            setDragging(true);
          }}
          onDragLeave={() => setDragging(false)}
          onDrop={handleDrop}
        >
          <legend>Receipt file</legend>
          <p className="muted">Drop the JSON file here, or choose it.</p>
          <label htmlFor={fileId} className="sr-only">
            Receipt file (JSON)
          </label>
          <input
            id={fileId}
            type="file"
            accept="application/json,.json"
            disabled={!ready}
            onChange={(event) => {
              void readFile(event.target.files?.[0]);
              // Choosing the same file again after an edit reads it again.
              event.target.value = '';
            }}
          />
          {fileName && <p className="subtle">Read from {fileName}</p>}
        </fieldset>
        <div className="field">
          <label htmlFor={textId}>Or paste the receipt JSON</label>
          <textarea
            id={textId}
            className="receipt-text"
            rows={8}
            spellCheck={false}
            value={text}
            onChange={(event) => {
              setText(event.target.value);
              setFileName(null);
            }}
            placeholder='{"v": 2, "effect_id": "…", "entries": [ … ], "signature": "…", "key_id": "…"}'
          />
        </div>
        <button type="submit" className="button primary" disabled={outcome.phase === 'checking' || !ready}>
          {outcome.phase === 'checking' ? 'Checking…' : 'Verify receipt'}
        </button>
      </form>

      <div className="verify-result" aria-live="polite" aria-busy={outcome.phase === 'checking'}>
        {outcome.phase === 'unreadable' && (
          <p className="form-error" role="alert">
            {outcome.message}
          </p>
        )}
        {outcome.phase === 'done' && <ReportView report={outcome.report} signatureChecked={outcome.signatureChecked} />}
      </div>
    </section>
  );
}

/** The published keys, fetched once when the page opens. */
function usePublishedKeys(): KeysState {
  const [keys, setKeys] = useState<KeysState>({ phase: 'loading' });
  useEffect(() => {
    let live = true;
    fetch(KEYS_PATH, { headers: { accept: 'application/json' } })
      .then(async (response) => {
        if (!response.ok) throw new Error(`the server answered ${response.status}`);
        return keysFromKeySet(await response.json());
      })
      .then((read) => live && setKeys({ phase: 'ready', keys: read }))
      .catch((error: unknown) => live && setKeys({ phase: 'failed', message: error instanceof Error ? error.message : String(error) }));
    return () => {
      live = false;
    };
  }, []);
  return keys;
}

function KeysNote({ keys }: { keys: KeysState }) {
  if (keys.phase === 'loading') return <p className="muted keys-note">Reading the published keys…</p>;
  if (keys.phase === 'failed') {
    return (
      <p className="notice notice-warning keys-note" role="status">
        The published keys could not be read ({keys.message}), so signatures are not checked: the chain still is, but entries cut off the end would
        go unnoticed.
      </p>
    );
  }
  const ids = [...keys.keys.keys()];
  return (
    <p className="muted keys-note">
      Published {ids.length === 1 ? 'key' : 'keys'}: <span className="mono">{ids.join(', ') || 'none'}</span>
    </p>
  );
}

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

type Answer = { tone: Tone; answer: string };

/** A yes/no claim that has nothing to judge when null. */
function yesNo(value: boolean | null, none: string): Answer {
  if (value === null) return { tone: 'neutral', answer: none };
  return value ? { tone: 'success', answer: 'Yes' } : { tone: 'danger', answer: 'No' };
}

/** The claims of a report as short answers, each with a sentence where a word is not enough. */
function claimsOf(report: VerifyReport, signatureChecked: boolean) {
  const unreadable = report.problems.some((problem) => problem.code === 'malformed_receipt' && problem.entry === undefined);
  const chain: Answer & { text: string } = report.tamper_evident
    ? { tone: 'success', answer: 'Intact', text: 'Every entry matches its hash and links to the one before it.' }
    : unreadable
      ? { tone: 'danger', answer: 'Unreadable', text: 'The receipt could not be read as a chain of entries.' }
      : { tone: 'danger', answer: 'Broken', text: 'An entry was altered, moved, removed or added.' };
  const signature: Answer & { text: string | null } =
    report.signed === true
      ? { tone: 'success', answer: 'Valid', text: null }
      : report.signed === false
        ? { tone: 'danger', answer: 'Not valid', text: null }
        : { tone: 'warning', answer: 'Not checked', text: signatureChecked ? null : 'No published key was available, so entries cut off the end would go unnoticed.' };
  const happened: Answer & { text: string } =
    report.happened === true
      ? { tone: 'success', answer: 'Yes', text: 'The refund was sent to Stripe.' }
      : report.happened === false
        ? { tone: 'neutral', answer: 'No', text: 'Nothing was sent to Stripe.' }
        : { tone: 'warning', answer: 'Unknown', text: 'A send is unresolved, so whether it landed is not known.' };
  const approval: Answer =
    report.approval_verified === false
      ? { tone: 'danger', answer: 'Does not check out' }
      : report.approved_by !== null
        ? { tone: 'info', answer: report.approved_by }
        : { tone: 'neutral', answer: 'No person' };
  const stripe: Answer = { tone: confirmationLabel(report.confirmed_by_target).tone, answer: STRIPE_ANSWERS[String(report.confirmed_by_target)] ?? 'No confirmation' };
  const said: Record<'happened' | 'once' | 'authorized' | 'held' | 'approval' | 'stripe', Answer> = {
    happened,
    once: report.happened_once ? { tone: 'success', answer: 'Yes' } : { tone: 'danger', answer: 'No' },
    authorized: yesNo(report.authorized_when_fired, 'Nothing sent'),
    held: yesNo(report.assumptions_held, 'Nothing sent'),
    approval,
    stripe,
  };
  // What entries that do not verify say proves nothing, so none of it is shown as good news.
  if (!report.valid) for (const claim of Object.values(said)) if (claim.tone === 'success') claim.tone = 'neutral';
  return { chain, signature, ...said, happened };
}

/** What Stripe's confirmations came to, by `confirmed_by_target`. */
const STRIPE_ANSWERS: Record<string, string> = { true: 'Succeeded', pending: 'Pending', false: 'Failed', null: 'No confirmation' };

/** The verdict, the claims, and the problems in plain words with their codes. */
function ReportView({ report, signatureChecked }: { report: VerifyReport; signatureChecked: boolean }) {
  const claims = claimsOf(report, signatureChecked);
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
      {!report.valid && <p className="muted">The claims below are what the entries say; since the receipt does not verify, they prove nothing.</p>}
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
        <Claim label="Approved by" {...claims.approval} />
        <Claim label="Confirmed by Stripe" {...claims.stripe} />
        {typeof report.refused === 'string' && <Claim label="Refused" tone="neutral" answer={report.refused} />}
      </dl>
      {report.problems.length > 0 && (
        <div className="verify-problems">
          <h3>
            {report.problems.length} {report.problems.length === 1 ? 'problem' : 'problems'} found
          </h3>
          <ul className="problem-list">
            {report.problems.map((problem, index) => (
              // A receipt can repeat one problem on several entries; the position keeps them apart.
              // biome-ignore lint/suspicious/noArrayIndexKey: the list is rebuilt whole for each report.
              <li key={index} data-code={problem.code}>
                {problem.message} <span className="mono problem-code">{problem.code}</span>
              </li>
            ))}
          </ul>
        </div>
      )}
    </section>
  );
}
