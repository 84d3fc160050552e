import type { LookupAddress, LookupOptions } from 'node:dns';
import { type IncomingMessage, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { checkDestination, type Resolve, type ResolvedAddress } from './address-guard.ts';
import { oneLine } from './render.ts';
import type { DeliveryOutcome } from './types.ts';

// One POST of a JSON body to a Slack, webhook or callback URL: the host checked by the address
// guard, the connection pinned to a checked address, no redirect followed, and the whole attempt
// (lookup, connect, answer) bounded by a timer of its own as well as the caller's signal.

/** How much of an error answer's body an outcome keeps, for a person reading the journal. */
const ANSWER_CHARS_MAX = 200;
/** How much of an error answer is read at most; the rest is dropped with the connection. */
const ANSWER_BYTES_MAX = 4096;

/** What the POST needs beyond the request itself. */
export interface PostOptions {
  timeoutMs: number;
  allowPrivate: readonly string[];
  resolve: Resolve;
  signal: AbortSignal;
}

/** An answer's status, its Location, and the start of its body (read only for a failure). */
interface Answer {
  status: number;
  location: string | null;
  text: string;
}

/** A `lookup` for node:http that answers only with addresses the guard checked, whatever DNS says now. */
function pinnedLookup(addresses: readonly ResolvedAddress[]) {
  return (_hostname: string, options: LookupOptions, callback: (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void) => {
    const [first] = addresses;
    if (options.all) callback(null, addresses.map(({ address, family }) => ({ address, family })));
    else if (first !== undefined) callback(null, first.address, first.family);
    else callback(Object.assign(new Error('no checked address'), { code: 'ENOTFOUND' }), []);
  };
}

/** The start of a body, without waiting past the signal: resolves with what it has at the end, the cap or an abort. */
function readSome(response: IncomingMessage, signal: AbortSignal): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const done = () => {
      signal.removeEventListener('abort', done);
      response.destroy();
      resolve(Buffer.concat(chunks).toString('utf8'));
    };
    signal.addEventListener('abort', done, { once: true });
    response.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      bytes += chunk.length;
      if (bytes >= ANSWER_BYTES_MAX) done();
    });
    response.on('end', done);
    response.on('error', done);
    response.on('close', done);
  });
}

function send(url: URL, body: string, headers: Record<string, string>, addresses: readonly ResolvedAddress[], signal: AbortSignal): Promise<Answer> {
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    // Once the status is in, the request's errors (an abort cutting the body short) no longer decide anything.
    let answered = false;
    const req = request(
      {
        protocol: url.protocol,
        hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
        port: url.port === '' ? undefined : Number(url.port),
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'user-agent': 'Interlock', ...headers },
        // A fresh connection each time: a pooled one could have been opened to another address.
        agent: false,
        lookup: pinnedLookup(addresses),
        signal,
      },
      (response) => {
        answered = true;
        const status = response.statusCode ?? 0;
        const location = typeof response.headers.location === 'string' ? response.headers.location : null;
        // A 2xx is all that is needed; its body is not waited for, so a slow one cannot turn a delivery into a timeout.
        if (status >= 200 && status < 300) {
          response.destroy();
          resolve({ status, location, text: '' });
          return;
        }
        readSome(response, signal).then((text) => resolve({ status, location, text }), reject);
      },
    );
    req.on('error', (error) => {
      if (!answered) reject(error);
    });
    req.end(body);
  });
}

/** What an HTTP answer comes to: 2xx delivered; 408, 429 and 5xx worth retrying; a redirect or another 4xx final. */
export function outcomeOfStatus(url: URL, answer: Answer): DeliveryOutcome {
  const { status } = answer;
  const host = url.host;
  if (status >= 200 && status < 300) return { ok: true, status, detail: `${status} from ${host}` };
  // The path and query of a Slack incoming webhook are its secret: a receiver that echoes them
  // (a "Cannot POST /services/…" page, a redirect's Location) must not put them in the journal,
  // the item page or the log, so they are cut from whatever the receiver said.
  const said = redactUrl(oneLine(answer.text), url).slice(0, ANSWER_CHARS_MAX);
  const suffix = said === '' ? '' : `: ${said}`;
  if (status >= 300 && status < 400) {
    const to = answer.location === null ? '' : ` to ${locationHost(answer.location, url)}`;
    return { ok: false, status, error: `${status} redirect from ${host}${to}; redirects are not followed`, retryable: false };
  }
  const retryable = status === 408 || status === 429 || (status >= 500 && status < 600);
  return { ok: false, status, error: `${status} from ${host}${suffix}`, retryable };
}

/** `text` with the URL's path and query (and their percent-decoded forms) cut out. */
function redactUrl(text: string, url: URL): string {
  let out = text;
  for (const secret of [url.pathname, url.search, safeDecode(url.pathname)]) {
    if (secret.length > 1) out = out.split(secret).join('/…');
  }
  return out;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Where a redirect pointed, as a host only: its path may carry the secret it was sent to. */
function locationHost(location: string, base: URL): string {
  try {
    return new URL(location, base).host || 'elsewhere';
  } catch {
    return 'an unreadable location';
  }
}

function errorCode(error: unknown): string {
  if (error instanceof Error && 'code' in error && typeof error.code === 'string') return error.code;
  return error instanceof Error ? error.message : String(error);
}

/**
 * POST `body` to `url` and say what came of it; never throws. A refused address is final; a
 * timeout, an abort by the caller and a network error are worth retrying.
 */
export async function postJson(url: URL, body: string, headers: Record<string, string>, options: PostOptions): Promise<DeliveryOutcome> {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, options.timeoutMs);
  const forward = () => controller.abort();
  options.signal.addEventListener('abort', forward, { once: true });
  if (options.signal.aborted) controller.abort();
  // A lookup cannot be cancelled, so it is raced against the signal.
  const aborted = new Promise<never>((_, reject) => controller.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }));
  aborted.catch(() => {});
  const host = url.host;
  try {
    const destination = await Promise.race([checkDestination(url, options.allowPrivate, options.resolve), aborted]);
    if (!destination.ok) return { ok: false, status: null, error: destination.error, retryable: destination.retryable };
    // node:http stops on the signal by itself; once the status is in, an abort only cuts the body short.
    return outcomeOfStatus(url, await send(url, body, headers, destination.addresses, controller.signal));
  } catch (error) {
    if (timedOut || (options.signal.aborted && options.signal.reason instanceof DOMException && options.signal.reason.name === 'TimeoutError')) {
      return { ok: false, status: null, error: `no answer from ${host} within ${options.timeoutMs} ms`, retryable: true };
    }
    if (controller.signal.aborted) return { ok: false, status: null, error: `the attempt to reach ${host} was stopped`, retryable: true };
    return { ok: false, status: null, error: `cannot reach ${host} (${errorCode(error)})`, retryable: true };
  } finally {
    clearTimeout(timer);
    options.signal.removeEventListener('abort', forward);
  }
}
