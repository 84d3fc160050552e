import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { SqliteJournal } from '../db/journal-store.ts';
import { openDatabase } from '../db/open.ts';
import type { JsonObject } from '../shared/json.ts';
import { webhookRoutes } from '../server/confirm/webhook-plugin.ts';
import type { InterlockConfig } from '../server/config/schema.ts';
import { latestEscalation } from '../server/journal/chain.ts';
import { Gate } from '../server/gate/gate.ts';
import { generateSigningKeyForRun } from './run-key.ts';
import { Authority } from '../server/gate/leases.ts';
import { signReceipt } from '../server/receipts/receipts.ts';
import { verifyReceipt } from '../server/receipts/verify.ts';
import { Inbox, type InboxRequest } from '../server/inbox/inbox.ts';
import { policyFromConfig } from '../server/inbox/policy.ts';
import { startSandbox } from '../server/sandbox/index.ts';
import { computeScoreboard, type Scoreboard } from '../server/scoreboard/figures.ts';
import { requestKeyOf } from '../server/app/services.ts';
import { StripeRefunds } from '../server/targets/stripe-refunds.ts';

/**
 * The escalation story of inbox §22, through our real inbox, gate, Stripe target and webhook
 * endpoint, against the local Stripe sandbox (which posts signed webhooks). The sandbox clock
 * stands in for real waits: both sides read one clock that the story moves by hand.
 */

const PAID = 10_000;
const ASK = 5_000;
const HAND = 3_000;
const SMALL = 1_500;
const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const START_MS = Date.UTC(2026, 8, 14, 1, 0, 0);

/** One step of the story as the results file prints it. */
export interface Step {
  step: string;
  clock: string;
  detail: string;
}

export interface EscalationLiveRun {
  steps: Step[];
  deliveries: { refund: string; type: string; result: string }[];
  totalRefundedCents: number;
  receiptsValid: boolean[];
  scoreboard: Scoreboard;
}

const config: Pick<InterlockConfig, 'rules' | 'routes'> = {
  rules: [{ kind: 'amount_at_most', name: 'amount at most 1000 cents', amount: { usd: 1_000 } }],
  routes: [{ name: 'refunds', when: null, chain: ['ap-leads', 'finance-manager'], slaMs: 4 * HOUR_MS, twoApproversFrom: null }],
};

