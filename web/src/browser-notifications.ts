import { useEffect, useSyncExternalStore } from 'react';
import type { InboxItem } from '../../shared/api.ts';
import { escalationWhy } from '../../shared/escalation-words.ts';
import { itemCurrency } from './currency.ts';
import { formatMoney } from './format.ts';
import type { LiveFeed } from './live.ts';
import { itemPath, navigate } from './router.ts';

// Browser notifications of new items, for an approver whose inbox tab is in the background.
// Permission is asked for only when the person clicks the button (browsers penalise, and people
// rightly refuse, a prompt on load); their choice is remembered per user in this browser.

/**
 * Where notifications stand for this person in this browser: no Notification API at all, blocked
 * by the browser (only the person can undo that, in the site settings), or their choice.
 */
export type NotifyState = 'unsupported' | 'denied' | 'off' | 'on';

const STORAGE_PREFIX = 'interlock:notify-new-items:';
const CHANGE = 'interlock:notify-change';

function isSupported(): boolean {
  return typeof window !== 'undefined' && 'Notification' in window;
}

function readChoice(user: string): boolean {
  try {
    return localStorage.getItem(STORAGE_PREFIX + user) === 'on';
  } catch {
    // Storage blocked: nothing remembered, the button still works for this page's life.
    return false;
  }
}

function writeChoice(user: string, on: boolean): void {
  try {
    if (on) localStorage.setItem(STORAGE_PREFIX + user, 'on');
    else localStorage.removeItem(STORAGE_PREFIX + user);
  } catch {
    // As above.
  }
  window.dispatchEvent(new Event(CHANGE));
}

/** This person's notification state now: the browser's permission first, then their choice. */
export function notifyStateOf(user: string): NotifyState {
  if (!isSupported()) return 'unsupported';
  if (Notification.permission === 'denied') return 'denied';
  return Notification.permission === 'granted' && readChoice(user) ? 'on' : 'off';
}

function subscribe(listener: () => void): () => void {
  // `storage`: the choice changed in another tab; `focus`: the permission may have changed in the site settings.
  for (const event of [CHANGE, 'storage', 'focus']) window.addEventListener(event, listener);
  return () => {
    for (const event of [CHANGE, 'storage', 'focus']) window.removeEventListener(event, listener);
  };
}

/** The person's notification state, re-rendering when it changes. */
export function useNotifyState(user: string): NotifyState {
  return useSyncExternalStore(subscribe, () => notifyStateOf(user));
}

/**
 * Turn notifications on (asking the browser for permission: the one place it is asked) or off.
 * Returns the state after the person answered the browser's prompt.
 */
export async function setNotifyChoice(user: string, on: boolean): Promise<NotifyState> {
  if (!isSupported()) return 'unsupported';
  if (!on) {
    writeChoice(user, false);
    return notifyStateOf(user);
  }
  const permission = await Notification.requestPermission();
  // A dismissed prompt ('default') is not a no: nothing is remembered and the button stays.
  writeChoice(user, permission === 'granted');
  return notifyStateOf(user);
}

/** The notification for one new item: what it is worth and why it needs a person; a click opens it. */
function showNewItem(item: InboxItem): void {
  const body = `${formatMoney(item.request.amount, itemCurrency(item))} · ${escalationWhy(item)}`;
  let notification: Notification;
  try {
    notification = new Notification('New refund to decide', { body, tag: item.effect_id });
  } catch (error) {
    // Some browsers (Chrome on Android) allow notifications only from a service worker.
    console.warn('notifications: this browser refused to show one', error);
    return;
  }
  notification.onclick = () => {
    window.focus();
    navigate(itemPath(item.effect_id));
    notification.close();
  };
}

/**
 * While this person has notifications on, show one for each item that newly arrives in their
 * inbox over the live feed while the tab is hidden. An item is new when it was not in the inbox
 * just before: the first snapshot is what the person already has, and updates to an item already
 * there are not news.
 */
export function useNewItemNotifications(feed: LiveFeed | null, user: string): void {
  const state = useNotifyState(user);
  useEffect(() => {
    if (!feed || state !== 'on') return;
    let present: Set<string> | null = null;
    const seed = () => {
      const items = feed.getState().items;
      if (present === null && items !== null) present = new Set(items.map((i) => i.effect_id));
    };
    seed();
    const unsubscribe = feed.subscribe(seed);
    const stopListening = feed.onItem((effectId, item) => {
      if (present === null) return;
      const isNew = item !== null && !present.has(effectId);
      if (item) present.add(effectId);
      else present.delete(effectId);
      if (isNew && document.visibilityState === 'hidden' && notifyStateOf(user) === 'on') showNewItem(item);
    });
    return () => {
      unsubscribe();
      stopListening();
    };
  }, [feed, state, user]);
}
