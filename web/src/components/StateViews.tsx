import type { ReactNode } from 'react';
import type { Tone } from '../labels.ts';

/** A spinner with words, announced politely; `children` say more in the same announcement (a key held until it is ready). */
export function LoadingState({ label, children }: { label: string; children?: ReactNode }) {
  return (
    <div className="state-view" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" />
      <p>{label}</p>
      {children}
    </div>
  );
}

/** An empty list that says why it is empty and what happens next; `pageTitle` makes its title the page's h1. */
export function EmptyState({ title, children, icon = '✓', pageTitle = false }: { title: string; children?: ReactNode; icon?: string; pageTitle?: boolean }) {
  return (
    <div className="state-view empty">
      <span className="state-icon" aria-hidden="true">
        {icon}
      </span>
      {pageTitle ? (
        <h1 id="page-title" tabIndex={-1}>
          {title}
        </h1>
      ) : (
        <h2>{title}</h2>
      )}
      {children}
    </div>
  );
}

/** A failure with the server's sentence and a way to try again. */
export function ErrorState({ title, message, onRetry }: { title: string; message: string; onRetry?: () => void }) {
  return (
    <div className="state-view error" role="alert">
      <span className="state-icon" aria-hidden="true">
        !
      </span>
      <h2>{title}</h2>
      <p>{message}</p>
      {onRetry && (
        <button type="button" className="button" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  );
}

/** A small coloured label. */
export function Badge({ tone, children, className = '' }: { tone: Tone; children: ReactNode; className?: string }) {
  return <span className={`badge badge-${tone} ${className}`.trim()}>{children}</span>;
}
