import { useLayoutEffect, useRef } from 'react';
import { dismissToast, holdToast, useToasts } from '../toasts.ts';
import { Link } from './Link.tsx';

/** The CSS variable the page reads to keep room for the toasts (styles.css). */
const TOASTS_HEIGHT_VAR = '--toasts-height';

/**
 * The toasts, in one polite live region at the bottom of the screen; each can be dismissed. They
 * never cover an item's buttons: the page keeps room below its end as tall as the toasts, focus
 * scrolls clear of them, and on a two-column item page they sit on the left, away from the
 * decision and the receipt.
 */
export function Toasts() {
  const toasts = useToasts();
  const list = useRef<HTMLOListElement>(null);
  useLayoutEffect(() => {
    const element = list.current;
    if (element === null) return;
    const root = document.documentElement;
    const keepRoom = () => root.style.setProperty(TOASTS_HEIGHT_VAR, `${Math.ceil(element.getBoundingClientRect().height)}px`);
    keepRoom();
    const observer = new ResizeObserver(keepRoom);
    observer.observe(element);
    return () => {
      observer.disconnect();
      root.style.removeProperty(TOASTS_HEIGHT_VAR);
    };
  }, []);
  return (
    <section className="toasts" aria-label="Notices">
      <ol className="toast-list" aria-live="polite" ref={list}>
        {toasts.map((toast) => (
          <li
            key={toast.id}
            className={`toast toast-${toast.tone}`}
            data-status={toast.status ?? undefined}
            onMouseEnter={() => holdToast(toast.id, true)}
            onMouseLeave={() => holdToast(toast.id, false)}
            onFocus={() => holdToast(toast.id, true)}
            onBlur={() => holdToast(toast.id, false)}
          >
            <p className="toast-text">{toast.text}</p>
            {toast.link && (
              <Link href={toast.link.href} className="toast-link">
                {toast.link.label}
              </Link>
            )}
            <button type="button" className="toast-close" aria-label={`Dismiss: ${toast.text}`} onClick={() => dismissToast(toast.id)}>
              ×
            </button>
          </li>
        ))}
      </ol>
    </section>
  );
}
