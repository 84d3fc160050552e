import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { DEFAULT_CONFIG_PATH } from '../../server/config/load.ts';

/** A person's webhook, as a real server process reaches it: a local HTTP receiver and the config that names it. */

/** One request the receiver took. */
export interface HookRequest {
  messageId: string | null;
  signature: string | null;
  body: string;
  atMs: number;
}

/** A webhook receiver on loopback that answers 200 to every POST and keeps what it was sent. */
export interface HookReceiver {
  url: string;
  received: HookRequest[];
  close(): Promise<void>;
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

export async function startHookReceiver(): Promise<HookReceiver> {
  const received: HookRequest[] = [];
  const server = createServer(async (request, response) => {
    const body = await readBody(request);
    const header = (name: string) => {
      const value = request.headers[name];
      return typeof value === 'string' ? value : null;
    };
    received.push({ messageId: header('interlock-message-id'), signature: header('interlock-signature'), body, atMs: Date.now() });
    response.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The example config in test mode (http allowed, the test clock on) where ana is told by a
 * signed webhook at `hookUrl`, its secret from the environment variable `secretEnv`, and loopback
 * may be reached. Written into `dir`; returns its path.
 */
export function writeOutboxTestConfig(dir: string, hookUrl: string, secretEnv: string): string {
  const shipped = readFileSync(DEFAULT_CONFIG_PATH, 'utf8');
  const ana = /^( {2}- name: ana\n(?: {4}.*\n)*? {4}password: .*\n)/m;
  if (!ana.test(shipped)) throw new Error(`${DEFAULT_CONFIG_PATH} no longer has ana's entry where this expects it`);
  const text = shipped
    .replace(/^test_mode: false$/m, 'test_mode: true')
    .replace(/^sla_tick_seconds: \d+/m, 'sla_tick_seconds: 1')
    .replace(ana, `$1    notify:\n      - { webhook: { url: "${hookUrl}", secret_env: ${secretEnv} } }\n`)
    .concat('\nnotifications:\n  callback_allow_private: [127.0.0.1]\n');
  const path = join(dir, 'interlock.outbox.yaml');
  writeFileSync(path, text);
  return path;
}
