import { useNowMs } from '../hooks.ts';
import { useLiveFeed, useLiveState } from '../live.ts';

/** Says so when live updates are lost, and when the next try is; the inbox may be out of date meanwhile. */
export function ConnectionBanner() {
  const feed = useLiveFeed();
  const live = useLiveState();
  const nowMs = useNowMs();
  if (live.status !== 'reconnecting') return null;
  const inS = live.retryAtMs === null ? 0 : Math.max(0, Math.ceil((live.retryAtMs - nowMs) / 1000));
  return (
    <div className="connection-banner" role="status" aria-live="polite">
      <div className="banner-inner">
        <span className="pulse" aria-hidden="true" />
        <p>
          <strong>Connection lost. Reconnecting{inS > 0 ? ` in ${inS}s` : '…'}</strong>{' '}
          <span>Live updates are paused: what you see may be out of date, and a decision is still checked by the server.</span>
        </p>
        <button type="button" className="button small" onClick={feed.retryNow}>
          Reconnect now
        </button>
      </div>
    </div>
  );
}
