import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { sleep } from './stats.ts';

/** One request of a load. */
export interface RequestSpec {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
}

/** What came back. */
export interface Reply {
  status: number;
  body: string;
  /** The `name=value` of the first cookie the reply set, if any. */
  cookie?: string;
  /** The seconds of its `Retry-After`, if it had one. */
  retryAfterS?: number;
}

/** A failure label for a reply, or null when it is what the load expects. */
export type Judge = (reply: Reply) => string | null;

/** What a load did. */
export interface LoadResult {
  sent: number;
  ok: number;
  /** Failures by label: an unexpected status or answer, a network error, a request shed or left unanswered. */
  failures: Record<string, number>;
  /** Latency of each expected reply, in ms. */
  latenciesMs: number[];
  elapsedMs: number;
}

/** A request taking longer than this is a failure, not a latency. */
const REQUEST_TIMEOUT_MS = 30_000;

/** Keep-alive HTTP/1.1 to one server on 127.0.0.1, at most `sockets` connections. */
export class LoadClient {
  readonly #agent: http.Agent;
  readonly #host: string;
  readonly #port: number;

  constructor(baseUrl: string, sockets: number) {
    const url = new URL(baseUrl);
    if (url.hostname !== '127.0.0.1') throw new Error(`bench traffic goes to 127.0.0.1 only, not ${url.hostname}`);
    this.#host = url.hostname;
    this.#port = Number(url.port);
    this.#agent = new http.Agent({ keepAlive: true, maxSockets: sockets, maxFreeSockets: sockets });
  }

  request(spec: RequestSpec): Promise<Reply> {
    const payload = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    const headers: Record<string, string> = { ...spec.headers };
    if (payload !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    return new Promise((resolve, reject) => {
      const req = http.request({ agent: this.#agent, host: this.#host, port: this.#port, method: spec.method, path: spec.path, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        const cookie = res.headers['set-cookie']?.[0]?.split(';')[0];
        const retryAfterS = Number(res.headers['retry-after'] ?? Number.NaN);
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            ...(cookie ? { cookie } : {}),
            ...(Number.isFinite(retryAfterS) ? { retryAfterS } : {}),
          }),
        );
        res.on('error', reject);
      });
      req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error('timeout')));
      req.on('error', reject);
      req.end(payload);
    });
  }

  close(): void {
    this.#agent.destroy();
  }
}

function emptyResult(): LoadResult {
  return { sent: 0, ok: 0, failures: {}, latenciesMs: [], elapsedMs: 0 };
}

function fail(result: LoadResult, label: string): void {
  result.failures[label] = (result.failures[label] ?? 0) + 1;
}

async function issue(client: LoadClient, spec: RequestSpec, judge: Judge, fromMs: number, result: LoadResult): Promise<void> {
  result.sent += 1;
  try {
    const reply = await client.request(spec);
    const failure = judge(reply);
    if (failure === null) {
      result.ok += 1;
      result.latenciesMs.push(performance.now() - fromMs);
    } else fail(result, failure);
  } catch (error) {
    fail(result, `error:${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

/** `connections` loops, each sending its next request as soon as the last one is answered, for `durationMs`. */
export async function closedLoop(
  client: LoadClient,
  options: { connections: number; durationMs: number; requestsMax: number; next: (n: number, lane: number) => RequestSpec; judge: Judge },
): Promise<LoadResult> {
  const result = emptyResult();
  const startMs = performance.now();
  const deadlineMs = startMs + options.durationMs;
  let n = 0;
  const lane = async (index: number) => {
    while (performance.now() < deadlineMs && n < options.requestsMax) {
      const spec = options.next(n++, index);
      await issue(client, spec, options.judge, performance.now(), result);
    }
  };
  await Promise.all(Array.from({ length: options.connections }, (_, i) => lane(i)));
  result.elapsedMs = performance.now() - startMs;
  return result;
}

/**
 * Requests at a fixed rate, whatever the answers do (an open loop): request `i` is due at
 * `i / ratePerS` s and its latency counts from then, so a slow server cannot slow the load down
 * and hide its own queueing. Beyond `inFlightMax` outstanding, a due request is shed and counted.
 */
export async function openLoop(
  client: LoadClient,
  options: { ratePerS: number; durationMs: number; inFlightMax: number; next: (n: number) => RequestSpec; judge: Judge },
): Promise<LoadResult> {
  const result = emptyResult();
  const outstanding = new Set<Promise<void>>();
  const total = Math.floor((options.durationMs / 1000) * options.ratePerS);
  const startMs = performance.now();
  let i = 0;
  while (i < total) {
    const dueNow = Math.min(total, Math.floor(((performance.now() - startMs) * options.ratePerS) / 1000) + 1);
    for (; i < dueNow; i++) {
      const dueMs = startMs + (i * 1000) / options.ratePerS;
      if (outstanding.size >= options.inFlightMax) {
        fail(result, 'shed');
        continue;
      }
      const done: Promise<void> = issue(client, options.next(i), options.judge, dueMs, result).finally(() => outstanding.delete(done));
      outstanding.add(done);
    }
    await sleep(1);
  }
  await Promise.all(outstanding);
  result.elapsedMs = performance.now() - startMs;
  return result;
}
