import { useSyncExternalStore } from 'react';

/** The pages of the inbox app, read from the address bar. */
export type Route =
  | { page: 'inbox' }
  | { page: 'item'; effectId: string }
  | { page: 'done'; q: string }
  | { page: 'closed'; q: string }
  | { page: 'scoreboard' }
  | { page: 'reconciliation' }
  | { page: 'ledger' }
  | { page: 'verify' }
  | { page: 'not_found'; path: string };

/** The page that checks a receipt in the browser; it opens without logging in. */
export const VERIFY_PATH = '/verify';

/** Effect ids are 12 hex characters (shared/limits.ts `effectIdHexChars`). */
const ITEM_PATH = /^\/items\/([0-9a-f]{12})$/;

/** The route for a path and query string. */
export function parseRoute(pathname: string, search: string): Route {
  const q = new URLSearchParams(search).get('q') ?? '';
  if (pathname === '/' || pathname === '') return { page: 'inbox' };
  if (pathname === '/done') return { page: 'done', q };
  if (pathname === '/closed') return { page: 'closed', q };
  if (pathname === '/scoreboard') return { page: 'scoreboard' };
  if (pathname === '/reconciliation') return { page: 'reconciliation' };
  if (pathname === '/ledger') return { page: 'ledger' };
  if (pathname === VERIFY_PATH) return { page: 'verify' };
  const item = ITEM_PATH.exec(pathname);
  if (item?.[1]) return { page: 'item', effectId: item[1] };
  return { page: 'not_found', path: pathname };
}

/**
 * A decision asked for from the inbox (a or r on a focused row): the item page opens its
 * confirmation once the item is loaded, so the facts are on screen behind the dialog.
 */
let intent: { effectId: string; action: 'approve' | 'reject' } | null = null;

/** Open an item and ask for its confirmation step at once. */
export function openItemToDecide(effectId: string, action: 'approve' | 'reject', search = ''): void {
  intent = { effectId, action };
  navigate(itemPath(effectId, search));
}

/** The decision asked for on arrival at this item, if any; asking clears it. */
export function takeIntent(effectId: string): 'approve' | 'reject' | null {
  const found = intent?.effectId === effectId ? intent.action : null;
  intent = null;
  return found;
}

/** The item a decision moved on to, until its page has asked: its loading state says "the next item". */
let advancedTo: string | null = null;

/** Open the next item of the queue after a decision finished one. */
export function openNextItem(effectId: string, search = ''): void {
  advancedTo = effectId;
  navigate(itemPath(effectId, search));
}

/** True when this item was opened as the next one after a decision (until `forgetAdvance`). */
export function cameByAdvance(effectId: string): boolean {
  return advancedTo === effectId;
}

/** The item page has shown it: a later visit to the same item is not "the next item". */
export function forgetAdvance(effectId: string): void {
  if (advancedTo === effectId) advancedTo = null;
}

/**
 * The path of an item's page. `search` is the inbox's filter query (`?agent=…`), carried along so
 * the item page knows which queue it was opened from: its way back, and the next item after a decision.
 */
export function itemPath(effectId: string, search = ''): string {
  return `/items/${effectId}${search}`;
}

/** The inbox with a filter query (`?agent=…`, or empty). */
export function inboxPath(search = ''): string {
  return `/${search}`;
}

const CHANGE = 'interlock:navigate';

function subscribe(listener: () => void): () => void {
  window.addEventListener('popstate', listener);
  window.addEventListener(CHANGE, listener);
  return () => {
    window.removeEventListener('popstate', listener);
    window.removeEventListener(CHANGE, listener);
  };
}

const snapshot = () => window.location.pathname + window.location.search;

/** Go to a path inside the app without a reload. `replace` keeps the back button meaningful while typing a search. */
export function navigate(path: string, options: { replace?: boolean } = {}): void {
  if (path === snapshot()) return;
  if (options.replace) window.history.replaceState(null, '', path);
  else window.history.pushState(null, '', path);
  window.dispatchEvent(new Event(CHANGE));
}

/** The query string now (`?a=b`, or empty), re-rendering when it changes. */
export function useSearch(): string {
  const location = useSyncExternalStore(subscribe, snapshot);
  const at = location.indexOf('?');
  return at < 0 ? '' : location.slice(at);
}

/** The current route; re-renders on every navigation, back and forward included. */
export function useRoute(): Route {
  const location = useSyncExternalStore(subscribe, snapshot);
  const at = location.indexOf('?');
  return at < 0 ? parseRoute(location, '') : parseRoute(location.slice(0, at), location.slice(at));
}
