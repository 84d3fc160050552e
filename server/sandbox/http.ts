import type { IncomingMessage, ServerResponse } from 'node:http';

/** A request body, or null when it was larger than allowed (the rest is not read). */
export async function readBody(req: IncomingMessage, bytesMax: number): Promise<string | null> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of req) {
    // A request with no encoding set yields Buffers; a string would mean someone set one.
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk), 'utf8');
    bytes += buffer.length;
    if (bytes > bytesMax) return null;
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Answer with JSON text already serialised (a replay sends the saved bytes unchanged). */
export function sendJsonText(
  res: ServerResponse,
  statusCode: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(statusCode, {
    ...headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** Answer with a value serialised as Stripe does (pretty-printed). */
export function sendJson(
  res: ServerResponse,
  statusCode: number,
  value: unknown,
  headers?: Record<string, string>,
): void {
  sendJsonText(res, statusCode, JSON.stringify(value, null, 2), headers);
}

/** Match `/v1/refunds/:id` style patterns; the params of a match, or null. */
export function matchPath(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split('/');
  const have = path.split('/');
  if (want.length !== have.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i += 1) {
    const segment = want[i]!;
    const actual = have[i]!;
    if (segment.startsWith(':')) {
      const decoded = safeDecode(actual);
      if (decoded === null || decoded === '') return null;
      params[segment.slice(1)] = decoded;
    } else if (segment !== actual) {
      return null;
    }
  }
  return params;
}

/** Header value as one string (the first when repeated). */
export function headerOf(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function safeDecode(text: string): string | null {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}
