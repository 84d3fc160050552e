import { type ReactNode, useEffect, useRef, useState } from 'react';
import type { SessionInfo } from '../../../shared/api.ts';
import { whyFor } from '../../../shared/statuses.ts';
import { useDocumentTitle } from '../hooks.ts';
import { humanize } from '../labels.ts';
import { useLiveFeedOrNull } from '../live.ts';
import { navigate } from '../router.ts';
import { FIGURES, formatCount, formatWait } from '../scoreboard-copy.ts';
import { IDLE_PAUSE_MS, RANGES, type RangeId, REFRESH_MS, type ScoreboardFilter, type ScoreboardSnapshot, useScoreboard } from '../use-scoreboard.ts';
import { BarChart } from './charts/BarChart.tsx';
import { BreachTable } from './charts/BreachTable.tsx';
import { MoneyChart } from './charts/MoneyChart.tsx';
import { VolumeChart } from './charts/VolumeChart.tsx';
import { FigureTable, HeadlineFigures, MoneyHeadline, MoneyTable } from './ScoreboardFigures.tsx';
import { EmptyState, ErrorState, LoadingState } from './StateViews.tsx';
import '../scoreboard.css';

/** The period picker's words, short enough for four side by side on a phone. */
const RANGE_LABELS: Record<RangeId, string> = { '24h': '24 hours', '7d': '7 days', '30d': '30 days', all: 'All time' };
/** The period inside a sentence. */
const RANGE_WORDS: Record<RangeId, string> = { '24h': 'the last 24 hours', '7d': 'the last 7 days', '30d': 'the last 30 days', all: 'all time' };

const isRange = (value: string | null): value is RangeId => (RANGES as readonly string[]).includes(value ?? '');
const timeFormat = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', second: '2-digit' });

/** The filter in the address bar, so a reload or a shared link shows the same figures. */
function filterFromAddress(): ScoreboardFilter {
  const params = new URLSearchParams(window.location.search);
  const range = params.get('range');
  return { range: isRange(range) ? range : 'all', group: params.get('group') ?? '' };
}

function addressOf(filter: ScoreboardFilter): string {
  const params = new URLSearchParams();
  if (filter.range !== 'all') params.set('range', filter.range);
  if (filter.group) params.set('group', filter.group);
  const query = params.toString();
  return query ? `/scoreboard?${query}` : '/scoreboard';
}

/**
 * What finance reads: how the refunds agents asked for were decided (by policy or by a person),
 * how fast, and what Stripe confirmed, for a period and a group, kept current by reading again
 * every few seconds. Approvers reach it from the header too, and read it of their own groups: the
 * server counts only the requests routed to them, and refuses another group.
 */
export function ScoreboardPage({ session }: { session: SessionInfo }) {
  const feed = useLiveFeedOrNull();
  const [filter, setFilter] = useState<ScoreboardFilter>(filterFromAddress);
  const { state, refresh } = useScoreboard(filter, session.groups, feed);
  useDocumentTitle('Scoreboard');
  useEffect(() => navigate(addressOf(filter), { replace: true }), [filter]);

  const snapshot = state.snapshot;
  const approver = session.role === 'approver';
  // An approver may ask for their own groups only (another is refused), whatever the figures name.
  const groupChoices = approver ? session.groups : state.groups;
  const everyGroup = approver ? `your groups (${session.groups.join(', ') || 'none'})` : 'all groups';
  const scope = `${RANGE_WORDS[filter.range]}, ${filter.group ? `group ${filter.group}` : everyGroup}`;
  let body: ReactNode;
  if (snapshot === null && state.error) {
    body = (
      <>
        <ErrorState title="The scoreboard could not be read" message={state.error} onRetry={refresh} />
        {filter.group && (
          <p className="board-recover">
            <button type="button" className="button" onClick={() => setFilter({ ...filter, group: '' })}>
              {approver ? 'Show your groups' : 'Show all groups'}
            </button>
          </p>
        )}
      </>
    );
  } else if (snapshot === null) {
    body = <LoadingState label="Reading the figures…" />;
  } else {
    body = <BoardBody snapshot={snapshot} busy={state.switching} onShowAllTime={() => setFilter({ ...filter, range: 'all' })} />;
  }

  return (
    <section className="page board-page">
      <div className="page-head">
        <div>
          <h1 id="page-title" tabIndex={-1}>
            Scoreboard
          </h1>
          <p className="lede">How the refunds agents asked for were decided, by policy or by a person; how fast; and what Stripe confirmed.</p>
          {approver && (
            <p className="board-own-groups">
              These figures count the requests routed to your groups ({session.groups.join(', ') || 'none'}) only; finance sees every group, and the
              requests the rules cleared with no person.
            </p>
          )}
        </div>
        <FreshnessIndicator snapshot={snapshot} error={state.error} switching={state.switching} paused={state.paused} />
      </div>
      <div className="board-controls">
        <fieldset className="segmented">
          <legend>Period</legend>
          <div className="segmented-options">
            {RANGES.map((range) => (
              <label key={range} className="segment">
                <input
                  type="radio"
                  name="board-range"
                  value={range}
                  checked={filter.range === range}
                  onChange={() => setFilter({ ...filter, range })}
                />
                <span>{RANGE_LABELS[range]}</span>
              </label>
            ))}
          </div>
        </fieldset>
        <div className="board-field">
          <label htmlFor="board-group">Group</label>
          <select id="board-group" value={filter.group} onChange={(e) => setFilter({ ...filter, group: e.target.value })}>
            <option value="">{approver ? 'Your groups' : 'All groups'}</option>
            {groupChoices.map((group) => (
              <option key={group} value={group}>
                {group}
              </option>
            ))}
          </select>
        </div>
        <CsvLink snapshot={snapshot} switching={state.switching} />
      </div>
      <RefreshNotice error={snapshot ? state.error : null} paused={state.paused} readAtMs={snapshot?.readAtMs ?? null} onRefresh={refresh} />
      <Announcer snapshot={snapshot} />
      <h2 className="board-scope">Figures for {scope}</h2>
      {body}
    </section>
  );
}

