import type { SessionInfo } from '../../../shared/api.ts';
import { type Route, VERIFY_PATH } from '../router.ts';
import { useLiveFeedOrNull } from '../live.ts';
import { Link } from './Link.tsx';
import { useSyncExternalStore } from 'react';

interface AppHeaderProps {
  session: SessionInfo;
  route: Route;
  onLogout: () => Promise<void>;
  onHelp: () => void;
}

const NAV = [
  { page: 'inbox', href: '/', label: 'Inbox' },
  { page: 'done', href: '/done', label: 'Done' },
  { page: 'closed', href: '/closed', label: 'Closed' },
  { page: 'scoreboard', href: '/scoreboard', label: 'Scoreboard' },
  { page: 'reconciliation', href: '/reconciliation', label: 'Reconciliation' },
  { page: 'ledger', href: '/ledger', label: 'Ledger' },
  { page: 'verify', href: VERIFY_PATH, label: 'Verify' },
] as const;

/** What finance reaches from the header: the inbox and its history to read (deciding nothing), and the money pages. */
const FINANCE_PAGES: ReadonlySet<string> = new Set(['inbox', 'done', 'closed', 'scoreboard', 'ledger', 'reconciliation', 'verify']);
/** What an approver reaches: everything but reconciliation, which compares every group's refunds with Stripe. */
const APPROVER_PAGES: ReadonlySet<string> = new Set(['inbox', 'done', 'closed', 'scoreboard', 'ledger', 'verify']);

const noItems = () => () => {};

/** The top of every page: the sandbox or LIVE marker, where you are, who you are. */
export function AppHeader({ session, route, onLogout, onHelp }: AppHeaderProps) {
  const feed = useLiveFeedOrNull();
  const items = useSyncExternalStore(feed?.subscribe ?? noItems, () => feed?.getState().items ?? null);
  const current = route.page === 'item' ? 'inbox' : route.page;
  return (
    <>
      {session.sandbox && <SandboxMarker demo={session.demo} />}
      {session.live && <LiveMarker />}
      <header className="app-header">
        <div className="header-inner">
          <Link
            href={session.role === 'approver' ? '/' : '/scoreboard'}
            className="brand"
            aria-label={session.role === 'approver' ? 'Interlock, go to the inbox' : 'Interlock, go to the scoreboard'}
          >
            <span className="brand-mark" aria-hidden="true" />
            Interlock
          </Link>
          <nav aria-label="Main" className="main-nav">
              <ul>
                {NAV.filter((entry) => (session.role === 'approver' ? APPROVER_PAGES : FINANCE_PAGES).has(entry.page)).map((entry) => (
                  <li key={entry.page}>
                    <Link href={entry.href} aria-current={current === entry.page ? 'page' : undefined}>
                      {entry.label}
                      {entry.page === 'inbox' && session.role !== 'approver' && <span className="nav-note"> (read only)</span>}
                      {entry.page === 'inbox' && items !== null && (
                        <span className="nav-count">
                          {items.length}
                          <span className="sr-only"> open</span>
                        </span>
                      )}
                    </Link>
                  </li>
                ))}
              </ul>
            </nav>
          <div className="header-user">
            <span className="user-name">
              <span className="user-display">{session.display_name}</span>
              <span className="user-groups">{session.groups.length ? session.groups.join(', ') : session.role === 'finance' ? 'finance (read only)' : session.role}</span>
            </span>
            <button type="button" className="button ghost icon-button" onClick={onHelp} aria-label="Keyboard shortcuts" title="Keyboard shortcuts (?)">
              ?
            </button>
            <button type="button" className="button ghost" onClick={() => void onLogout()}>
              Log out
            </button>
          </div>
        </div>
      </header>
    </>
  );
}

/** Unmissable, on every page: nothing here moves real money (and, with demo traffic, who asks). */
/** Live mode: every refund sent moves real money, said on every page. */
export function LiveMarker() {
  return (
    <div className="live-marker" role="note">
      <strong>LIVE</strong> <span className="live-detail">Refunds go to Stripe live mode and move real money.</span>
    </div>
  );
}

export function SandboxMarker({ demo = false }: { demo?: boolean }) {
  return (
    <div className="sandbox-marker" role="note">
      <strong>Sandbox: no real money.</strong> <span className="sandbox-detail">Refunds go to a local Stripe sandbox.</span>
      {demo && <span className="sandbox-detail"> Demo traffic: an agent named demo asks for refunds.</span>}
    </div>
  );
}
