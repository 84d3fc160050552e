import type { Viewer } from '../../../shared/api.ts';

/** "Bea Novak is viewing", "Bea Novak and Cy Okafor are viewing", "Bea Novak and 2 others are viewing". */
export function viewersSentence(viewers: readonly Viewer[]): string {
  const names = viewers.map((v) => v.display_name || v.name);
  if (names.length === 1) return `${names[0]} is viewing`;
  if (names.length === 2) return `${names[0]} and ${names[1]} are viewing`;
  return `${names[0]} and ${names.length - 1} others are viewing`;
}

/** Who else has this item open now, so two people do not decide it at once. */
export function PresenceNote({ viewers }: { viewers: readonly Viewer[] }) {
  return (
    <p className="presence-note" role="status">
      {viewers.length > 0 && (
        <>
          <span className="presence-dot" aria-hidden="true" />
          {viewersSentence(viewers)}
        </>
      )}
    </p>
  );
}
