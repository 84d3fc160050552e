import { type ReactNode, useCallback, useEffect, useMemo, useRef, useState } from 'react';
import type { SessionInfo } from '../../shared/api.ts';
import { ApiError, callApi, messageOf, type SessionLoss, type SessionLostHandler, setCsrfToken, setSessionLostHandler } from './api-client.ts';
import { useNewItemNotifications } from './browser-notifications.ts';
import { AppHeader } from './components/AppHeader.tsx';
import { ConnectionBanner } from './components/ConnectionBanner.tsx';
import { HelpDialog } from './components/HelpDialog.tsx';
import { HistoryPage } from './components/HistoryPage.tsx';
import { Link } from './components/Link.tsx';
import { InboxPage } from './components/InboxPage.tsx';
import { ItemPage } from './components/ItemPage.tsx';
import { LedgerPage } from './components/LedgerPage.tsx';
import { LoginPage, type LoginNotice } from './components/LoginPage.tsx';
import { ReconciliationPage } from './components/ReconciliationPage.tsx';
import { SessionEndingBanner } from './components/SessionEndingBanner.tsx';
import { ScoreboardPage } from './components/ScoreboardPage.tsx';
import { ErrorState, LoadingState } from './components/StateViews.tsx';
import { Toasts } from './components/Toasts.tsx';
import { SignedInVerifyPage, VerifyPage } from './components/VerifyPage.tsx';
import { resetDirectory } from './directory.ts';
import { useShortcuts } from './hooks.ts';
import { LiveContext, LiveFeed } from './live.ts';
import { navigate, type Route, useRoute } from './router.ts';
import { useArrivalToasts } from './use-arrival-toasts.ts';

type SessionState =
  | { phase: 'checking' }
  | { phase: 'unreachable'; message: string }
  | { phase: 'out'; notice: LoginNotice | null; unsent?: string | undefined }
  | { phase: 'in'; session: SessionInfo };

/** The app: who is logged in decides between the log-in page and the approver's shell. */
export function App() {
  const [state, setState] = useState<SessionState>({ phase: 'checking' });
  const route = useRoute();

  // While this page logs out, the live feed closing (the server ends the session first) is this
  // logout, not one from another tab: the page says "You are logged out" whichever comes first.
  const loggingOut = useRef(false);

  const handleSessionLost = useCallback((code: SessionLoss, unsent?: string) => {
    if (loggingOut.current) return;
    setCsrfToken('');
    resetDirectory();
    // Once out, a loss told late (the live feed's close after this page's own logout was answered)
    // changes nothing: the page keeps saying why it is out.
    setState((now) => (now.phase === 'out' ? now : { phase: 'out', notice: code === 'session_expired' ? 'session_expired' : 'signed_out_elsewhere', unsent }));
  }, []);

  const checkSession = useCallback(async () => {
    setState({ phase: 'checking' });
    try {
      const session = await callApi<SessionInfo>('GET', '/api/session');
      setCsrfToken(session.csrf_token);
      setState({ phase: 'in', session });
    } catch (error) {
      if (error instanceof ApiError && (error.code === 'unauthorized' || error.code === 'session_expired')) {
        setState({ phase: 'out', notice: error.code === 'session_expired' ? 'session_expired' : null });
      } else {
        setState({ phase: 'unreachable', message: messageOf(error) });
      }
    }
  }, []);

  useEffect(() => {
    setSessionLostHandler(handleSessionLost);
    void checkSession();
    return () => setSessionLostHandler(null);
  }, [checkSession, handleSessionLost]);

  const handleLogin = (session: SessionInfo) => {
    setCsrfToken(session.csrf_token);
    // Finance starts at the scoreboard; the inbox is theirs to read, not their home.
    if (session.role === 'finance' && window.location.pathname === '/') navigate('/scoreboard', { replace: true });
    setState({ phase: 'in', session });
  };

  const handleLogout = async () => {
    loggingOut.current = true;
    try {
      await callApi('DELETE', '/api/session');
    } catch {
      // Logged out already (expired): the page goes to log-in either way.
    }
    setCsrfToken('');
    resetDirectory();
    setState({ phase: 'out', notice: 'logged_out' });
    loggingOut.current = false;
  };

  switch (state.phase) {
    case 'checking':
      return (
        <main className="centered-page">
          <LoadingState label="Opening Interlock…" />
        </main>
      );
    case 'unreachable':
      return (
        <main className="centered-page">
          <ErrorState title="Interlock cannot be reached" message={state.message} onRetry={() => void checkSession()} />
        </main>
      );
    case 'out':
      // Anyone holding a receipt may check it: the page needs only the published keys.
      if (route.page === 'verify') return <PublicFrame />;
      return <LoginPage notice={state.notice} unsent={state.unsent ?? null} onLogin={handleLogin} />;
    case 'in':
      return <Shell session={state.session} onLogout={handleLogout} onSessionLost={handleSessionLost} />;
  }
}

