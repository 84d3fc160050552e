import type { ReactNode } from 'react';
import { inboxPath } from '../router.ts';
import { Link } from './Link.tsx';

/** Finance reads every item and decides none (interlock.yaml): the page says so where the buttons would be. */
export function ReadOnlyPanel() {
  return (
    <section className="panel decision-panel read-only-panel" aria-labelledby="read-only-title">
      <h2 id="read-only-title">Read only</h2>
      <p className="decide-closed">Finance sees the inbox, the history and the scoreboard but decides nothing: only the approvers of the item’s group can decide it.</p>
    </section>
  );
}

export function ItemFrame({ title = 'Item', search, children }: { title?: string; search: string; children: ReactNode }) {
  return (
    <section className="page item-page">
      <p className="breadcrumb">
        <Link href={inboxPath(search)} className="breadcrumb-link">
          ← Inbox
        </Link>
      </p>
      <h1 id="page-title" tabIndex={-1} className="sr-only">
        {title}
      </h1>
      {children}
    </section>
  );
}