/** Run the story once; ids Stripe made are replaced by stable names so the results file is reproducible. */
export async function runEscalationLive(): Promise<EscalationLiveRun> {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-escalation-live-'));
  const clock = { ms: START_MS };
  const nowMs = () => clock.ms;
  const secret = 'whsec_escalation_live_experiment';
  const database = openDatabase(join(dir, 'journal.sqlite'));
  const journal = new SqliteJournal({ db: database.db, wallClockMs: nowMs });
  const listener = Fastify();
  const results = new Map<string, string>();
  listener.addHook('onSend', async (request, _reply, payload) => {
    if (request.url === '/webhooks/stripe') results.set(String((JSON.parse(String(request.body)) as { id: string }).id), String(payload));
    return payload;
  });
  await listener.register(webhookRoutes, { journal, secrets: [secret], nowMs });
  const hookUrl = `${await listener.listen({ port: 0, host: '127.0.0.1' })}/webhooks/stripe`;
  const sandbox = await startSandbox({ clockMs: nowMs, webhook: { url: hookUrl, secret } });
  const aliases = new Map<string, string>();
  const counts = new Map<string, number>();
  const alias = (id: string) => {
    if (!aliases.has(id)) {
      const prefix = id.split('_')[0]!;
      counts.set(prefix, (counts.get(prefix) ?? 0) + 1);
      aliases.set(id, `${prefix}_${counts.get(prefix)}`);
    }
    return aliases.get(id)!;
  };
  try {
    const target = new StripeRefunds(sandbox.stripe());
    const groups: Record<string, string[]> = { 'ap-leads': ['ana'], 'finance-manager': ['fm'] };
    const authority = new Authority({ members: (g) => groups[g] ?? [], maxAgeMs: null, nowMs });
    const gate = new Gate({ journal, target, leases: authority, wallClockMs: nowMs });
    const inbox = new Inbox({
      name: 'inbox',
      gate,
      authority,
      policy: policyFromConfig(config),
      capture: async (r) => target.capture(String(r.payment_intent)),
      effectOf: (r) => ({ payment_intent: String(r.payment_intent), amount: r.amount as number }),
      requestKeyOf,
      nowMs,
    });
    const steps: Step[] = [];
    // Webhooks settle before the clock jumps, as they would in real time: a delivery signed before a
    // jump and checked after it would be (rightly) refused as stale.
    const advance = async (ms: number) => {
      await sandbox.webhooksIdle();
      clock.ms += ms;
    };
    const log = (step: string, detail: string) => steps.push({ step, clock: `+${Math.round((clock.ms - START_MS) / MINUTE_MS)} min`, detail });
    const latest = async (r: InboxRequest) => latestEscalation(await journal.entries(inbox.effectIdOf(r))).escalation!;

    const intent = await sandbox.createPaymentIntent(PAID);
    log('payment', `payment_intent=${alias(intent.id)}, amount=${intent.amount}`);
    const first: InboxRequest = { id: 'refund-50', agent: 'support-bot', payment_intent: intent.id, amount: ASK, reason: 'damaged', flags: [] };
    const firstStatus = await inbox.submit(first);
    const e1 = await latest(first);
    log('request', `request_id=${first.id}, status=${firstStatus}, reason=${e1.reason}, detail=${JSON.stringify(e1.detail)}, group=${e1.group}`);
    await advance(20 * MINUTE_MS);
    log('approved', `by=ana, status=${await inbox.approve(inbox.effectIdOf(first), 'ana', { seen: e1.hash, execute: false })}`);
    await advance(5 * MINUTE_MS);
    const hand = sandbox.handRefund(intent.id, HAND);
    log('hand refund', `refund=${alias(hand.id)}, amount=${hand.amount}, by hand in the dashboard`);
    const sendStatus = await inbox.execute(inbox.effectIdOf(first));
    const e2 = await latest(first);
    const repairs = (e2.repairs as JsonObject[]).map((r) => r.code);
    log('send', `status=${sendStatus}, reason=${e2.reason}, changes=${JSON.stringify(e2.changes)}, repairs=${JSON.stringify(repairs)}`);
    await advance(10 * MINUTE_MS);
    log('repair accepted', `by=ana, repair=still_fits, status=${await inbox.repair(inbox.effectIdOf(first), 'ana', 0, { seen: e2.hash })}`);
    await advance(5 * MINUTE_MS);
    const second: InboxRequest = { id: 'refund-15', agent: 'support-bot', payment_intent: intent.id, amount: SMALL, reason: 'late', flags: [] };
    const secondStatus = await inbox.submit(second);
    const e3 = await latest(second);
    log('second request', `request_id=${second.id}, status=${secondStatus}, group=${e3.group}, refunded_by_others=${(e3.facts as JsonObject).refunded_by_others}`);
    await advance(4 * HOUR_MS + MINUTE_MS);
    const moved = Object.fromEntries(await inbox.tick());
    const e4 = await latest(second);
    log('sla tick', `moved=${JSON.stringify(Object.values(moved))}, group=${e4.group}, level=${e4.level}, breach=${e4.breach}, due=first due + ${((e4.due_ms as number) - (e3.due_ms as number)) / HOUR_MS} h`);
    log('ap-leads after breach', `by=ana, status=${await inbox.approve(inbox.effectIdOf(second), 'ana', { seen: e4.hash })}`);
    await advance(15 * MINUTE_MS);
    log('approved by fm', `by=fm, status=${await inbox.approve(inbox.effectIdOf(second), 'fm', { seen: e4.hash })}`);
    await sandbox.webhooksIdle();
    for (const r of sandbox.refunds(intent.id)) alias(r.id);
    // Deliveries arrive in their own order: list them by refund, then by event, so every run reads the same.
    const deliveries = sandbox
      .deliveries()
      .map((d) => {
        const answer = JSON.parse(results.get(d.eventId) ?? '{}') as { result?: string };
        const refund = (JSON.parse(d.body) as { data: { object: { id: string } } }).data.object.id;
        return { refund: alias(refund), type: d.type, result: answer.result ?? `HTTP ${d.status}` };
      })
      .sort((a, b) => a.refund.localeCompare(b.refund) || a.type.localeCompare(b.type) || a.result.localeCompare(b.result));
    const key = generateSigningKeyForRun();
    const receiptsValid = [first, second].map(async (r) => {
      const id = inbox.effectIdOf(r);
      return (await verifyReceipt(signReceipt(id, await journal.entries(id), key), new Map([[key.keyId, key.publicKeyPem]]))).valid;
    });
    const entries = (await journal.scan(0, 100_000)).map((s) => s.entry);
    return {
      steps,
      deliveries,
      totalRefundedCents: sandbox.refunds(intent.id).filter((r) => r.status !== 'failed').reduce((n, r) => n + r.amount, 0),
      receiptsValid: await Promise.all(receiptsValid),
      scoreboard: computeScoreboard(entries, 'inbox'),
    };
  } finally {
    await sandbox.close();
    await listener.close();
    database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