interface ShellProps {
  session: SessionInfo;
  onLogout: () => Promise<void>;
  onSessionLost: SessionLostHandler;
}

/** The logged-in frame: header, connection banner, the page for the address, help. */
function Shell({ session, onLogout, onSessionLost }: ShellProps) {
  const route = useRoute();
  const [helpOpen, setHelpOpen] = useState(false);
  const isApprover = session.role === 'approver';
  // Finance reads every group's inbox live too (read only); only approvers decide.
  const feed = useMemo(() => new LiveFeed(onSessionLost), [onSessionLost]);
  useEffect(() => {
    feed.start();
    return () => feed.stop();
  }, [feed]);

  // On every page, not just the inbox: the person may have left the tab on an item. Nobody calls finance to an item.
  useNewItemNotifications(isApprover ? feed : null, session.name);
  useArrivalToasts(isApprover ? feed : null);
  useRouteFocus(route);
  useGoShortcuts(() => setHelpOpen(true));

  const page = pageFor(route, session);

  return (
    <LiveContext.Provider value={feed}>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <AppHeader session={session} route={route} onLogout={onLogout} onHelp={() => setHelpOpen(true)} />
      <ConnectionBanner />
      <SessionEndingBanner />
      <main id="main" tabIndex={-1}>
        {page}
      </main>
      <HelpDialog open={helpOpen} onClose={() => setHelpOpen(false)} />
      <Toasts />
    </LiveContext.Provider>
  );
}

/** The verify page for someone not logged in: the brand, a way to log in, and the page. */
function PublicFrame() {
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="app-header">
        <div className="header-inner">
          <a href="/" className="brand" aria-label="Interlock, go to the log-in page">
            <span className="brand-mark" aria-hidden="true" />
            Interlock
          </a>
          <div className="header-user">
            <a className="button ghost" href="/">
              Log in
            </a>
          </div>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <VerifyPage />
      </main>
    </>
  );
}

function pageFor(route: Route, session: SessionInfo): ReactNode {
  switch (route.page) {
    case 'inbox':
      return <InboxPage session={session} />;
    case 'item':
      return <ItemPage key={route.effectId} effectId={route.effectId} session={session} />;
    case 'done':
    case 'closed':
      return <HistoryPage key={route.page} kind={route.page} q={route.q} />;
    case 'scoreboard':
      return <ScoreboardPage session={session} />;
    case 'reconciliation':
      return <ReconciliationPage />;
    case 'ledger':
      return <LedgerPage />;
    case 'verify':
      return <SignedInVerifyPage />;
    case 'not_found':
      return (
        <section className="page narrow">
          <h1 id="page-title" tabIndex={-1}>
            No such page
          </h1>
          <p className="lede">Nothing lives at {route.path}. Your inbox is one click away.</p>
          <p>
            <Link href="/">Go to the inbox</Link>
          </p>
        </section>
      );
  }
}

/** After a navigation, focus the page's title so keyboard and screen-reader users start at the top of the new page. */
function useRouteFocus(route: Route): void {
  const key = JSON.stringify(route);
  const previous = useRef(key);
  useEffect(() => {
    if (previous.current === key) return;
    previous.current = key;
    window.scrollTo(0, 0);
    document.getElementById('page-title')?.focus({ preventScroll: true });
  }, [key]);
}

/** `?` opens help; `g` then `i`, `d` or `c` goes to the inbox, done or closed. */
function useGoShortcuts(openHelp: () => void): void {
  const pendingG = useRef(0);
  const go = (path: string) => () => {
    if (Date.now() - pendingG.current < 1500) navigate(path);
    pendingG.current = 0;
  };
  useShortcuts({
    '?': openHelp,
    g: () => {
      pendingG.current = Date.now();
    },
    i: go('/'),
    d: go('/done'),
    c: go('/closed'),
  });
}
