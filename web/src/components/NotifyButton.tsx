import { useState } from 'react';
import { setNotifyChoice, useNotifyState } from '../browser-notifications.ts';

/**
 * "Notify me of new items": a toggle that asks the browser for permission when pressed, never
 * before. Hidden where the browser has no notifications; a plain sentence when it blocks them.
 */
export function NotifyButton({ user }: { user: string }) {
  const state = useNotifyState(user);
  const [asking, setAsking] = useState(false);
  if (state === 'unsupported') return null;
  if (state === 'denied') {
    return (
      <div className="notify-control">
        <button type="button" className="button small notify-button" aria-disabled="true" aria-describedby="notify-help">
          Notifications are blocked by this browser
        </button>
        <p id="notify-help" className="notify-help">
          To be told of new items, allow notifications for this site in the browser’s settings.
        </p>
      </div>
    );
  }
  const on = state === 'on';
  const handleClick = async () => {
    if (asking) return;
    setAsking(true);
    try {
      await setNotifyChoice(user, !on);
    } finally {
      setAsking(false);
    }
  };
  return (
    <div className="notify-control">
      <button type="button" className={`button small notify-button${on ? ' is-on' : ''}`} aria-pressed={on} onClick={() => void handleClick()}>
        Notify me of new items
        <span className="notify-state" aria-hidden="true">
          {on ? 'On' : 'Off'}
        </span>
      </button>
      {on && <p className="notify-help">Shown while this tab is in the background.</p>}
    </div>
  );
}
