import { dismissToast, holdToast, useToasts } from '../toasts.ts';
import { Link } from './Link.tsx';

/** The toasts, in one polite live region at the bottom of the screen; each can be dismissed. */
export function Toasts() {
  const toasts = useToasts();
  return (
    <section className="toasts" aria-label="Notices">
      <ol className="toast-list" aria-live="polite">
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
