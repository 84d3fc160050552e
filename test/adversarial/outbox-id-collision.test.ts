import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageId } from '../../server/outbox/plan.ts';
import type { NotificationsConfig } from '../../server/outbox/types.ts';
import { requestKeyOf } from '../../server/app/services.ts';
import { buildAppWorld, testConfig } from '../support/app-world.ts';

// Message chains and refund chains share one journal keyspace, and both ids are the first 12 hex
// characters (48 bits) of a SHA-256 that an agent can compute offline: an effect id is
// SHA-256(canonical {agent, request_id}), a message id SHA-256(canonical {outbox: {about:
// <effect id>, event, level, recipient, channel}}). plan.ts says the namespacing means a message
// id "can never be an effect id of a refund"; at 48 bits a birthday search finds a pair in about
// 2^24 hashes per side (about two minutes on one core of this machine):
//
//   for R2 over b-0 … b-<2^24>:  E[R2] = first 48 bits of SHA-256({"agent":"support-bot","request_id":R2})
//   for R1 over a-0 … until hit: M[R1] = messageId(about = effect id of R1, 'escalated', level 0, group ap-leads, 'slack:0')
//
// which gave R1 = a-3gsq6, R2 = b-5262m below. (Against another agent's predictable request ids,
// e.g. case-<n> for a million upcoming n, a match for one of them takes about 2^28 tries.)
//
// Once R1 is escalated, the outbox journals its team-channel MESSAGE at R2's effect id. R2's
// chain then starts with MESSAGE, not PROPOSED, so the inbox does not own it: the agent is told
// QUEUED ("an approver must decide") forever, no approver can see or decide it, and its receipt
// is "no such receipt". In the other order, R1's team-channel message is silently never sent.

const R1 = 'a-3gsq6';
const R2 = 'b-5262m';

let slack: Server;
let slackUrl: string;

beforeAll(async () => {
  slack = createServer((request, response) => {
    request.resume();
    response.writeHead(200).end('ok');
  });
  await new Promise<void>((r) => slack.listen(0, '127.0.0.1', r));
  slackUrl = `http://127.0.0.1:${(slack.address() as AddressInfo).port}/slack`;
});

afterAll(async () => {
  slack.closeAllConnections();
  await new Promise((r) => slack.close(r));
});

async function world() {
  const base = testConfig();
  const notifications: NotificationsConfig = { ...base.notifications, groups: { 'ap-leads': [{ kind: 'slack', url: slackUrl }] }, callbackAllowPrivate: ['127.0.0.1'] };
  return buildAppWorld({ config: { ...base, notifications } });
}

describe('message ids and effect ids in one 48-bit keyspace', () => {
  it('the pair found offline no longer collides: a message id has a shape no effect id has', async () => {
    const w = await world();
    try {
      const effectOf = (id: string) => w.services.gate.effectIdOf({ requestKey: requestKeyOf({ id, agent: 'support-bot' }), effect: {} });
      const told = messageId({ about: effectOf(R1), event: 'escalated', level: 0, recipient: { kind: 'group', name: 'ap-leads' }, channel: 'slack:0' });
      expect(told).not.toBe(effectOf(R2));
      expect(told).toMatch(/^m[0-9a-f]{23}$/);
      // And the journal refuses a message's entry on an effect's chain, whatever id is given.
      await expect(w.services.journal.append('MESSAGE', effectOf(R2), { at_ms: 0, event: 'escalated', about: null, level: 0, recipient: { kind: 'group', name: 'ap-leads' }, channel: 'slack:0', content: {}, held: null })).rejects.toThrow(/does not belong on an effect's chain/);
    } finally {
      await w.close();
    }
  });

  it("an agent's request whose effect id an earlier message took still reaches an approver", async () => {
    const w = await world();
    try {
      const first = await w.agent('POST', '/v1/refunds', { request_id: R1, payment_intent: await w.payment(10_000), amount: 8_000 });
      expect(first.json().status).toBe('QUEUED');
      await w.services.outbox.kick(); // the team channel is told of R1: its MESSAGE chain is R2's effect id

      const second = await w.agent('POST', '/v1/refunds', { request_id: R2, payment_intent: await w.payment(10_000), amount: 7_000 });
      // The agent is told a person has it...
      expect([second.statusCode, second.json().status]).toEqual([202, 'QUEUED']);
      await w.services.inbox.refresh();
      const ana = await w.login('ana');
      const inbox = await w.as(ana, 'GET', '/api/inbox');
      const ids = inbox.json().items.map((item: { effect_id: string }) => item.effect_id);
      // ...fails today: nobody has it. It is in no inbox, the item page is 404, the receipt 404.
      expect(ids).toContain(second.json().effect_id);
    } finally {
      await w.close();
    }
  });
});
