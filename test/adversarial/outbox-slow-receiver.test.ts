import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChannels } from '../../server/outbox/channels.ts';
import type { NotificationsConfig } from '../../server/outbox/types.ts';
import { effectIdOf } from '../support/db-journals.ts';
import { escalated, outboxWorld, proposed } from './outbox-harness.ts';

// docs/operators/notifications.md: "Delivery runs beside the gate and the inbox, never in their way: a slow or failing
// receiver delays only its own messages." An agent owns its callback URL. If it answers nothing
// (accepts the connection, never replies), each callback holds its attempt to the timeout, and
// outbox.deliverDue awaits attempts in batches of limits.outboxConcurrency (Promise.all per
// batch), while kick() runs plan and deliver as one pass and coalesces the next. So a person's
// "decision needed" queued behind a batch of the agent's callbacks waits for them all to time
// out: one agent can hold up every approver's notifications, batch after batch, retry after retry.

const ATTEMPT_TIMEOUT_MS = 1_500;
const CALLBACKS = 16; // two batches of limits.outboxConcurrency (8)

let hanging: Server;
let fast: Server;
let hangingUrl: string;
let fastUrl: string;
const fastArrivals: { id: string; atMs: number }[] = [];

beforeAll(async () => {
  // The agent's callback receiver: reads the request, never answers.
  hanging = createServer((request) => {
    request.resume();
  });
  fast = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      fastArrivals.push({ id: String(request.headers['interlock-message-id']), atMs: Date.now() });
      response.writeHead(200).end('ok');
    });
  });
  await Promise.all([new Promise<void>((r) => hanging.listen(0, '127.0.0.1', r)), new Promise<void>((r) => fast.listen(0, '127.0.0.1', r))]);
  hangingUrl = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/callback`;
  fastUrl = `http://127.0.0.1:${(fast.address() as AddressInfo).port}/ana`;
});

afterAll(async () => {
  for (const server of [hanging, fast]) {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

describe('a slow receiver', () => {
  it("does not hold up a person's message behind an agent's hanging callbacks", async () => {
    const config: NotificationsConfig = {
      publicUrl: null,
      reminderAtShare: null,
      smtp: null,
      people: { ana: [{ kind: 'webhook', url: fastUrl, secret: 'ana-webhook-secret-0123456789' }] },
      groups: {},
      agents: { bot: { url: hangingUrl, secret: 'bot-callback-secret-0123456789' } },
      callbackAllowPrivate: ['127.0.0.1'],
    };
    const channels = createChannels(config, { timeoutMs: ATTEMPT_TIMEOUT_MS });
    try {
      const w = outboxWorld({ config, channels });
      // The agent's requests that became final (each owes it a callback)...
      for (let i = 0; i < CALLBACKS; i++) {
        const item = effectIdOf(0x51000 + i);
        await w.journal.append('PROPOSED', item, proposed(`slow-${i}`, 1_000));
        await w.journal.append('COMMITTED', item, { result: { id: `re_${i}` } });
      }
      // ...then an item waiting for ana.
      const waiting = effectIdOf(0x52000);
      await w.journal.append('PROPOSED', waiting, proposed('needs-ana', 8_000));
      await w.journal.append('ESCALATED', waiting, escalated(w.appMs, { routed_to: ['ana'] }));

      const startedMs = Date.now();
      await w.outbox().kick();
      const arrival = fastArrivals.at(-1);
      expect(arrival).toBeDefined();
      // Fails today: ana hears of it only after both batches of callbacks timed out (~2 × 1.5 s).
      expect(arrival!.atMs - startedMs).toBeLessThan(ATTEMPT_TIMEOUT_MS / 2);
    } finally {
      channels.close();
    }
  });
});
