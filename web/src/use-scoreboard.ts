import { useCallback, useEffect, useRef, useState } from 'react';
// Type-only: the board's shape is the server's (erased from the bundle). It belongs in shared/api.ts.
import type { Scoreboard } from '../../shared/api.ts';
import type { MoneyPoint, VolumePoint } from '../../shared/api.ts';
import { callApi, messageOf } from './api-client.ts';
import type { LiveFeed } from './live.ts';

/** The periods finance picks from; `all` is the whole journal. */
export const RANGES = ['24h', '7d', '30d', 'all'] as const;
/** One period. */
export type RangeId = (typeof RANGES)[number];

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** How far back each period reaches from the server's now; null is no limit. */
const RANGE_SPAN_MS: Record<RangeId, number | null> = { '24h': DAY_MS, '7d': 7 * DAY_MS, '30d': 30 * DAY_MS, all: null };

/** The period the volume chart shows when the figures cover all time (the series has no "since the first request"). */
export const ALL_TIME_VOLUME_SPAN_MS = 30 * DAY_MS;

/** How often the figures are read again while the page is open and in use. */
export const REFRESH_MS = 5_000;
/**
 * With no key, pointer or scroll for this long the page stops reading: every read touches the
 * session, so a forgotten tab would otherwise never let the session's idle limit end it.
 */
export const IDLE_PAUSE_MS = 10 * 60_000;
/** A browser clock further than this from the server's makes the period's start be recomputed at once. */
const CLOCK_SKEW_MAX_MS = 60_000;

/** `GET /api/scoreboard/series`: what the charts draw. */
export interface ScoreboardSeries {
  volume: VolumePoint[];
  waits: { label: string; count: number }[];
  breaches_by_group: Record<string, number>;
  /** The same breaches by the group that missed them (absent from an older server). */
  breaches_missed_by_group?: Record<string, number>;
  escalated_by_reason: Record<string, number>;
  /** The same trips by reason and the group they went to first, most first (absent from an older server). */
  escalated_by_reason_and_group?: { reason: string; group: string; count: number }[];
  /** Money refunded per bucket, by currency (absent from an older server). */
  money?: Record<string, MoneyPoint[]>;
  from_ms: number;
  to_ms: number;
  /** Every group a request was routed to, when the server sends it (it does not yet: the selector then uses the groups it sees). */
  groups?: string[];
}

/** What the page shows: a period and, optionally, one approver group. */
export interface ScoreboardFilter {
  range: RangeId;
  group: string;
}

/** One consistent reading of the figures and the charts, for one filter. */
export interface ScoreboardSnapshot {
  filter: ScoreboardFilter;
  board: Scoreboard;
  series: ScoreboardSeries;
  /** The volume over time (for all time, the last 30 days). */
  volume: ScoreboardSeries;
  /** The query the board was read with: the CSV link uses it, so it holds the same figures. */
  query: string;
  nowMs: number;
  /** When the figures were read, on the application clock (the server's `now_ms`), as every time the items show. */
  readAtMs: number;
}

export interface ScoreboardState {
  snapshot: ScoreboardSnapshot | null;
  /** Why the last read failed; the previous snapshot, if any, stays on screen. */
  error: string | null;
  /** True while a read for a filter other than the snapshot's is under way. */
  switching: boolean;
  /** Reading stopped: the tab is idle (see IDLE_PAUSE_MS). */
  paused: boolean;
  /** Every group seen so far: the viewer's, and those the figures name. */
  groups: string[];
}

/** Where a period starts on the server's clock; null for all time. */
function periodStartMs(range: RangeId, serverNowMs: number): number | null {
  const spanMs = RANGE_SPAN_MS[range];
  return spanMs === null ? null : Math.floor(serverNowMs - spanMs);
}

/** The query string of the scoreboard routes: where the period starts, and the group. */
export function boardQuery(fromMs: number | null, group: string): string {
  const params = new URLSearchParams();
  if (fromMs !== null) params.set('from_ms', String(fromMs));
  if (group) params.set('group', group);
  return params.toString();
}

const withQuery = (path: string, query: string) => (query ? `${path}?${query}` : path);

