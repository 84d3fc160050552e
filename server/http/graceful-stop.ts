import { Server as NetServer, type Socket } from 'node:net';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { AppError } from './errors.ts';
import { REQUEST_ID_HEADER } from './request-ids.ts';

// How the server stops taking requests and answers every one it took (SIGTERM, SIGINT), before
// anything behind the routes stops: systemd's TimeoutStopSec=30 (infra/interlock.service) kills it
// after 30 s, so every request taken is answered within `STOP_ANSWER_MS`.
//
// 1. From the signal on, a request that arrives is answered 503 not_ready, and every answer closes
//    its connection, so no connection is kept for another request.
// 2. The listener stays open `ACCEPT_DRAIN_MS` more: a connection the kernel completed before the
//    signal waits in its accept queue, and closing the listener would reset it with the request
//    its client had written on it; once accepted it is answered (1).
// 3. The listener closes, without Node's own closing of idle connections: an accepted connection
//    whose request is not read yet counts as idle, and would be reset too. A connection that
//    carries no request `IDLE_GRACE_MS` after that (a client's kept-alive one) is closed; live
//    pages' websockets are closed as going away (they reconnect to the next start).
// 4. Requests still being worked on are waited for until `STOP_ANSWER_MS`; one still unanswered
//    then is answered 503 not_ready (asking again is safe: requests are idempotent by their id).

/** Every request taken is answered within this long of the signal: 5 s under the unit's TimeoutStopSec=30. */
export const STOP_ANSWER_MS = 25_000;
/** How long the listener stays open after the signal, for the connections the kernel already completed. */
export const ACCEPT_DRAIN_MS = 300;
/** How long an accepted connection may stay without a request once the listener is closed. */
export const IDLE_GRACE_MS = 300;
/** Requests still unanswered this long before `STOP_ANSWER_MS` are answered 503, leaving the rest for the stop itself. */
const LAST_ANSWER_MARGIN_MS = 3_000;
const CHECK_EVERY_MS = 25;

/** What a request that comes while the server stops is told. */
export const STOPPING_MESSAGE = 'this server is stopping: send the request again in a few seconds (a request id already sent is answered as it stands)';

/** One accepted connection: whether a request is being worked on on it, and since when it has had none. */
interface Connection {
  socket: Socket;
  working: number;
  idleSinceMs: number;
  /** Taken over by a websocket: closed as going away, never waited for. */
  upgraded: boolean;
}

/** The stop of one app's HTTP side. */
export interface GracefulStop {
  /** True from the signal on. */
  readonly stopping: boolean;
  /** Stop taking requests and answer every one taken (steps 1-4); resolves once no connection is left. */
  drain(): Promise<void>;
}

/** Install the hooks of the stop on `app` (before any other hook that may answer), and the connections' tracking. */
export function installGracefulStop(app: FastifyInstance, clock: { nowMs(): number } = { nowMs: () => performance.now() }): GracefulStop {
  let stopping = false;
  let draining: Promise<void> | null = null;
  const connections = new Map<Socket, Connection>();
  const working = new Set<FastifyReply>();
  let acceptedCount = 0;
  app.server.on('connection', (socket: Socket) => {
    acceptedCount += 1;
    connections.set(socket, { socket, working: 0, idleSinceMs: clock.nowMs(), upgraded: false });
    socket.once('close', () => connections.delete(socket));
  });
  app.server.on('upgrade', (_request, socket: Socket) => {
    const connection = connections.get(socket);
    if (connection !== undefined) connection.upgraded = true;
  });
  app.addHook('onRequest', async (request, reply) => {
    const connection = connections.get(request.raw.socket);
    if (connection !== undefined) {
      connection.working += 1;
      reply.raw.once('close', () => {
        connection.working -= 1;
        connection.idleSinceMs = clock.nowMs();
      });
    }
    working.add(reply);
    reply.raw.once('close', () => working.delete(reply));
    if (stopping) throw new AppError('not_ready', STOPPING_MESSAGE);
  });
  app.addHook('onSend', async (_request, reply, payload) => {
    if (stopping) reply.header('connection', 'close');
    return payload;
  });

  const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  async function drain(): Promise<void> {
    const startMs = clock.nowMs();
    stopping = true;
    if (!app.server.listening) return;
    await wait(ACCEPT_DRAIN_MS);
    // A busy event loop may have run no poll phase since the signal: close only after one (an
    // immediate runs right after it) that accepted nothing more.
    for (let accepted = -1; accepted !== acceptedCount; ) {
      accepted = acceptedCount;
      await new Promise((resolve) => setImmediate(resolve));
    }
    // net.Server's own close: stop accepting, leave every accepted connection as it is (its
    // callback would wait for all of them to end; the loop below sees to that).
    NetServer.prototype.close.call(app.server);
    const closedMs = clock.nowMs();
    for (const client of app.websocketServer?.clients ?? []) client.close(1001, 'the server is stopping');
    for (;;) {
      const nowMs = clock.nowMs();
      for (const connection of connections.values()) {
        const idle = connection.working === 0 || connection.upgraded;
        if (idle && nowMs - Math.max(connection.upgraded ? 0 : connection.idleSinceMs, closedMs) >= IDLE_GRACE_MS) connection.socket.destroy();
      }
      if (connections.size === 0) return;
      if (nowMs - startMs >= STOP_ANSWER_MS - LAST_ANSWER_MARGIN_MS) break;
      await wait(CHECK_EVERY_MS);
    }
    // Still unanswered this late: answered now, in the contract's shape, and the connections closed.
    for (const reply of working) answerStopping(reply);
    await wait(CHECK_EVERY_MS);
    for (const connection of connections.values()) connection.socket.destroy();
  }

  return {
    get stopping() {
      return stopping;
    },
    drain() {
      draining ??= drain();
      return draining;
    },
  };
}

/** Answer a request 503 not_ready directly on its response, when nothing was sent on it yet. */
function answerStopping(reply: FastifyReply): void {
  const raw = reply.raw;
  if (raw.headersSent || raw.writableEnded) return;
  const body = JSON.stringify({ error: { code: 'not_ready', message: STOPPING_MESSAGE } });
  raw.writeHead(503, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    [REQUEST_ID_HEADER]: reply.request.id,
    connection: 'close',
    'cache-control': 'no-store',
  });
  raw.end(body);
}
