import { useEffect, useRef, useSyncExternalStore } from 'react';

/** One shared one-second ticker for every countdown on the page. */
const tickListeners = new Set<() => void>();
let tickTimer: ReturnType<typeof setInterval> | null = null;
let tickNowMs = Date.now();

function subscribeTick(listener: () => void): () => void {
  tickListeners.add(listener);
  if (!tickTimer) {
    tickNowMs = Date.now();
    tickTimer = setInterval(() => {
      tickNowMs = Date.now();
      for (const l of tickListeners) l();
    }, 1000);
  }
  return () => {
    tickListeners.delete(listener);
    if (tickListeners.size === 0 && tickTimer) {
      clearInterval(tickTimer);
      tickTimer = null;
    }
  };
}

/** This browser's clock, re-rendering once a second. */
export function useNowMs(): number {
  return useSyncExternalStore(subscribeTick, () => tickNowMs);
}

/** True when a key press is meant for a field or an open dialog, not for a page shortcut. */
export function isTypingTarget(event: KeyboardEvent): boolean {
  if (event.ctrlKey || event.metaKey || event.altKey) return true;
  if (document.querySelector('dialog[open]')) return true;
  const target = event.target as HTMLElement | null;
  if (!target) return false;
  return target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName);
}

/**
 * Single-key shortcuts for a page, e.g. `{ j: next, k: previous }`. Ignored while typing in a
 * field or while a dialog is open; the latest handlers are used without re-subscribing.
 */
export function useShortcuts(keys: Record<string, (event: KeyboardEvent) => void>, enabled = true): void {
  const latest = useRef(keys);
  latest.current = keys;
  useEffect(() => {
    if (!enabled) return;
    const handleKeyDown = (event: KeyboardEvent) => {
      if (event.defaultPrevented || isTypingTarget(event)) return;
      const handler = latest.current[event.key];
      if (!handler) return;
      event.preventDefault();
      handler(event);
    };
    window.addEventListener('keydown', handleKeyDown);
    return () => window.removeEventListener('keydown', handleKeyDown);
  }, [enabled]);
}

/** Set the tab's title while a page is shown. */
export function useDocumentTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · Interlock`;
  }, [title]);
}

/**
 * Move keyboard focus along a list with j/k: the focusable rows are the elements matching
 * `selector` inside the container. Returns the ref to put on the container.
 */
export function useListKeys<T extends HTMLElement>(selector: string, enabled = true) {
  const ref = useRef<T>(null);
  const move = (step: number) => {
    const rows = [...(ref.current?.querySelectorAll<HTMLElement>(selector) ?? [])];
    if (rows.length === 0) return;
    const at = rows.findIndex((row) => row === document.activeElement || row.contains(document.activeElement));
    const next = at < 0 ? (step > 0 ? 0 : rows.length - 1) : Math.min(rows.length - 1, Math.max(0, at + step));
    rows[next]?.focus();
    rows[next]?.scrollIntoView({ block: 'nearest' });
  };
  useShortcuts({ j: () => move(1), k: () => move(-1) }, enabled);
  return ref;
}