/** Read the board, then its charts for the same period (the board's answer corrects a skewed browser clock first). */
export async function readSnapshot(filter: ScoreboardFilter, offsetMs: number): Promise<ScoreboardSnapshot> {
  const guessMs = Date.now() + offsetMs;
  let query = boardQuery(periodStartMs(filter.range, guessMs), filter.group);
  let answer = await callApi<{ board: Scoreboard; now_ms: number }>('GET', withQuery('/api/scoreboard', query));
  if (filter.range !== 'all' && Math.abs(answer.now_ms - guessMs) > CLOCK_SKEW_MAX_MS) {
    query = boardQuery(periodStartMs(filter.range, answer.now_ms), filter.group);
    answer = await callApi('GET', withQuery('/api/scoreboard', query));
  }
  // For all time the series starts at 0, so its waits and breaches cover everything; volume
  // buckets that wide say nothing, so the volume chart reads the last 30 days on its own.
  const allTime = filter.range === 'all';
  const [series, volume] = await Promise.all([
    callApi<ScoreboardSeries>('GET', withQuery('/api/scoreboard/series', allTime ? boardQuery(0, filter.group) : query)),
    allTime ? callApi<ScoreboardSeries>('GET', withQuery('/api/scoreboard/series', boardQuery(answer.now_ms - ALL_TIME_VOLUME_SPAN_MS, filter.group))) : null,
  ]);
  return { filter, board: answer.board, series, volume: volume ?? series, query, nowMs: answer.now_ms, readAtMs: answer.now_ms };
}

function groupsIn(snapshot: ScoreboardSnapshot): string[] {
  return [
    ...(snapshot.series.groups ?? []),
    ...Object.keys(snapshot.board.sla_breaches_by_group),
    ...Object.keys(snapshot.series.breaches_by_group),
    ...Object.keys(snapshot.series.breaches_missed_by_group ?? {}),
  ];
}

const sameFilter = (a: ScoreboardFilter, b: ScoreboardFilter) => a.range === b.range && a.group === b.group;

/**
 * The scoreboard for a filter, read again every few seconds (finance has no live feed), at once
 * when the approver's live feed reports a change, and when the tab comes back into view. Reads
 * never overlap; an answer for an older filter is dropped.
 */
export function useScoreboard(filter: ScoreboardFilter, ownGroups: readonly string[], feed: LiveFeed | null) {
  const [state, setState] = useState<ScoreboardState>(() => ({
    snapshot: null,
    error: null,
    switching: true,
    paused: false,
    groups: [...new Set([...ownGroups, ...(filter.group ? [filter.group] : [])])].sort(),
  }));
  const offsetMs = useRef(0);
  const lastActivityMs = useRef(Date.now());
  const trigger = useRef<() => void>(() => {});
  const { range, group } = filter;

  useEffect(() => {
    const current: ScoreboardFilter = { range, group };
    let stopped = false;
    let running = false;
    let again = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    setState((s) => ({ ...s, switching: s.snapshot === null || !sameFilter(s.snapshot.filter, current) }));

    const read = async (): Promise<void> => {
      if (stopped) return;
      if (running) {
        again = true;
        return;
      }
      clearTimeout(timer);
      if (document.visibilityState === 'hidden') return;
      if (Date.now() - lastActivityMs.current > IDLE_PAUSE_MS) {
        setState((s) => ({ ...s, paused: true }));
        return;
      }
      running = true;
      try {
        const snapshot = await readSnapshot(current, offsetMs.current);
        offsetMs.current = snapshot.nowMs - Date.now();
        if (!stopped) {
          setState((s) => ({
            snapshot,
            error: null,
            switching: false,
            paused: false,
            groups: [...new Set([...s.groups, ...groupsIn(snapshot)])].sort(),
          }));
        }
      } catch (error) {
        if (!stopped) setState((s) => ({ ...s, error: messageOf(error), switching: false, paused: false }));
      } finally {
        running = false;
        if (!stopped) {
          if (again) {
            again = false;
            void read();
          } else timer = setTimeout(() => void read(), REFRESH_MS);
        }
      }
    };
    trigger.current = () => void read();
    void read();

    const handleVisible = () => {
      if (document.visibilityState === 'visible') void read();
    };
    const handleActivity = () => {
      const wasIdle = Date.now() - lastActivityMs.current > IDLE_PAUSE_MS;
      lastActivityMs.current = Date.now();
      if (wasIdle) void read();
    };
    const activity = ['pointerdown', 'keydown', 'wheel', 'touchstart'] as const;
    document.addEventListener('visibilitychange', handleVisible);
    window.addEventListener('online', handleVisible);
    for (const type of activity) window.addEventListener(type, handleActivity, { passive: true });
    // An approver's feed speaks when an item of theirs changes (or the clock moves): read again then too.
    const unsubscribe = feed?.subscribe(() => void read());
    return () => {
      stopped = true;
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', handleVisible);
      window.removeEventListener('online', handleVisible);
      for (const type of activity) window.removeEventListener(type, handleActivity);
      unsubscribe?.();
    };
  }, [range, group, feed]);

  /** Read now (the retry and resume buttons). */
  const refresh = useCallback(() => {
    lastActivityMs.current = Date.now();
    trigger.current();
  }, []);

  return { state, refresh };
}
