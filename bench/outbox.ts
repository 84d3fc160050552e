import fs from 'node:fs';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { SMTPServer } from 'smtp-server';
import { parse, stringify } from 'yaml';
import { DIGEST_ITEMS_MAX } from '../server/outbox/plan.ts';
import { DIGEST_WINDOW_MS } from '../server/outbox/projection.ts';
import { createPaymentIntents, refundRequest } from './http.ts';
import { LoadClient } from './http-load.ts';
import { logIn, type Session } from './live.ts';
import { startSandboxProcess, startServerProcess, type Started } from './processes.ts';
import { CONFIG_PATH, type Plan, push, type Samples, say } from './stages.ts';
import { percentile, repeat, sleep } from './stats.ts';

// The outbox over real transports, timed: an agent's refund over the $50.00 rule is escalated to
// ap-leads, which owes three messages (an email to each of ana and bea, one POST to the group's
// Slack-style channel). A real server process sends them to a real SMTP server and a real HTTP
// receiver in this process; each item is timed from its POST's answer to the last of the three.

/** Items link to `<public_url>/items/<effect_id>`: that link is how a message is matched to its item. */
const PUBLIC_URL = 'https://interlock.example';
const ITEM_LINK = /https:\/\/interlock\.example\/items\/([0-9a-f]+)/;
/** The members of ap-leads in interlock.yaml, each told by email. */
const MEMBERS = ['ana', 'bea'] as const;
const SLACK_URL_ENV = 'AP_LEADS_SLACK_URL';
/** Over the $50.00 rule and under $200.00: routed to ap-leads. */
const ESCALATED_CENTS = 6_000;
/** An item whose three messages have not all arrived this long after its answer is counted as missing. */
const NOTIFY_TIMEOUT_MS = 30_000;
/** How often the arrivals are looked at while waiting; arrival times are taken as they come, not at this grain. */
const WAIT_STEP_MS = 10;

/** When each of an item's messages arrived (performance.now()). */
interface ItemArrivals {
  emails: Map<string, number>;
  slack: number | null;
}

/** Every message received, by the effect id its link names. */
class Arrivals {
  readonly byEffect = new Map<string, ItemArrivals>();
  /** Messages with no item link: a digest, or a message this stage does not expect. */
  unmatched = 0;

  #item(effectId: string): ItemArrivals {
    let item = this.byEffect.get(effectId);
    if (!item) {
      item = { emails: new Map(), slack: null };
      this.byEffect.set(effectId, item);
    }
    return item;
  }

  email(to: string, text: string, atMs: number): void {
    const effectId = ITEM_LINK.exec(text)?.[1];
    if (effectId === undefined) this.unmatched += 1;
    else if (!this.#item(effectId).emails.has(to)) this.#item(effectId).emails.set(to, atMs);
  }

  slack(text: string, atMs: number): void {
    const effectId = ITEM_LINK.exec(text)?.[1];
    if (effectId === undefined) this.unmatched += 1;
    else this.#item(effectId).slack ??= atMs;
  }

  /** When the last of the item's three messages arrived, or null while one is still missing. */
  complete(effectId: string): { lastMs: number; emailMs: number; slackMs: number } | null {
    const item = this.byEffect.get(effectId);
    if (!item || item.slack === null || MEMBERS.some((name) => !item.emails.has(`${name}@example.com`))) return null;
    const emailMs = Math.max(...item.emails.values());
    return { lastMs: Math.max(emailMs, item.slack), emailMs, slackMs: item.slack };
  }
}

/** The MIME text of a mail with its quoted-printable soft breaks joined, so a link reads whole. */
function readable(raw: string): string {
  return raw.replace(/=\r?\n/g, '').replace(/=3D/gi, '=');
}

/** A real SMTP server on 127.0.0.1, no TLS, no login: each mail is recorded when its DATA ends. */
function startSmtp(arrivals: Arrivals): Promise<{ server: SMTPServer; port: number }> {
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const atMs = performance.now();
        const text = readable(Buffer.concat(chunks).toString('utf8'));
        for (const to of session.envelope.rcptTo) arrivals.email(to.address, text, atMs);
        callback();
      });
    },
  });
  return new Promise((resolve, reject) => {
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.server.address() as { port: number }).port }));
  });
}

