import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { AppClock } from '../../server/app/clock.ts';
import type { NotificationsConfig } from '../../server/outbox/types.ts';
import { type AppWorld, buildAppWorld, testConfig } from '../support/app-world.ts';
import { compiledEntry } from '../support/server-process.ts';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/** Day one and day two of the journal the export tests read, on the wall clock the journal stamps. */
export const DAY_1 = '2026-01-05';
export const DAY_2 = '2026-01-06';
export const DAY_3 = '2026-01-07';
const DAY_1_MS = Date.parse(`${DAY_1}T09:00:00Z`);
const DAY_2_MS = Date.parse(`${DAY_2}T09:00:00Z`);

/** A rejection reason written to break a SIEM line: a pipe, a backslash, an equals sign, a newline and a forged CEF header. */
export const HOSTILE_REASON = 'Not ours|refund\\ to=evil\r\nCEF:0|Interlock|Interlock|1.0|forged|Forged|10|externalId=r.fake';

/** Secrets the world holds, none of which an export may carry. */
export const SECRETS = {
  smtpPassword: 'smtp-password-never-exported-4711',
  slackPath: '/services/T0EXPORT/B0EXPORT/xoxExportWebhookSecret0815',
  personWebhookSecret: 'person-webhook-secret-never-exported-42',
  callbackSecret: 'agent-callback-secret-never-exported-99',
};

/** What happened in the world, by request id: its effect id. */
export interface ExportWorld {
  world: AppWorld;
  dir: string;
  effects: Record<'routine' | 'approved' | 'rejected' | 'stale' | 'repair', string>;
  /** Approve the request queued on day one, on day two: its chain grows after day one's export. */
  approveOnDay2(): Promise<void>;
}

function notificationsWithSecrets(base: NotificationsConfig): NotificationsConfig {
  // Nothing listens on port 9: every delivery fails at once, so the outbox journals its attempts.
  return {
    ...base,
    smtp: { host: '127.0.0.1', port: 9, secure: false, user: 'interlock', password: SECRETS.smtpPassword, from: 'Interlock <interlock@example.com>' },
    people: { ana: [{ kind: 'webhook', url: 'http://127.0.0.1:9/hook', secret: SECRETS.personWebhookSecret }] },
    groups: { 'ap-leads': [{ kind: 'slack', url: `http://127.0.0.1:9${SECRETS.slackPath}` }] },
    agents: { 'support-bot': { url: 'http://127.0.0.1:9/callback', secret: SECRETS.callbackSecret } },
    callbackAllowPrivate: ['127.0.0.1'],
  };
}

/**
 * A real data folder (journal, signing key) filled by real requests through the app and the
 * Stripe sandbox on day one: a routine refund sent by policy, one queued for a person, one a person
 * rejects with a hostile reason, and one refused as stale after a hand refund and repaired.
 */
export async function buildExportWorld(): Promise<ExportWorld> {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-export-'));
  let wallMs = DAY_1_MS;
  const clock = new AppClock(() => wallMs);
  const base = testConfig();
  const world = await buildAppWorld({ dir, clock, config: { ...base, notifications: notificationsWithSecrets(base.notifications) } });
  const ask = async (requestId: string, pi: string, amount: number) => {
    wallMs += 60_000;
    const answer = await world.agent('POST', '/v1/refunds', { request_id: requestId, payment_intent: pi, amount, reason: 'Parcel arrived damaged' });
    expect(answer.statusCode, answer.body).toBeLessThan(300);
    return answer.json() as { effect_id: string; status: string };
  };
  const decide = async (effectId: string, body: Record<string, unknown>) => {
    wallMs += 60_000;
    const ana = await world.login('ana');
    const item = (await world.as(ana, 'GET', `/api/items/${effectId}`)).json();
    const answer = await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { escalation: item.item.escalation, ...body });
    expect(answer.statusCode, answer.body).toBe(200);
    return answer.json() as { status: string };
  };

  const pi = await world.payment(10_000);
  const routine = await ask('exp-routine', pi, 2_000);
  const approved = await ask('exp-approved', pi, 6_000);
  const rejected = await ask('exp-rejected', pi, 7_000);
  expect(await decide(rejected.effect_id, { action: 'reject', reason: HOSTILE_REASON })).toMatchObject({ status: 'REJECTED' });
  const pi2 = await world.payment(10_000);
  const stale = await ask('exp-stale', pi2, 8_000);
  world.sandbox.handRefund(pi2, 3_000);
  expect(await decide(stale.effect_id, { action: 'approve' })).toMatchObject({ status: 'REFUSED:stale_premise' });
  expect(await decide(stale.effect_id, { action: 'repair', repair_index: 0 })).toMatchObject({ status: 'COMMITTED' });
  await world.services.outbox.kick();
  const journal = (await world.services.journal.scan(0, 100_000)).map((s) => s.entry);
  const repair = journal.find((entry) => entry.kind === 'DECIDED' && entry.decision === 'repair');
  const repairRequestId = repair?.kind === 'DECIDED' ? repair.repair?.request_id : undefined;
  const repairEffect = journal.find((entry) => entry.kind === 'PROPOSED' && entry.request?.id === repairRequestId)?.effect_id;
  expect(routine.status).toBe('COMMITTED');
  expect(approved.status).toBe('QUEUED');
  expect(repairEffect).toBeTypeOf('string');
  return {
    world,
    dir,
    effects: { routine: routine.effect_id, approved: approved.effect_id, rejected: rejected.effect_id, stale: stale.effect_id, repair: repairEffect! },
    async approveOnDay2() {
      wallMs = DAY_2_MS;
      expect(await decide(approved.effect_id, { action: 'approve' })).toMatchObject({ status: 'COMMITTED' });
    },
  };
}

/** What one run of the export command did. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run `npm run export`'s entry as a child process, on `dataDir`, with these arguments. */
export async function runExport(dataDir: string, args: string[]): Promise<CliRun> {
  const child = spawn(process.execPath, ['--enable-source-maps', compiledEntry('export'), ...args], {
    cwd: repoRoot,
    env: { ...process.env, DATA_DIR: dataDir, DB_PATH: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once('close', (exit) => resolve(exit)));
  return { code, stdout, stderr };
}

/** The lines of an export, without the empty one after the last newline. */
export function linesOf(text: string): string[] {
  return text.split('\n').filter((line) => line !== '');
}