/** The figures, the charts and the definitions; dimmed while a new period or group loads. */
function BoardBody({ snapshot, busy, onShowAllTime }: { snapshot: ScoreboardSnapshot; busy: boolean; onShowAllTime: () => void }) {
  const { board, series, filter } = snapshot;
  const period = RANGE_WORDS[filter.range];
  const empty = board.requests === 0 && board.escalated === 0 && board.sent_after_person === 0;
  const times = board.time_to_decision;
  // Nearly every trip is a rule's: the group it went to is what tells them apart.
  const reasons =
    series.escalated_by_reason_and_group?.map(({ reason, group, count }) => ({ key: `${reason} ${group}`, label: `${humanize(reason)} → ${group}`, note: whyFor(reason), count })) ??
    Object.entries(series.escalated_by_reason)
      .sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
      .map(([reason, count]) => ({ key: reason, label: humanize(reason), note: whyFor(reason), count }));
  const volumePeriod = filter.range === 'all' ? 'the last 30 days' : period;
  const waits = series.waits.map((bin) => ({ key: bin.label, label: bin.label, count: bin.count }));
  return (
    <div className={`board-body ${busy ? 'is-busy' : ''}`} aria-busy={busy}>
      {empty ? (
        <EmptyState title={filter.range === 'all' ? 'No requests yet' : `No requests in ${period}`} icon="∅">
          <p>When an agent asks for a refund it is counted here within seconds; there is no need to reload.</p>
          {filter.range !== 'all' && (
            <button type="button" className="button" onClick={onShowAllTime}>
              Show all time
            </button>
          )}
        </EmptyState>
      ) : (
        <>
          <HeadlineFigures board={board} />
          <h2 className="board-section-title" id="money-title">
            Money
          </h2>
          <p className="board-section-lede">
            Each currency on its own and in its own units (cents for dollars, whole yen): amounts in different currencies are never added together.
          </p>
          <MoneyHeadline board={board} />
          <h2 className="board-section-title">Over time, and why items went to a person</h2>
          <div className="chart-grid">
            <VolumeChart points={snapshot.volume.volume} fromMs={snapshot.volume.from_ms} toMs={snapshot.volume.to_ms} period={volumePeriod} />
            {Object.entries(snapshot.volume.money ?? {}).map(([currency, points]) => (
              <MoneyChart key={currency} currency={currency} points={points} fromMs={snapshot.volume.from_ms} toMs={snapshot.volume.to_ms} period={volumePeriod} />
            ))}
            <BarChart
              title="Time to decision"
              note={
                times.n === 0
                  ? 'How long people took to decide, from when an item reached them.'
                  : `How long people took to decide, from when an item reached them. Median ${formatWait(times.median_ms)}; p90 ${formatWait(times.p90_ms)}; longest ${formatWait(times.max_ms)}.`
              }
              bars={waits}
              nameHeading="Decided within"
              empty="Nobody has decided anything in this period yet."
            />
            <BarChart
              title="Escalations by reason and group"
              note="Each trip to a person, counted once by the reason it first went and the group it went to first."
              bars={reasons}
              nameHeading="Reason and group"
              empty="Nothing went to a person in this period."
              tone="warning"
            />
            <BreachTable missed={series.breaches_missed_by_group ?? {}} received={series.breaches_by_group} />
          </div>
        </>
      )}
      <h2 className="board-section-title" id="figure-help">
        Every figure, and how it is counted
      </h2>
      <p className="board-section-lede">
        Every figure is counted from the journal alone, so it is the same after a restart. The CSV download holds these figures for the same period and
        group, money in each currency's smallest unit (cents, whole yen).
      </p>
      <FigureTable board={board} charted={!empty} />
      <MoneyTable board={board} />
    </div>
  );
}

