import type { EventEmitter } from 'node:events';

// The signals `npm start` answers: SIGHUP reloads the config, SIGTERM and SIGINT stop the server
// gracefully. They are listened for from before the start, so a SIGHUP sent while the server is
// coming up (an operator who edited the file as it started) is kept and acted on once it is up,
// rather than lost; a SIGTERM then is Node's own, and ends the start.

/** What the signals need of a running server. */
export interface Signalled {
  app: { log: { info(message: string): void; error(fields: object, message: string): void } };
  reload(): Promise<unknown>;
  close(): Promise<void>;
}

/**
 * Listen for SIGHUP on `signals` (the process) now; once `started` resolves, also for SIGTERM and
 * SIGINT, and do at once the reload a SIGHUP asked for during the start. Resolves with the server.
 */
export async function answerSignals<T extends Signalled>(started: Promise<T>, signals: EventEmitter = process, exit: (code: number) => void = (code) => process.exit(code)): Promise<T> {
  let running: T | null = null;
  let reloadAsked = false;
  let stopping = false;
  const reload = (server: T) => {
    if (stopping) return;
    server.app.log.info('SIGHUP: reloading the config');
    // The reload logs what it changed or why it was refused.
    server.reload().catch((error: unknown) => server.app.log.error({ err: error }, 'config reload failed; the config in force stays'));
  };
  signals.on('SIGHUP', () => {
    if (running === null) reloadAsked = true;
    else reload(running);
  });
  const server = await started;
  running = server;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    server.app.log.info(`${signal}: shutting down`);
    await server.close();
    exit(0);
  };
  signals.on('SIGTERM', () => void stop('SIGTERM'));
  signals.on('SIGINT', () => void stop('SIGINT'));
  if (reloadAsked) {
    server.app.log.info('a SIGHUP came while the server was starting: the config is read again now');
    reload(server);
  }
  return server;
}
