import type { Entry } from '../../shared/entries.ts';

// Two clocks reach the page (server/app/clock.ts): the application clock, which deadlines, decisions
// and the live feed's `now_ms` run on, and the wall clock journal entries are sealed with
// (`ts_ms`) and Stripe reads are stamped with (`as_of_ms`). They differ only when the
// application clock was moved by hand (test mode, demos). Everything the page shows side by side
// is put on the application clock, so a history step never seems to come after a deadline it
// preceded.

/** Under this, the live feed's offset is taken as this browser's own clock error, not a moved application clock. */
const MOVED_CLOCK_MIN_MS = 60_000;

/** The application clock now, from this browser's clock and the live feed's offset. */
export function appNowMs(browserNowMs: number, offsetMs: number): number {
  return browserNowMs + offsetMs;
}

/**
 * A wall-clock time from the server (a Stripe read's `as_of_ms`) on the application clock. The
 * feed's offset is the application clock minus this browser's clock: when it is large, the
 * application clock was moved and the wall time is moved with it; a small one is the browser's
 * clock being a little off, which says nothing about the server's two clocks.
 */
export function wallToAppMs(wallMs: number, offsetMs: number): number {
  return Math.abs(offsetMs) < MOVED_CLOCK_MIN_MS ? wallMs : wallMs + offsetMs;
}

/** An application-clock time as the wall clock has it (a period asked of Stripe), the inverse of `wallToAppMs`. */
export function appToWallMs(appMs: number, offsetMs: number): number {
  return Math.abs(offsetMs) < MOVED_CLOCK_MIN_MS ? appMs : appMs - offsetMs;
}

/** The application-clock time an entry carries itself, when it carries one. */
function ownAppMs(entry: Entry): number | null {
  return 'at_ms' in entry && typeof entry.at_ms === 'number' ? entry.at_ms : null;
}

/**
 * Each entry's time on the application clock. Entries with `at_ms` carry it; the others take
 * their wall time moved by the gap between the two clocks at the nearest earlier entry that
 * carries both (the application clock only ever moves forward, so the earlier gap is the one
 * that held), or the nearest later one when none came before.
 */
export function entryAppTimes(history: readonly Entry[]): number[] {
  const gaps = history.map((entry) => {
    const at = ownAppMs(entry);
    return at === null ? null : at - entry.ts_ms;
  });
  const firstGap = gaps.find((gap) => gap !== null) ?? 0;
  let gap = firstGap;
  return history.map((entry, index) => {
    const own = gaps[index];
    if (own !== null && own !== undefined) {
      gap = own;
      return entry.ts_ms + own;
    }
    return entry.ts_ms + gap;
  });
}

/** The gap between the two clocks as the journal saw it: from each entry that carries both, its wall time and the gap. */
export function clockGaps(history: readonly Entry[]): { wallMs: number; gapMs: number }[] {
  return history.flatMap((entry) => {
    const at = ownAppMs(entry);
    return at === null ? [] : [{ wallMs: entry.ts_ms, gapMs: at - entry.ts_ms }];
  });
}

/**
 * A past wall-clock moment from Stripe (a charge, a refund) on the application clock, by the gap
 * that held then: the gap of the last journal entry before it, else of the first one. A moment
 * after the last journal entry takes the live feed's offset (the gap now) when the application
 * clock was moved since: the clock only moves forward, and a refund made outside Interlock after
 * the clock was moved is on the moved clock. With no journal gap at all, the live feed's offset.
 */
export function pastWallToAppMs(wallMs: number, gaps: readonly { wallMs: number; gapMs: number }[], offsetMs: number): number {
  if (gaps.length === 0) return wallToAppMs(wallMs, offsetMs);
  let gap = gaps[0]?.gapMs ?? 0;
  for (const g of gaps) if (g.wallMs <= wallMs) gap = g.gapMs;
  const last = gaps[gaps.length - 1]!;
  const movedSince = Math.abs(offsetMs) >= MOVED_CLOCK_MIN_MS && offsetMs > last.gapMs;
  return wallMs > last.wallMs && movedSince ? wallMs + offsetMs : wallMs + gap;
}
