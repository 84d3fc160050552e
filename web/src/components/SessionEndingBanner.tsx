import { useState } from 'react';
import { callApi, messageOf } from '../api-client.ts';
import { formatDuration } from '../format.ts';
import { useNowMs } from '../hooks.ts';
import { useLiveFeed, useLiveState } from '../live.ts';

/**
 * The session is about to end (the server warned over the live feed): how long is left and, while
 * the idle limit is what ends it, "Stay signed in". Watching a page never keeps a session alive;
 * this click does, as any call would.
 */
export function SessionEndingBanner() {
  const feed = useLiveFeed();
  const { sessionEnding } = useLiveState();
  const nowMs = useNowMs();
  const [error, setError] = useState<string | null>(null);
  if (sessionEnding === null) return null;
  const leftMs = Math.max(0, sessionEnding.atMs - nowMs);
  const handleStay = async () => {
    try {
      await callApi('GET', '/api/session');
      setError(null);
      feed.sessionKept();
    } catch (caught) {
      setError(messageOf(caught));
    }
  };
  return (
    <div className="session-banner" data-testid="session-ending">
      <div className="banner-inner">
        <div className="session-words">
          {/* Said once when it appears; the countdown beside it is not read out every second. */}
          <p role="alert">
            <strong>{sessionEnding.renewable ? 'Your session is about to end for lack of activity.' : 'Your session is about to reach its time limit.'}</strong>
          </p>
          <p>
            It ends in <span className="session-left">{formatDuration(leftMs)}</span>: after that nothing is sent under your name
            {sessionEnding.renewable ? ' until you log in again.' : '; log in again then to go on.'}
            {error && <span className="session-error"> {error}</span>}
          </p>
        </div>
        {sessionEnding.renewable && (
          <button type="button" className="button small primary" onClick={() => void handleStay()}>
            Stay signed in
          </button>
        )}
      </div>
    </div>
  );
}
