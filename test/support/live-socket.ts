import WebSocket from 'ws';
import type { LiveMessage } from '../../shared/api.ts';
import type { AppWorld } from './app-world.ts';

/** A person's live feed over a real websocket: every message it received, in order. */
export interface LiveFeedProbe {
  messages: LiveMessage[];
  /** Resolves once a received message passes `test` (fails the test after `timeoutMs`). */
  waitFor(test: (message: LiveMessage) => boolean, timeoutMs?: number): Promise<LiveMessage>;
  close(): void;
}

/** The world's app, listening on a free loopback port (once per world); its base URL. */
export async function listening(world: AppWorld): Promise<string> {
  const address = world.app.server.address();
  if (address !== null && typeof address === 'object') return `http://127.0.0.1:${address.port}`;
  return world.app.listen({ port: 0, host: '127.0.0.1' });
}

/** Open `who`'s live feed and wait for its snapshot. */
export async function openLiveFeed(baseUrl: string, who: { cookie: string }): Promise<LiveFeedProbe> {
  const socket = new WebSocket(`${baseUrl.replace('http', 'ws')}/api/live`, { headers: { cookie: who.cookie } });
  const messages: LiveMessage[] = [];
  socket.on('message', (data: Buffer) => messages.push(JSON.parse(String(data)) as LiveMessage));
  const waitFor = async (test: (message: LiveMessage) => boolean, timeoutMs = 5_000) => {
    const deadlineMs = Date.now() + timeoutMs;
    for (;;) {
      const found = messages.find(test);
      if (found) return found;
      if (Date.now() > deadlineMs) throw new Error(`no such live message; got ${JSON.stringify(messages.map((m) => m.type))}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  await waitFor((message) => message.type === 'snapshot');
  return { messages, waitFor, close: () => socket.close() };
}
