import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limits } from '../../shared/limits.ts';
import { AGENT_TOKEN, type AppWorld, buildAppWorld } from '../support/app-world.ts';

// What Node's HTTP parser or Fastify's body parsing refuse before any route runs is answered like
// every other answer: the contract's error shape, and an X-Request-Id a caller can find in the logs
// (the caller's own when it sent a usable one). Raw bytes over a real socket, so nothing is tidied
// up by a client on the way.

let world: AppWorld;
let port: number;
beforeAll(async () => {
  world = await buildAppWorld();
  await world.app.listen({ port: 0, host: '127.0.0.1' });
  port = (world.app.server.address() as { port: number }).port;
});
afterAll(async () => world.close());

/** Write `raw` on a new connection; what came back until the server closed it (or 3 s). */
function exchange(raw: string): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  return new Promise((resolve, reject) => {
    let text = '';
    const socket = connect(port, '127.0.0.1', () => socket.write(raw));
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    const done = () => {
      const [head = '', ...rest] = text.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const at = line.indexOf(':');
        headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') });
    };
    socket.on('end', done);
    socket.on('error', reject);
    setTimeout(() => {
      socket.destroy();
      done();
    }, 3_000);
  });
}

const post = (body: string, headers: string) => `POST /v1/refunds HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${AGENT_TOKEN}\r\nConnection: close\r\n${headers}\r\n${body}`;
const json = (body: string, extra = '') => post(body, `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}`);

const CASES: Array<{ what: string; raw: string; status: number; code: string }> = [
  { what: 'a body that is not JSON', raw: json('{"request_id":'), status: 400, code: 'validation_failed' },
  { what: 'an empty JSON body', raw: json(''), status: 400, code: 'validation_failed' },
  { what: 'a body past the limit', raw: post('', `Content-Type: application/json\r\nContent-Length: ${limits.bodyBytesMax + 1}\r\n`) + 'x'.repeat(limits.bodyBytesMax + 1), status: 413, code: 'payload_too_large' },
  { what: 'a content type not JSON', raw: post('a=1', 'Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\n'), status: 415, code: 'unsupported_media_type' },
  { what: 'a malformed header line', raw: 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n', status: 400, code: 'validation_failed' },
  { what: 'a malformed request line', raw: 'GET /healthz HTTX/9\r\nHost: 127.0.0.1\r\n\r\n', status: 400, code: 'validation_failed' },
  { what: 'chunked framing that is not', raw: post('zz\r\n', 'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n'), status: 400, code: 'validation_failed' },
  { what: 'an HTTP/1.1 request with no Host', raw: 'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n', status: 400, code: 'validation_failed' },
  { what: 'an agent call with no Host', raw: `GET /v1/refunds/case-1 HTTP/1.1\r\nAuthorization: Bearer ${AGENT_TOKEN}\r\nConnection: close\r\n\r\n`, status: 400, code: 'validation_failed' },
  { what: 'an expectation other than 100-continue', raw: 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-banana\r\nConnection: close\r\n\r\n', status: 400, code: 'validation_failed' },
  { what: 'headers past the limit', raw: `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(limits.headerBytesMax + 1)}\r\n\r\n`, status: 400, code: 'validation_failed' },
];

describe("refusals made before any route runs", () => {
  for (const c of CASES) {
    it(`${c.what}: ${c.status} ${c.code} in the contract's shape, with an X-Request-Id`, async () => {
      const answer = await exchange(c.raw);
      expect(answer.status).toBe(c.status);
      expect(JSON.parse(answer.body)).toEqual({ error: { code: c.code, message: expect.any(String) } });
      expect(answer.headers['x-request-id']).toMatch(/^[0-9A-Z]{26}$/);
    });
  }

  it("keeps a caller's usable X-Request-Id on a refusal by the parser", async () => {
    const answer = await exchange(json('{"request_id":', 'X-Request-Id: agent-7.call-42\r\n'));
    expect([answer.status, answer.headers['x-request-id']]).toEqual([400, 'agent-7.call-42']);
  });
});
