import { type DragEvent, type FormEvent, useEffect, useId, useState } from 'react';
import { isJsonObject } from '../../../shared/json.ts';
import { type ReceiptSubject, receiptSubject } from '../../../shared/receipts/subject.ts';
import { keysFromKeySet, type ReceiptKeys, type VerifyReport, verifyReceipt } from '../../../shared/receipts/verify.ts';
import { useDirectory } from '../directory.ts';
import { useDocumentTitle } from '../hooks.ts';
import { type NameOf, ReportView } from './VerifyReportView.tsx';

/** Where anyone can read the keys receipts are signed with; no session needed. */
const KEYS_PATH = '/.well-known/interlock-keys';
/** The largest receipt file read: a chain of thousands of entries fits many times over, and a wrong file is not read whole. */
const receiptFileBytesMax = 10 * 1024 * 1024;

/** The published keys as the page holds them: loading, read, or why they could not be. */
type KeysState = { phase: 'loading' } | { phase: 'ready'; keys: Map<string, string> } | { phase: 'failed'; message: string };

/** What the last check came to: nothing yet, checking, a report, or why the text is no receipt at all. */
type Outcome =
  | { phase: 'idle' }
  | { phase: 'checking' }
  | { phase: 'done'; report: VerifyReport; subject: ReceiptSubject | null; signatureChecked: boolean }
  | { phase: 'unreadable'; message: string };

/** What a receipt's entries are about, when it has a list of entries at all. */
function subjectOf(receipt: unknown): ReceiptSubject | null {
  if (!isJsonObject(receipt) || !Array.isArray(receipt.entries)) return null;
  return receiptSubject(receipt.entries.filter(isJsonObject));
}

/** Nobody's name is known: the page shows the logins the receipt records. */
const LOGINS_ONLY: NameOf = () => null;

/** The verify page for a signed-in person: people are named from the directory, beside their logins. */
export function SignedInVerifyPage() {
  const directory = useDirectory();
  const nameOf: NameOf = (login) => directory.people.find((person) => person.name === login)?.display_name ?? null;
  return <VerifyPage nameOf={nameOf} namesKnown />;
}

/**
 * Check a signed receipt here, in the browser: the text is parsed and verified by the same
 * verifier the server and the command line use (shared/receipts/verify.ts), against the keys the
 * server publishes. Nothing but the key set is fetched, and the receipt is never uploaded.
 */
export function VerifyPage({ nameOf = LOGINS_ONLY, namesKnown = false }: { nameOf?: NameOf; namesKnown?: boolean }) {
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
      const report = await verifyReceipt(receipt, given);
      setOutcome({ phase: 'done', report, subject: subjectOf(receipt), signatureChecked: given !== undefined });
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
      <p className="muted">
        A valid receipt proves which refund was asked for (the request, the agent, the payment, the amount and its currency), whether it was sent to
        Stripe and how many times, that it was sent under authority and on facts that still held, who approved it, and what Stripe confirmed. A
        receipt that fails proves none of it.
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
        {outcome.phase === 'done' && (
          <ReportView report={outcome.report} subject={outcome.subject} signatureChecked={outcome.signatureChecked} nameOf={nameOf} namesKnown={namesKnown} />
        )}
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
