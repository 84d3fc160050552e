import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NotificationsConfig } from '../../server/outbox/types.ts';
import { AGENT_TOKEN, buildAppWorld, testConfig } from '../support/app-world.ts';
import { effectIdOf } from '../support/db-journals.ts';
import { escalated, outboxWorld, proposed, RecordingChannels } from './outbox-harness.ts';

// Sending for an event that did not happen, or twice: one agent reaching another agent's
// callbacks through a shared request id, and two processes on one journal delivering the same
// message. (These hold.)

const OTHER_TOKEN = 'sk_agent_other_bot_for_isolation';

interface Hit {
  body: { request_id?: string; effect_id?: string; status?: string };
}

function receiver(): Promise<{ server: Server; url: string; hits: Hit[] }> {
  const hits: Hit[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (c) => {
      body += c;
    });
    request.on('end', () => {
      hits.push({ body: JSON.parse(body) });
      response.writeHead(200).end('ok');
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/cb`, hits })));
}

let mine: Awaited<ReturnType<typeof receiver>>;
let theirs: Awaited<ReturnType<typeof receiver>>;

beforeAll(async () => {
  [mine, theirs] = await Promise.all([receiver(), receiver()]);
});

afterAll(async () => {
  for (const r of [mine, theirs]) {
    r.server.closeAllConnections();
    await new Promise((done) => r.server.close(done));
  }
});

describe('agents are kept apart', () => {
  it("another agent using the same request id gets its own decision: it cannot read, change or be called back for the first agent's", async () => {
    const base = testConfig();
    const first = base.agents[0]!.name;
    const agents = [...base.agents, { name: 'other-bot', tokenSha256: createHash('sha256').update(OTHER_TOKEN).digest('hex') }];
    const notifications: NotificationsConfig = {
      ...base.notifications,
      agents: { [first]: { url: mine.url, secret: 'first-callback-secret-0123' }, 'other-bot': { url: theirs.url, secret: 'other-callback-secret-0123' } },
      callbackAllowPrivate: ['127.0.0.1'],
    };
    const w = await buildAppWorld({ config: { ...base, agents, notifications } });
    try {
      const pi = await w.payment(10_000);
      const a = await w.agent('POST', '/v1/refunds', { request_id: 'shared-1', payment_intent: pi, amount: 1_000 }, AGENT_TOKEN);
      expect(a.json().status).toBe('COMMITTED');
      // The other agent: the same id reads nothing of the first's, and its own payload is no conflict.
      expect((await w.agent('GET', '/v1/refunds/shared-1', undefined, OTHER_TOKEN)).statusCode).toBe(404);
      expect((await w.agent('GET', `/v1/receipts/${a.json().effect_id}`, undefined, OTHER_TOKEN)).statusCode).toBe(404);
      const b = await w.agent('POST', '/v1/refunds', { request_id: 'shared-1', payment_intent: pi, amount: 2_000 }, OTHER_TOKEN);
      expect(b.statusCode).toBe(200);
      expect(b.json().effect_id).not.toBe(a.json().effect_id);
      await w.services.outbox.kick();
      await w.services.outbox.kick();
      expect(mine.hits.map((h) => h.body.effect_id)).toEqual([a.json().effect_id]);
      expect(theirs.hits.map((h) => h.body.effect_id)).toEqual([b.json().effect_id]);
    } finally {
      await w.close();
    }
  });
});

describe('two processes on one journal', () => {
  it('deliver each message once, however their passes interleave', async () => {
    const config: NotificationsConfig = {
      publicUrl: null,
      reminderAtShare: null,
      smtp: { host: 'smtp.example', port: 587, secure: false, user: null, password: null, from: 'i@example.com' },
      people: { ana: [{ kind: 'email', to: 'ana@example.com' }], bea: [{ kind: 'email', to: 'bea@example.com' }] },
      groups: {},
      agents: {},
      callbackAllowPrivate: [],
    };
    // A channel slow enough that both processes see the same messages due at once.
    const slow = new RecordingChannels();
    const w = outboxWorld({
      config,
      channels: {
        async deliver(delivery) {
          await new Promise((r) => setTimeout(r, 30));
          return slow.deliver(delivery);
        },
      },
    });
    for (let i = 0; i < 4; i++) {
      const item = effectIdOf(0x7100 + i);
      await w.journal.append('PROPOSED', item, proposed(`two-${i}`, 8_000));
      await w.journal.append('ESCALATED', item, escalated(w.appMs, { routed_to: ['ana', 'bea'] }));
    }
    const one = w.outbox('process-1');
    const two = w.outbox('process-2');
    await Promise.all([one.plan(), two.plan()]);
    await Promise.all([one.deliverDue(), two.deliverDue(), one.kick(), two.kick()]);
    await Promise.all([one.kick(), two.kick()]);
    const ids = slow.delivered.map((d) => d.id);
    expect(ids).toHaveLength(8);
    expect(new Set(ids).size).toBe(8);
  });
});
