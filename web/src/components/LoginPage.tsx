import { type FormEvent, useEffect, useRef, useState } from 'react';
import type { SessionInfo } from '../../../shared/api.ts';
import { ApiError, callApi, messageOf } from '../api-client.ts';
import { useDocumentTitle } from '../hooks.ts';
import { SandboxMarker } from './AppHeader.tsx';

/** Why the log-in page is shown, when it is not the first visit. */
export type LoginNotice = 'session_expired' | 'signed_out_elsewhere' | 'logged_out';

const NOTICES: Record<LoginNotice, { tone: 'warning' | 'info'; text: string }> = {
  session_expired: { tone: 'warning', text: 'Your session expired: nothing was sent under your name after it ended. Log in again to go on where you were.' },
  signed_out_elsewhere: { tone: 'warning', text: 'You were logged out (perhaps in another tab). Log in again to continue.' },
  logged_out: { tone: 'info', text: 'You are logged out.' },
};

/**
 * The longest wait the page sits out by itself before sending a login again: the second after a
 * mistyped password, so a person who types it right at once is let in without being told to wait.
 */
const LOGIN_WAIT_BY_ITSELF_S = 2;

/** A login, sent again once after a short wait the server asks for. */
async function logIn(name: string, password: string): Promise<SessionInfo> {
  try {
    return await callApi<SessionInfo>('POST', '/api/session', { name, password });
  } catch (caught) {
    const wait = caught instanceof ApiError && caught.code === 'rate_limited' ? caught.retryAfterS : null;
    if (wait === null || wait > LOGIN_WAIT_BY_ITSELF_S) throw caught;
    await new Promise((resolve) => setTimeout(resolve, wait * 1000));
    return callApi<SessionInfo>('POST', '/api/session', { name, password });
  }
}

/** A sentence from a server message: capital first letter, a full stop. */
export function sentence(message: string): string {
  const text = message.trim();
  if (!text) return text;
  return text.charAt(0).toUpperCase() + text.slice(1) + (/[.!?]$/.test(text) ? '' : '.');
}

/** Log in with a name and a password; says plainly what went wrong. */
/** The notice, naming the decision a lost session refused when there was one: it was not recorded, and nothing was sent. */
function noticeText(notice: LoginNotice, unsent: string | null): string {
  if (unsent === null) return NOTICES[notice].text;
  const when = notice === 'session_expired' ? 'Your session had expired' : 'You were logged out';
  return `${when}, so ${unsent} was not recorded: nothing was sent. Log in again to decide it.`;
}

interface LoginPageProps {
  notice: LoginNotice | null;
  /** The decision the call that found the session gone carried, in words ("your approval of $56.00 (request x)"). */
  unsent?: string | null;
  onLogin: (session: SessionInfo) => void;
}

export function LoginPage({ notice, unsent = null, onLogin }: LoginPageProps) {
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [sandbox, setSandbox] = useState(false);
  const nameRef = useRef<HTMLInputElement>(null);
  const passwordRef = useRef<HTMLInputElement>(null);
  useDocumentTitle('Log in');

  useEffect(() => {
    nameRef.current?.focus();
    fetch('/readyz')
      .then((r) => r.json())
      .then((body: { sandbox?: unknown }) => setSandbox(body.sandbox === true))
      .catch(() => setSandbox(false));
  }, []);

  const handleSubmit = async (event: FormEvent) => {
    event.preventDefault();
    if (!name.trim() || !password) {
      setError('Enter your name and your password.');
      (name.trim() ? passwordRef : nameRef).current?.focus();
      return;
    }
    setBusy(true);
    setError(null);
    try {
      onLogin(await logIn(name.trim(), password));
    } catch (caught) {
      const wrong = caught instanceof ApiError && caught.code === 'unauthorized';
      setError(wrong ? 'That name and password do not match. Check both and try again.' : sentence(messageOf(caught)));
      setPassword('');
      passwordRef.current?.focus();
    } finally {
      setBusy(false);
    }
  };

  const shown = notice ? NOTICES[notice] : null;
  return (
    <>
      {sandbox && <SandboxMarker />}
      <main id="main" className="login-page">
        <div className="login-card">
          <p className="brand login-brand">
            <span className="brand-mark" aria-hidden="true" />
            Interlock
          </p>
          <h1 id="page-title">Log in to the refund inbox</h1>
          <p className="muted">Approve, reject or repair the refunds AI agents ask for.</p>
          {shown && notice && (
            <p className={`notice notice-${shown.tone}`} role="status" data-notice={notice}>
              {noticeText(notice, unsent)}
            </p>
          )}
          <form onSubmit={handleSubmit} noValidate aria-describedby={error ? 'login-error' : undefined}>
            <div className="field">
              <label htmlFor="login-name">Name</label>
              <input
                id="login-name"
                ref={nameRef}
                name="username"
                autoComplete="username"
                autoCapitalize="none"
                spellCheck={false}
                value={name}
                onChange={(e) => setName(e.target.value)}
                aria-invalid={error ? true : undefined}
              />
            </div>
            <div className="field">
              <label htmlFor="login-password">Password</label>
              <input
                id="login-password"
                ref={passwordRef}
                name="password"
                type="password"
                autoComplete="current-password"
                value={password}
                onChange={(e) => setPassword(e.target.value)}
                aria-invalid={error ? true : undefined}
              />
            </div>
            {error && (
              <p id="login-error" className="form-error" role="alert">
                {error}
              </p>
            )}
            <button type="submit" className="button primary wide" disabled={busy}>
              {busy ? 'Logging in…' : 'Log in'}
            </button>
          </form>
        </div>
      </main>
    </>
  );
}
