import type { LiveMessage } from '../../shared/api.ts';
import { limits } from '../../shared/limits.ts';
import { SESSION_CONFIRM_MS, type Session, type SessionStore } from '../sessions/sessions.ts';

/** How long before its end a session with this idle limit is warned: the warning's lead, or half the limit when that is short. */
export function sessionWarningLeadMs(idleMs: number): number {
  return Math.min(limits.sessionWarningMs, Math.floor(idleMs / 2));
}

export interface SessionWatchOptions {
  sessions: SessionStore;
  session: Session;
  idleMs: number;
  wallMs(): number;
  /** The application clock, for `now_ms` as every live message carries it. */
  nowMs(): number;
  send(message: LiveMessage): void;
}

/**
 * Watches one live feed's session: a warning `limits.sessionWarningMs` before it ends, the warning
 * taken back when a call keeps it alive (read again every `sessionWarningRecheckMs` meanwhile),
 * and the session ended at its time, though no call came to find it (the store then tells the
 * feed, which closes with 4401 session_expired). A session another process ended is found within
 * `SESSION_CONFIRM_MS` (the feed closes with 4401 unauthorized). The feed itself never keeps the
 * session alive. Returns the function that stops watching.
 */
export function watchSession(options: SessionWatchOptions): () => void {
  const leadMs = sessionWarningLeadMs(options.idleMs);
  // While warned, look again often enough to take the warning back soon after a call kept the
  // session alive: every recheck period, or a quarter of the lead when the limit is that short.
  const recheckMs = Math.max(limits.sessionWarningRecheckMinMs, Math.min(limits.sessionWarningRecheckMs, Math.floor(leadMs / 4)));
  let warned = false;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const schedule = (waitMs: number) => {
    if (stopped) return;
    timer = setTimeout(run, Math.max(0, waitMs));
    timer.unref();
  };
  const check = async () => {
    timer = null;
    if ((await options.sessions.expireIfDue(options.session)) || stopped) return;
    const { atMs, renewable } = options.sessions.endsAtMs(options.session);
    const leftMs = atMs - options.wallMs();
    const warning = leftMs <= leadMs;
    if (warning || warned) options.send({ type: 'session', warning, ends_in_ms: Math.max(0, leftMs), renewable, now_ms: options.nowMs() });
    warned = warning;
    // Just past the end (a session is over once the limit has passed), else at the warning, else soon again while warned.
    schedule(warning ? Math.min(leftMs + 1, recheckMs) : leftMs - leadMs);
  };
  // A store that could not be read is asked again at the next recheck.
  const run = () => void check().catch(() => schedule(recheckMs));
  // Ended by another process: the session is read again from the store every second.
  const confirm = setInterval(() => void options.sessions.expireIfDue(options.session, { fresh: true }).catch(() => {}), SESSION_CONFIRM_MS);
  confirm.unref();
  run();
  return () => {
    stopped = true;
    clearInterval(confirm);
    if (timer !== null) clearTimeout(timer);
    timer = null;
  };
}