/** A Slack-style incoming webhook: a node:http server answering 200 to every POST, recorded when its body ends. */
function startReceiver(arrivals: Arrivals): Promise<{ server: Server; url: string }> {
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const atMs = performance.now();
      arrivals.slack(Buffer.concat(chunks).toString('utf8'), atMs);
      response.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  return new Promise((resolve, reject) => {
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook` }));
  });
}

/** The parts of interlock.yaml this stage changes. */
interface ConfigText {
  test_mode: boolean;
  public_url?: string;
  notifications?: unknown;
  people: { name: string; notify?: unknown }[];
}

/**
 * The bench's config with the outbox on: test mode (the receivers are plain http on loopback, and
 * the clock has to move, see runOutboxRep), item links, SMTP, the team channel of ap-leads from
 * the environment, and an email for each member.
 */
function writeOutboxConfig(dir: string, smtpPort: number): string {
  const config = parse(fs.readFileSync(CONFIG_PATH, 'utf8')) as ConfigText;
  config.test_mode = true;
  config.public_url = PUBLIC_URL;
  config.notifications = {
    smtp: { host: '127.0.0.1', port: smtpPort, secure: false, from: 'Interlock <interlock@example.com>' },
    groups: { 'ap-leads': [{ slack: { url_env: SLACK_URL_ENV } }] },
    callback_allow_private: ['127.0.0.1'],
  };
  for (const person of config.people) {
    if ((MEMBERS as readonly string[]).includes(person.name)) person.notify = [{ email: `${person.name}@example.com` }];
  }
  const file = path.join(dir, 'interlock.outbox.yaml');
  fs.writeFileSync(file, stringify(config));
  return file;
}

/** What one run of escalations measured, in ms from each POST's answer. */
interface NotifyRun {
  lastMs: number[];
  emailMs: number[];
  slackMs: number[];
  missing: number;
  failed: number;
}

/** POST one escalated refund; its effect id and when its answer arrived, or null when it was not queued. */
async function postEscalated(client: LoadClient, requestId: string, intent: string): Promise<{ effectId: string; answeredMs: number } | null> {
  try {
    const reply = await client.request(refundRequest(requestId, intent, ESCALATED_CENTS));
    const answeredMs = performance.now();
    const body = JSON.parse(reply.body) as { status?: string; effect_id?: string };
    return reply.status === 202 && body.status === 'QUEUED' && typeof body.effect_id === 'string' ? { effectId: body.effect_id, answeredMs } : null;
  } catch {
    return null;
  }
}

/** Wait until every posted item's messages arrived, or its NOTIFY_TIMEOUT_MS passed; record each. */
async function collect(arrivals: Arrivals, posted: { effectId: string; answeredMs: number }[], run: NotifyRun): Promise<void> {
  const pending = new Set(posted);
  while (pending.size > 0) {
    for (const item of pending) {
      const done = arrivals.complete(item.effectId);
      if (done) {
        run.lastMs.push(done.lastMs - item.answeredMs);
        run.emailMs.push(done.emailMs - item.answeredMs);
        run.slackMs.push(done.slackMs - item.answeredMs);
        pending.delete(item);
      } else if (performance.now() - item.answeredMs > NOTIFY_TIMEOUT_MS) {
        run.missing += 1;
        pending.delete(item);
      }
    }
    if (pending.size > 0) await sleep(WAIT_STEP_MS);
  }
}

/** Move the server's application clock forward (test mode only). */
async function advanceClock(client: LoadClient, session: Session, ms: number): Promise<void> {
  const reply = await client.request({ method: 'POST', path: '/api/test/clock', headers: { cookie: session.cookie, 'x-csrf-token': session.csrf }, body: { advance_ms: ms } });
  if (reply.status !== 200) throw new Error(`the clock did not move: ${reply.status} ${reply.body}`);
}

/**
 * `plan.notifyItems` escalations at `plan.notifyRatePerS`, in batches of DIGEST_ITEMS_MAX. A
 * person told of more than that many items in one 10-minute window of the application clock
 * has the rest held for the window's digest (server/outbox/plan.ts), which is the design, not a
 * delay; so after each batch has all arrived the clock moves on one window, and every item here
 * is told on its own. Each item uses a payment intent of its own.
 */
async function runOutboxRep(plan: Plan, server: Started, intents: string[], arrivals: Arrivals, tag: string): Promise<NotifyRun> {
  const client = new LoadClient(server.url, DIGEST_ITEMS_MAX + 1);
  const run: NotifyRun = { lastMs: [], emailMs: [], slackMs: [], missing: 0, failed: 0 };
  const spacingMs = 1000 / plan.notifyRatePerS;
  try {
    const session = await logIn(client, MEMBERS[0]);
    for (let first = 0; first < plan.notifyItems; first += DIGEST_ITEMS_MAX) {
      const count = Math.min(DIGEST_ITEMS_MAX, plan.notifyItems - first);
      const startMs = performance.now();
      const answers = await Promise.all(
        Array.from({ length: count }, async (_, j) => {
          await sleep(Math.max(0, startMs + j * spacingMs - performance.now()));
          return postEscalated(client, `notify-${tag}-${first + j}`, intents[first + j]!);
        }),
      );
      const posted = answers.filter((a) => a !== null);
      run.failed += count - posted.length;
      await collect(arrivals, posted, run);
      // The next batch starts in a window of its own, a request's spacing after this one's last.
      await advanceClock(client, session, DIGEST_WINDOW_MS);
      await sleep(Math.max(0, startMs + count * spacingMs - performance.now()));
    }
  } finally {
    client.close();
  }
  return run;
}

/**
 * An escalated item reaching its group's members by email and its team channel by a Slack-style
 * webhook: for each repetition a fresh server over an empty journal, with the sandbox, the SMTP
 * server and the receiver shared.
 */
export async function outboxStage(plan: Plan, dir: string): Promise<Samples> {
  const samples: Samples = {};
  const arrivals = new Arrivals();
  const smtp = await startSmtp(arrivals);
  const receiver = await startReceiver(arrivals);
  const sandbox = await startSandboxProcess();
  try {
    const configPath = writeOutboxConfig(dir, smtp.port);
    await repeat(plan.reps, async (rep) => {
      const intents = await createPaymentIntents(sandbox.url, plan.notifyItems);
      const server = await startServerProcess({ dataDir: path.join(dir, `outbox-r${rep}`), sandboxUrl: sandbox.url, configPath, env: { [SLACK_URL_ENV]: receiver.url } });
      let run: NotifyRun;
      try {
        run = await runOutboxRep(plan, server, intents, arrivals, `r${rep}`);
      } finally {
        await server.stop();
      }
      if (run.lastMs.length === 0) throw new Error(`no item's three messages all arrived (${run.missing} missing, ${run.failed} POSTs failed, ${arrivals.unmatched} messages without an item link)`);
      say(
        `outbox rep ${rep}: last message p95 ${percentile(run.lastMs, 95).toFixed(0)} ms, p50 ${percentile(run.lastMs, 50).toFixed(0)} ms, max ${Math.max(...run.lastMs).toFixed(0)} ms over ${run.lastMs.length} items; missing ${run.missing}, failed ${run.failed}`,
      );
      push(samples, {
        notify_p95_ms: percentile(run.lastMs, 95),
        notify_p50_ms: percentile(run.lastMs, 50),
        notify_max_ms: Math.max(...run.lastMs),
        notify_email_p95_ms: percentile(run.emailMs, 95),
        notify_slack_p95_ms: percentile(run.slackMs, 95),
        notify_samples: run.lastMs.length,
        notify_missing: run.missing + run.failed,
      });
    });
  } finally {
    await sandbox.stop();
    await new Promise((resolve) => receiver.server.close(resolve));
    await new Promise((resolve) => smtp.server.close(() => resolve(null)));
  }
  if (arrivals.unmatched > 0) say(`outbox: ${arrivals.unmatched} messages named no item`);
  return samples;
}
