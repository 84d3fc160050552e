import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { verifyCallback } from '../../shared/client/index.ts';
import { clientFor, freePort, type ServerProcess, startServerProcess, writeTestConfig } from '../support/server-process.ts';

// The outbox end to end, over real transports: a real Interlock process, a real SMTP server and
// real HTTP receivers (a Slack-style incoming webhook, the agent's callback URL). An escalated
// refund reaches its group's members by email and the team channel, a reminder and a move up
// follow the SLA, and the agent gets a signed callback when a person decides.

const CALLBACK_SECRET = 'cb_secret_for_the_delivery_test';
const HOUR_MS = 3_600_000;

interface Received {
  id: string;
  body: string;
  headers: IncomingMessage['headers'];
}

function receiver(): Promise<{ server: Server; url: string; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => {
      body += chunk;
    });
    request.on('end', () => {
      received.push({ id: String(request.headers['interlock-message-id']), body, headers: request.headers });
      response.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`, received })));
}

interface Mail {
  to: string[];
  raw: string;
}

function smtp(): Promise<{ server: SMTPServer; port: number; mails: Mail[] }> {
  const mails: Mail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      let raw = '';
      stream.on('data', (chunk: Buffer) => {
        raw += chunk.toString();
      });
      stream.on('end', () => {
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address), raw });
        callback();
      });
    },
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.server.address() as { port: number }).port, mails })));
}

async function until<T>(what: string, read: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

let dir: string;
let server: ServerProcess;
let slack: Awaited<ReturnType<typeof receiver>>;
let agentHook: Awaited<ReturnType<typeof receiver>>;
let mail: Awaited<ReturnType<typeof smtp>>;
let client: ReturnType<typeof clientFor>;
let sandboxUrl: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-delivery-'));
  [slack, agentHook, mail] = await Promise.all([receiver(), receiver(), smtp()]);
  const config = parse(readFileSync(writeTestConfig(dir), 'utf8'));
  config.public_url = 'https://interlock.example';
  config.notifications = {
    reminder_at_share: 0.5,
    smtp: { host: '127.0.0.1', port: mail.port, secure: false, from: 'Interlock <interlock@example.com>' },
    groups: { 'ap-leads': [{ slack: { url_env: 'AP_LEADS_SLACK_URL' } }] },
    callback_allow_private: ['127.0.0.1'],
  };
  for (const person of config.people) {
    if (['ana', 'bea', 'fm'].includes(person.name)) person.notify = [{ email: `${person.name}@example.com` }];
  }
  config.agents[0].callback_url = agentHook.url;
  config.agents[0].callback_secret_env = 'SUPPORT_BOT_CALLBACK_SECRET';
  const path = join(dir, 'interlock.delivery.yaml');
  writeFileSync(path, stringify(config));
  const port = await freePort();
  const sandboxPort = await freePort();
  sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
  server = await startServerProcess({
    PORT: String(port),
    SANDBOX_PORT: String(sandboxPort),
    DATA_DIR: join(dir, 'data'),
    INTERLOCK_CONFIG: path,
    AP_LEADS_SLACK_URL: slack.url,
    SUPPORT_BOT_CALLBACK_SECRET: CALLBACK_SECRET,
  });
  client = clientFor(server.url);
}, 60_000);

afterAll(async () => {
  server?.child.kill('SIGKILL');
  await server?.exited;
  await Promise.all([new Promise((r) => slack?.server.close(() => r(null))), new Promise((r) => agentHook?.server.close(() => r(null))), new Promise((r) => mail?.server.close(() => r(null)))]);
  rmSync(dir, { recursive: true, force: true });
});

async function payment(cents: number): Promise<string> {
  const made = await fetch(`${sandboxUrl}/_sandbox/payment-intents`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ amountCents: cents }) });
  return ((await made.json()) as { id: string }).id;
}

/** The MIME body of a mail with its quoted-printable soft breaks joined, for reading. */
function readable(raw: string): string {
  return raw.replace(/=\r?\n/g, '').replace(/=3D/g, '=');
}

describe('the outbox over real SMTP and HTTP', () => {
  it('an escalation reaches the members by email and the team channel; a reminder and a move up follow the SLA; the agent is called back, signed', async () => {
    const pi = await payment(10_000);
    const asked = await client.agent('POST', '/v1/refunds', { request_id: 'told-1', payment_intent: pi, amount: 8_000, reason: 'customer says <!channel> & <script>x</script>' });
    expect([asked.status, asked.body.status]).toEqual([202, 'QUEUED']);
    const effectId = String(asked.body.effect_id);

    // Both members of ap-leads by email, and the team's Slack channel, once each.
    const mails = await until('two emails', () => (mail.mails.length >= 2 ? mail.mails : undefined));
    expect(mails.map((m) => m.to[0]).sort()).toEqual(['ana@example.com', 'bea@example.com']);
    const toAna = readable(mails.find((m) => m.to[0] === 'ana@example.com')!.raw);
    expect(toAna).toMatch(/^Interlock-Message-Id: m[0-9a-f]{23}\r?$/im);
    expect(toAna).toContain(`https://interlock.example/items/${effectId}`);
    expect(toAna).toContain('$80.00');
    // The agent's words are plain text in the text part, and escaped in the HTML part.
    const html = toAna.slice(toAna.indexOf('Content-Type: text/html'));
    expect(html).not.toContain('<script>x</script>');
    expect(html).toContain('&lt;script&gt;');
    const team = await until('the team channel', () => slack.received[0]);
    expect(JSON.parse(team.body).text).not.toContain('<!channel>');
    expect(team.id).toMatch(/^m[0-9a-f]{23}$/);

    // Half the 4 h SLA: a reminder to each member and the team; past it, the item moves up to fm.
    await client.as('ana', 'POST', '/api/test/clock', { advance_ms: 2 * HOUR_MS + 60_000 });
    await until('reminders', () => (mail.mails.length >= 4 && slack.received.length >= 2 ? true : undefined));
    expect(mail.mails.slice(2).every((m) => readable(m.raw).match(/remind/i))).toBe(true);
    await client.as('ana', 'POST', '/api/test/clock', { advance_ms: 2 * HOUR_MS });
    const movedUp = await until('the move up', () => mail.mails.find((m) => m.to[0] === 'fm@example.com'));
    expect(readable(movedUp.raw)).toContain(effectId);

    // fm decides: the agent's callback carries what GET answers, signed as Stripe signs webhooks.
    const item = await client.as('fm', 'GET', `/api/items/${effectId}`);
    const escalation = (item.body.item as { escalation: string }).escalation;
    const decided = await client.as('fm', 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation });
    expect(decided.body.status).toBe('COMMITTED');
    const callback = await until('the callback', () => agentHook.received[0]);
    const body = await verifyCallback(callback.body, String(callback.headers['interlock-signature']), CALLBACK_SECRET);
    const polled = await client.agent('GET', '/v1/refunds/told-1');
    expect(body).toEqual(polled.body);

    // The item page says who was told, over which channel, and that it was delivered.
    const told = (await client.as('fm', 'GET', `/api/items/${effectId}`)).body.notifications as { event: string; recipient: { name: string }; channel: string; status: string }[];
    expect(told.map((n) => `${n.event} ${n.recipient.name} ${n.channel} ${n.status}`).sort()).toEqual([
      'escalated ana email:0 delivered',
      'escalated ap-leads slack:0 delivered',
      'escalated bea email:0 delivered',
      'final support-bot callback:0 delivered',
      'moved_up fm email:0 delivered',
      'reminder ana email:0 delivered',
      'reminder ap-leads slack:0 delivered',
      'reminder bea email:0 delivered',
    ]);
    // Nothing was told twice.
    expect(new Set(mail.mails.map((m) => readable(m.raw).match(/^Interlock-Message-Id: (\w+)\r?$/im)?.[1])).size).toBe(mail.mails.length);
  }, 60_000);
});
