import { useCallback, useSyncExternalStore } from 'react';

// How the inbox lists items: cards (everything about an item at a glance) or compact (one line
// each, to work a long queue). Each person's choice is remembered in this browser.

/** The two densities of the inbox. */
export const DENSITIES = ['cards', 'compact'] as const;
/** One density. */
export type Density = (typeof DENSITIES)[number];

const STORAGE_PREFIX = 'interlock:inbox-density:';
const CHANGE = 'interlock:density-change';

function read(user: string): Density {
  try {
    return localStorage.getItem(STORAGE_PREFIX + user) === 'compact' ? 'compact' : 'cards';
  } catch {
    // Storage blocked: the default, and the toggle still works for this page's life.
    return memory.get(user) ?? 'cards';
  }
}

/** The choice when storage is blocked. */
const memory = new Map<string, Density>();

function subscribe(listener: () => void): () => void {
  // `storage`: another tab of this browser changed it.
  for (const event of [CHANGE, 'storage']) window.addEventListener(event, listener);
  return () => {
    for (const event of [CHANGE, 'storage']) window.removeEventListener(event, listener);
  };
}

/** This person's density, and a way to change it (remembered per user). */
export function useDensity(user: string): [Density, (density: Density) => void] {
  const density = useSyncExternalStore(subscribe, () => read(user));
  const set = useCallback(
    (next: Density) => {
      memory.set(user, next);
      try {
        localStorage.setItem(STORAGE_PREFIX + user, next);
      } catch {
        // As above.
      }
      window.dispatchEvent(new Event(CHANGE));
    },
    [user],
  );
  return [density, set];
}
