import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPgPool } from '../../db/pg/pool.ts';
import { PgSignals } from '../../db/pg/signals.ts';
import { freePort } from '../../bench/ready.ts';
import { LISTEN_RESTORED, LISTEN_UNAVAILABLE, logListenOutages } from '../../server/app/listen-log.ts';
import { dropPgDatabase, freshPgDatabase, type PgDatabase, postgresCluster, postgresOrSkip } from '../support/postgres.ts';

// A server's listening connection that cannot be opened, at the start and after a drop, is logged
// once per outage (a warning with a stable code), and once more when it is open again.

const available = postgresOrSkip('the listening connection’s log lines (test/db/pg-listen-log.test.ts)');

/** A TCP proxy to the cluster on `port`, opened and closed by the test: closed, nothing listens there; closing drops every connection through it. */
function proxyOn(port: number, upstreamPort: number) {
  let server: net.Server | null = null;
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  return {
    async open() {
      server = net.createServer((client) => {
        const upstream = net.connect(upstreamPort, '127.0.0.1');
        track(client);
        track(upstream);
        client.pipe(upstream).on('error', () => {});
        upstream.pipe(client).on('error', () => {});
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
      });
      await new Promise<void>((resolve) => server!.listen(port, '127.0.0.1', resolve));
    },
    async close() {
      const closing = server;
      server = null;
      for (const socket of sockets) socket.destroy();
      if (closing) await new Promise((resolve) => closing.close(resolve));
    },
  };
}

describe.skipIf(!available)('the listening connection’s outages in the log', () => {
  let database: PgDatabase | undefined;
  beforeAll(async () => {
    database = await freshPgDatabase('listen_log');
  });
  afterAll(async () => {
    if (database !== undefined) await dropPgDatabase(database);
  });

  it('warns once when it cannot be opened at the start, and once after a drop, however many tries fail; says when it is back', async () => {
    const cluster = await postgresCluster();
    const port = await freePort();
    const proxy = proxyOn(port, cluster.port);
    const pool = openPgPool({ url: database!.appUrl, max: 1 });
    const listenUrl = database!.appUrl.replace(`:${cluster.port}/`, `:${port}/`);
    expect(listenUrl).not.toBe(database!.appUrl);
    const signals = new PgSignals({ pool, listenUrl, retryFirstMs: 10, retryMaxMs: 20 });
    const lines: Array<{ level: string; code: string }> = [];
    const record = (level: string) => (fields: object) => lines.push({ level, code: (fields as { code: string }).code });
    const stop = logListenOutages(signals, { warn: record('warn'), info: record('info') });
    const until = async (count: number) => {
      for (let i = 0; i < 500 && lines.length < count; i++) await sleep(10);
    };
    try {
      // Nothing listens at the start: one warning, however many tries fail.
      await signals.subscribe('interlock_journal', () => {});
      await sleep(200);
      expect(lines).toEqual([{ level: 'warn', code: LISTEN_UNAVAILABLE }]);
      await proxy.open();
      await until(2);
      expect(lines.at(-1)).toEqual({ level: 'info', code: LISTEN_RESTORED });
      // Dropped, and nothing to reconnect to for a while: one warning again, then back.
      await proxy.close();
      await until(3);
      await sleep(200);
      expect(lines.slice(2)).toEqual([{ level: 'warn', code: LISTEN_UNAVAILABLE }]);
      await proxy.open();
      await until(4);
      expect(lines).toEqual([
        { level: 'warn', code: LISTEN_UNAVAILABLE },
        { level: 'info', code: LISTEN_RESTORED },
        { level: 'warn', code: LISTEN_UNAVAILABLE },
        { level: 'info', code: LISTEN_RESTORED },
      ]);
      // A hook given during an outage is told of it at once.
      await proxy.close();
      await until(5);
      const late: boolean[] = [];
      signals.onListenState((state) => late.push(state.listening));
      expect(late).toEqual([false]);
    } finally {
      stop();
      await signals.close();
      await proxy.close();
      await pool.end();
    }
  });
});
