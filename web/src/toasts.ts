import { useSyncExternalStore } from 'react';
import type { Tone } from './labels.ts';

// Short confirmations that outlive a page change: "Sent $80.00 refund case-4471" after a decision
// opens the next item, "2 new items" while the person reads something else. They never hold an
// action that matters (there is no undo), so missing one loses nothing.

/** A toast on screen this long, unless the person hovers or focuses it. */
const TOAST_MS = 6_000;
/** At most this many at once: the oldest goes first. */
const TOASTS_MAX = 3;

export interface Toast {
  id: number;
  /** Toasts with the same key replace each other (e.g. one running count of arrivals). */
  key: string | null;
  text: string;
  tone: Tone;
  /** A place to go, e.g. the new item. */
  link: { href: string; label: string } | null;
  /** What the decision's answer was, for tests and styles (`data-status`). */
  status: string | null;
}

let toasts: readonly Toast[] = [];
let nextId = 1;
const listeners = new Set<() => void>();
const timers = new Map<number, ReturnType<typeof setTimeout>>();

function emit(next: readonly Toast[]): void {
  toasts = next;
  for (const listener of listeners) listener();
}

/** Show a toast; returns its id. */
export function showToast(toast: Partial<Omit<Toast, 'id'>> & { text: string }): number {
  const id = nextId++;
  const full: Toast = { id, key: null, tone: 'neutral', link: null, status: null, ...toast };
  const kept = toasts.filter((t) => full.key === null || t.key !== full.key);
  for (const gone of toasts) if (!kept.includes(gone)) clearTimer(gone.id);
  emit([...kept, full].slice(-TOASTS_MAX));
  holdToast(id, false);
  return id;
}

/** The toast with this key, if it is still on screen. */
export function toastWithKey(key: string): Toast | null {
  return toasts.find((t) => t.key === key) ?? null;
}

export function dismissToast(id: number): void {
  clearTimer(id);
  emit(toasts.filter((t) => t.id !== id));
}

function clearTimer(id: number): void {
  const timer = timers.get(id);
  if (timer) clearTimeout(timer);
  timers.delete(id);
}

/** Keep a toast while the person hovers or focuses it; let it go a while after they leave. */
export function holdToast(id: number, held: boolean): void {
  clearTimer(id);
  if (!held) timers.set(id, setTimeout(() => dismissToast(id), TOAST_MS));
}

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** The toasts on screen now. */
export function useToasts(): readonly Toast[] {
  return useSyncExternalStore(subscribe, () => toasts);
}

/** At most this many of a person's own repairs are remembered: each is needed only until its repair arrives. */
const OWN_REPAIRS_MAX = 50;
const ownRepairs: string[] = [];

/**
 * This person is sending a repair of `requestId`: the request the repair creates is their own
 * doing, so when it reaches their inbox it is not announced back to them as new. Noted before the
 * decision is sent, since the live feed can bring the repair before the decision's answer.
 */
export function noteOwnRepair(requestId: string): void {
  ownRepairs.push(requestId);
  if (ownRepairs.length > OWN_REPAIRS_MAX) ownRepairs.shift();
}

/** True when an arriving request is a repair this person sent (its `repair_of` is a request they repaired). */
export function isOwnRepair(repairOf: string | undefined): boolean {
  return repairOf !== undefined && ownRepairs.includes(repairOf);
}