/** When the figures were read, and whether they are still being kept current. */
function FreshnessIndicator({ snapshot, error, switching, paused }: { snapshot: ScoreboardSnapshot | null; error: string | null; switching: boolean; paused: boolean }) {
  let tone = 'is-live';
  let text: string;
  if (snapshot === null && error) {
    tone = 'is-off';
    text = 'Not read';
  } else if (snapshot === null || switching) {
    tone = '';
    text = 'Reading…';
  } else if (paused) {
    tone = 'is-off';
    text = 'Paused';
  } else if (error) {
    tone = 'is-off';
    text = `Not updated since ${timeFormat.format(snapshot.readAtMs)}`;
  } else {
    text = `Updated ${timeFormat.format(snapshot.readAtMs)}`;
  }
  return (
    <p className={`live-indicator board-freshness ${tone}`} title={`The figures are read again every ${REFRESH_MS / 1000} seconds.`}>
      <span className="live-dot" aria-hidden="true" />
      {text}
    </p>
  );
}

/** Why the figures may be out of date, and a way to read them now. */
function RefreshNotice({ error, paused, readAtMs, onRefresh }: { error: string | null; paused: boolean; readAtMs: number | null; onRefresh: () => void }) {
  if (!paused && !error) return null;
  const since = readAtMs === null ? '' : ` They were read at ${timeFormat.format(readAtMs)}.`;
  return (
    <div className={`notice board-notice ${paused ? 'notice-info' : 'notice-warning'}`} role="status">
      <p>
        {paused ? (
          <>
            <strong>Updates paused.</strong> Nobody used this page for {IDLE_PAUSE_MS / 60_000} minutes, so it stopped reading the figures.{since}
          </>
        ) : (
          <>
            <strong>The figures could not be refreshed.</strong> {error}
            {since} Trying again every {REFRESH_MS / 1000} seconds.
          </>
        )}
      </p>
      <button type="button" className="button small" onClick={onRefresh}>
        {paused ? 'Resume updates' : 'Try now'}
      </button>
    </div>
  );
}

/** Tells screen-reader users when the main figures change, not on every read. */
function Announcer({ snapshot }: { snapshot: ScoreboardSnapshot | null }) {
  const [message, setMessage] = useState('');
  const previous = useRef<{ key: string; said: string } | null>(null);
  useEffect(() => {
    if (!snapshot) return;
    const { board, filter } = snapshot;
    const key = `${filter.range}/${filter.group}`;
    const said = `${formatCount(board.requests)} requests, ${formatCount(board.cleared_no_person)} ${FIGURES.cleared_no_person.label.toLowerCase()}, ${formatCount(board.open)} still open.`;
    if (previous.current?.key === key && previous.current.said !== said) setMessage(`Figures updated: ${said}`);
    previous.current = { key, said };
  }, [snapshot]);
  return (
    <p className="sr-only" aria-live="polite">
      {message}
    </p>
  );
}

/** The CSV of the figures on screen: the same query the board was read with. */
function CsvLink({ snapshot, switching }: { snapshot: ScoreboardSnapshot | null; switching: boolean }) {
  if (snapshot === null || switching) {
    return (
      <button type="button" className="button board-csv" disabled>
        Download CSV
      </button>
    );
  }
  const href = snapshot.query ? `/api/scoreboard.csv?${snapshot.query}` : '/api/scoreboard.csv';
  return (
    <a className="button board-csv" href={href} download="interlock-scoreboard.csv">
      <span aria-hidden="true">⤓</span> Download CSV
    </a>
  );
}
