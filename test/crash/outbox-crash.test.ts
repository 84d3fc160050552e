import { createHmac } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase } from '../../db/open.ts';
import type { Entry, MessageEntry } from '../../shared/entries.ts';
import { messageId } from '../../server/outbox/plan.ts';
import { makeCrashDir, type SandboxProcess, startSandboxProcess, stopCrashProcesses } from '../support/crash-harness.ts';
import { type HookReceiver, startHookReceiver, writeOutboxTestConfig } from '../support/outbox-receiver.ts';
import { clientFor, freePort, type ServerProcess, startServerProcess } from '../support/server-process.ts';

/**
 * A real server process, SIGKILLed at each of the outbox's kill points while it tells ana (by a
 * signed webhook to a real local receiver) that a refund waits for her, then restarted without
 * the kill: nothing is lost, nothing is decided twice, and a message is repeated only when the
 * process died between its send and its record, under the same Interlock-Message-Id.
 */

const HOOK_SECRET = 'whsec_outbox_crash_test_0123456789';
/** How long a dead process's claim on a message holds it: INTERLOCK_CLAIM_TTL_MS below, as for an effect. */
const OUTBOX_CLAIM_TTL_MS = 300;
/** The three points run side by side, waiting out the dead process's claim together; their server starts take turns. */
const CASE_TIMEOUT_MS = OUTBOX_CLAIM_TTL_MS + 120_000;

let sandbox: SandboxProcess;
const servers = new Set<ServerProcess>();
const receivers: HookReceiver[] = [];

beforeAll(async () => {
  sandbox = await startSandboxProcess();
}, 60_000);

afterAll(async () => {
  for (const server of servers) server.child.kill('SIGKILL');
  await Promise.all(receivers.map((r) => r.close()));
  await stopCrashProcesses();
});

async function start(env: Record<string, string>): Promise<ServerProcess> {
  const server = await startServerProcess(env);
  servers.add(server);
  void server.exited.then(() => servers.delete(server));
  return server;
}

/** Every entry of the journal in `dir`, read once the server is gone. */
async function journalOf(dir: string): Promise<Entry[]> {
  const database = openDatabase(join(dir, 'interlock.sqlite'));
  try {
    const journal = new SqliteJournal({ db: database.db, wallClockMs: () => Date.now() });
    const out: Entry[] = [];
    for (let after = 0; ; ) {
      const page = await journal.scan(after, 10_000);
      if (page.length === 0) return out;
      for (const { seq, entry } of page) {
        out.push(entry);
        after = seq;
      }
    }
  } finally {
    database.close();
  }
}

/** True when `signature` is `Interlock-Signature` over `body` with the hook's secret. */
function signedWithSecret(body: string, signature: string | null): boolean {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(signature ?? '');
  if (!match) return false;
  return createHmac('sha256', HOOK_SECRET).update(`${match[1]}.${body}`).digest('hex') === match[2];
}

let starting: Promise<unknown> = Promise.resolve();

/** Run `work` after every other started before it: a server start is CPU-heavy, and three at once on a small machine miss the ready timeout. */
function oneAtATime<T>(work: () => Promise<T>): Promise<T> {
  const run = starting.then(work, work);
  starting = run.catch(() => {});
  return run;
}

async function sleep(ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms));
}

describe('outbox crash', () => {
  it.concurrent.for(['outbox_before_attempt', 'outbox_after_send', 'outbox_after_record'] as const)(
    'killed at %s while telling ana of an escalation, a restart tells her once (after_send: at most twice, under one id) and journals one MESSAGE',
    { timeout: CASE_TIMEOUT_MS },
    async (point, { expect }) => {
      const dir = makeCrashDir(`outbox-${point}`);
      const receiver = await startHookReceiver();
      receivers.push(receiver);
      const env = {
        PORT: String(await freePort()),
        DATA_DIR: dir,
        INTERLOCK_CONFIG: writeOutboxTestConfig(dir, receiver.url, 'HOOK_SECRET'),
        STRIPE_SANDBOX_URL: sandbox.url,
        INTERLOCK_CLAIM_TTL_MS: '300',
        HOOK_SECRET,
      };
      const requestId = `outbox-${point}`;
      const { diedAtMs, sentBeforeDeath, restarted } = await oneAtATime(async () => {
        const dying = await start({ ...env, INTERLOCK_KILL_AT: point });
        const pi = (await sandbox.remote.createPaymentIntent(20_000)).id;
        // Over the $50.00 rule: queued to ap-leads, whose member ana has a webhook. The process may die before it answers.
        await clientFor(dying.url).agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: pi, amount: 8_000 }).catch(() => null);
        expect(await dying.exited).toBe('SIGKILL');
        const died = { diedAtMs: Date.now(), sentBeforeDeath: receiver.received.length };
        return { ...died, restarted: await start(env) };
      });
      expect(sentBeforeDeath).toBe(point === 'outbox_before_attempt' ? 0 : 1);
      const api = clientFor(restarted.url);
      const answer = await api.agent('GET', `/v1/refunds/${requestId}`);
      expect(answer.body.status).toBe('QUEUED');
      const effectId = String(answer.body.effect_id);
      // Past the dead process's claim on the message, and a few outbox passes (one a second) after it.
      const settledAtMs = diedAtMs + OUTBOX_CLAIM_TTL_MS + 3_000;
      for (;;) {
        // The item page's "who was told", as ana sees it.
        const told = (await api.as('ana', 'GET', `/api/items/${effectId}`)).body.notifications as Array<{ status: string }>;
        if (Date.now() > settledAtMs && told.length > 0 && told.every((n) => n.status === 'delivered')) break;
        if (Date.now() > settledAtMs + 20_000) throw new Error(`not delivered: ${JSON.stringify(told)}`);
        await sleep(500);
      }
      restarted.child.kill('SIGKILL');
      await restarted.exited;

      const id = messageId({ about: effectId, event: 'escalated', level: 0, recipient: { kind: 'person', name: 'ana' }, channel: 'webhook:0' });
      // What ana's receiver took: the message, signed, under its id; twice only after a death between send and record.
      const received = receiver.received;
      expect(received.length).toBeGreaterThanOrEqual(1);
      expect(received.length).toBeLessThanOrEqual(point === 'outbox_after_send' ? 2 : 1);
      for (const request of received) {
        expect(request.messageId).toBe(id);
        expect(signedWithSecret(request.body, request.signature)).toBe(true);
        expect(JSON.parse(request.body)).toMatchObject({ id, event: 'escalated' });
      }
      // What the journal holds: one MESSAGE about the item, its attempt, delivered; the item's chain untouched by it.
      const entries = await journalOf(dir);
      const messages = entries.filter((e): e is MessageEntry => e.kind === 'MESSAGE' && e.about === effectId);
      expect(messages.map((m) => `${m.effect_id} ${m.event} ${m.recipient.kind}:${m.recipient.name} ${m.channel}`)).toEqual([`${id} escalated person:ana webhook:0`]);
      const chain = entries.filter((e) => e.effect_id === id);
      expect(chain.map((e) => (e.kind === 'ATTEMPT' ? `ATTEMPT ${e.n} ${e.outcome}` : e.kind))).toEqual(['MESSAGE', 'ATTEMPT 1 delivered']);
      expect(entries.filter((e) => e.effect_id === effectId).map((e) => e.kind)).toEqual(['PROPOSED', 'ESCALATED']);
      console.log(`${point}: ${sentBeforeDeath} sent before the death, ${received.length} in all, all under ${id}`);
    },
  );
});
