import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_TOKEN, type AppWorld, buildAppWorld } from '../support/app-world.ts';

// An agent or a browser that hangs up while its request's body is still coming is the client's
// doing, not the server's: it is logged at info, once, and no error answer is attempted on the
// closed connection. An operator's error log stays for what they must act on.

const lines: Array<Record<string, unknown>> = [];
const sink = new Writable({
  write(chunk, _encoding, done) {
    for (const line of String(chunk).split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
    done();
  },
});

let world: AppWorld;
let port: number;
beforeAll(async () => {
  world = await buildAppWorld({ logger: { level: 'info', stream: sink } });
  await world.app.listen({ port: 0, host: '127.0.0.1' });
  port = (world.app.server.address() as { port: number }).port;
});
afterAll(async () => world.close());

/** Send a request's head and part of its body, then hang up. */
async function hangUpMidBody(path: string, headers: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 200\r\n${headers}\r\n{"request_id":"hang`);
      setTimeout(() => {
        socket.destroy();
        resolve();
      }, 100);
    });
    socket.on('error', reject);
  });
  await new Promise((resolve) => setTimeout(resolve, 200));
}

describe('a client that hangs up mid-body', () => {
  it('is logged at info as the client going away, never as an error, and the server goes on', async () => {
    const before = lines.length;
    await hangUpMidBody('/v1/refunds', `Authorization: Bearer ${AGENT_TOKEN}\r\n`);
    const logged = lines.slice(before);
    expect(logged.filter((line) => Number(line.level) >= 50)).toEqual([]);
    expect(logged.some((line) => Number(line.level) === 30 && /hung up|closed the connection/.test(String(line.msg)))).toBe(true);
    expect((await world.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });
});
