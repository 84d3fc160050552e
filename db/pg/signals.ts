import pg from 'pg';
import { StoreClosedError } from '../port/errors.ts';
import { type ListenState, refuseBadSignal, SIGNAL_CHANNELS, type SignalChannel, type SignalListener, SignalListeners, type Signals, tellEach } from '../port/signals.ts';
import { pgQuery } from './pool.ts';

// Signals between the servers on one PostgreSQL database, by LISTEN/NOTIFY. A signal is published
// with pg_notify on the pool, as any statement; it is heard on ONE connection of its own per
// server, opened outside the pool: a pooled connection goes back to the pool (and, behind a
// transaction pooler, to other sessions), which would lose its LISTEN. When that connection drops,
// it is made again after a capped backoff, every channel listened to again, and the reconnect
// hooks are called: what was notified meanwhile was lost, and is read from the journal.

/** How the listening connection names itself in pg_stat_activity. */
export const PG_LISTEN_APPLICATION_NAME = 'interlock-listen';

/** The listening connection, as a subclass names it without importing the driver. */
export type PgListenClient = pg.Client;

/** Where signals are heard and told, and how a dropped listening connection is made again. */
export interface PgSignalsOptions {
  /** The pool signals are published on (the application's role). */
  pool: pg.Pool;
  /** `DATABASE_LISTEN_URL`, else `DATABASE_URL`: a direct connection, never one through a transaction pooler. */
  listenUrl: string;
  /** The wait before the first try at making the connection again, doubled at each failure up to `retryMaxMs` (100 and 5,000 ms). */
  retryFirstMs?: number;
  retryMaxMs?: number;
  /** How long opening the connection may take, in ms (10,000). */
  connectTimeoutMs?: number;
  /** How often a silent connection is asked a `SELECT 1`, so one a network cut left hanging is found and made again (30,000 ms). */
  pingMs?: number;
}

/** Signals over LISTEN/NOTIFY; the listening connection is opened at the first subscription. */
export class PgSignals implements Signals {
  readonly #options: Required<Omit<PgSignalsOptions, 'pool' | 'listenUrl'>> & Pick<PgSignalsOptions, 'pool' | 'listenUrl'>;
  /** By channel's name, as a notification names it. */
  readonly #listeners = new SignalListeners();
  readonly #hooks = new Set<() => void>();
  readonly #stateHooks = new Set<(state: ListenState) => void>();
  /** Since when (wall ms) the listening connection could not be opened, and why; null while it is open or being made. */
  #outage: { sinceMs: number; error: unknown } | null = null;
  /** Resolved once the first try at listening succeeded or failed; the loop goes on behind it. */
  #firstTry: Promise<void> | null = null;
  #loop: Promise<void> | null = null;
  #client: pg.Client | null = null;
  #closed = false;
  #wake: (() => void) | null = null;

  constructor(options: PgSignalsOptions) {
    this.#options = { retryFirstMs: 100, retryMaxMs: 5_000, connectTimeoutMs: 10_000, pingMs: 30_000, ...options };
  }

  async publish(channel: SignalChannel, payload: string): Promise<void> {
    refuseBadSignal(channel, payload);
    if (this.#closed) throw new StoreClosedError('the storage is closed');
    await pgQuery(this.#options.pool, 'SELECT pg_notify($1, $2)', [channel, payload]);
  }

  async subscribe(channel: SignalChannel, listener: SignalListener): Promise<() => void> {
    refuseBadSignal(channel, '');
    if (this.#closed) throw new StoreClosedError('the storage is closed');
    const remove = this.#listeners.add(channel, listener);
    await this.#listening();
    return remove;
  }

  onReconnect(hook: () => void): () => void {
    const own = () => hook();
    this.#hooks.add(own);
    return () => void this.#hooks.delete(own);
  }

  onListenState(hook: (state: ListenState) => void): () => void {
    const own = (state: ListenState) => hook(state);
    this.#stateHooks.add(own);
    if (this.#outage !== null) tellEach([own], { listening: false, error: this.#outage.error });
    return () => void this.#stateHooks.delete(own);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#wake?.();
    await this.#client?.end().catch(() => {});
    await this.#loop;
  }

  /**
   * LISTEN on every channel, on a connection just made (`again`: after one that was lost). A
   * subclass may change it (a planted bad store in the tests); nothing else should.
   */
  protected async listen(client: pg.Client, _again: boolean): Promise<void> {
    for (const channel of SIGNAL_CHANNELS) await client.query(`LISTEN ${channel}`);
  }

  /** Start the loop once; resolves when its first try at listening is over. */
  #listening(): Promise<void> {
    if (this.#firstTry === null) {
      let firstDone = () => {};
      this.#firstTry = new Promise<void>((resolve) => {
        firstDone = resolve;
      });
      this.#loop = this.#run(firstDone);
    }
    return this.#firstTry;
  }

  /** Keep one listening connection until closed: make it, listen, wait for its loss, back off, again. */
  async #run(firstDone: () => void): Promise<void> {
    const { retryFirstMs, retryMaxMs } = this.#options;
    let waitMs = retryFirstMs;
    let tried = false;
    while (!this.#closed) {
      const client = this.#newClient();
      const lost = new Promise<void>((resolve) => {
        client.on('error', () => resolve());
        client.on('end', () => resolve());
      });
      let ping: NodeJS.Timeout | undefined;
      try {
        await client.connect();
        this.#client = client;
        if (this.#closed) break;
        await this.listen(client, tried);
        if (this.#outage !== null) {
          tellEach(this.#stateHooks, { listening: true, outMs: Date.now() - this.#outage.sinceMs });
          this.#outage = null;
        }
        if (tried) tellEach(this.#hooks);
        tried = true;
        firstDone();
        waitMs = retryFirstMs;
        ping = setInterval(() => void client.query('SELECT 1').catch(() => client.end().catch(() => {})), this.#options.pingMs);
        ping.unref();
        await lost;
      } catch (error) {
        // Told once per outage: at its first failed try, not at each try after it.
        if (this.#outage === null && !this.#closed) {
          this.#outage = { sinceMs: Date.now(), error };
          tellEach(this.#stateHooks, { listening: false, error });
        }
        tried = true;
        firstDone();
      } finally {
        clearInterval(ping);
        this.#client = null;
        await client.end().catch(() => {});
      }
      if (this.#closed) break;
      await this.#sleep(waitMs);
      waitMs = Math.min(waitMs * 2, retryMaxMs);
    }
    firstDone();
  }

  #newClient(): pg.Client {
    const client = new pg.Client({
      connectionString: this.#options.listenUrl,
      application_name: PG_LISTEN_APPLICATION_NAME,
      connectionTimeoutMillis: this.#options.connectTimeoutMs,
      // A ping left unanswered this long means the connection is gone.
      query_timeout: this.#options.connectTimeoutMs,
      keepAlive: true,
    });
    client.on('notification', (message) => {
      tellEach(this.#listeners.of(message.channel), message.payload ?? '');
    });
    return client;
  }

  /** Wait `ms`, or less when the signals are closed meanwhile. */
  async #sleep(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      timer.unref();
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.#wake = null;
  }
}
