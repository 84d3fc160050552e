import type { Signals } from '../../db/port/signals.ts';

// The log lines of a server's listening connection (PostgreSQL's LISTEN, by which it hears the
// other servers' wake-ups and presence): a warning when it cannot be opened, at the start or after
// a drop, once however long the outage lasts, and a line when it is open again. Requests are
// answered all along; only the live pages wait for the journal's slower poll meanwhile.

/** The stable code of the warning: the listening connection could not be opened. */
export const LISTEN_UNAVAILABLE = 'listen_unavailable';
/** The stable code of the line saying it is open again. */
export const LISTEN_RESTORED = 'listen_restored';

/** Where the lines go. */
export interface ListenLog {
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
}

/** Log `signals`' listening connection's outages and returns from now on; the answer stops it. */
export function logListenOutages(signals: Pick<Signals, 'onListenState'>, log: ListenLog): () => void {
  return signals.onListenState((state) => {
    if (!state.listening) {
      log.warn(
        { code: LISTEN_UNAVAILABLE, err: state.error },
        "the connection listening for the other servers' wake-ups and presence cannot be opened (check DATABASE_LISTEN_URL, or DATABASE_URL); it is tried again, and the views poll the journal every 5 s meanwhile",
      );
    } else {
      log.info({ code: LISTEN_RESTORED, out_ms: state.outMs }, `listening for the other servers' wake-ups and presence again, after ${Math.round(state.outMs / 1000)} s without`);
    }
  });
}
