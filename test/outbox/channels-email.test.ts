import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClosableChannels, createChannels } from '../../server/outbox/channels.ts';
import type { Delivery, MessageContent, NotificationsConfig, SmtpConfig } from '../../server/outbox/types.ts';

// Email against a real SMTP server in the test (smtp-server), with STARTTLS and a login, checking
// the raw message it received.

const NOW_MS = Date.UTC(2026, 11, 3, 5, 40);
const USER = 'interlock';
const PASSWORD = 'smtp-password';

interface ReceivedMail {
  from: string | false;
  to: string[];
  user: string | undefined;
  secure: boolean;
  raw: string;
}

const mails: ReceivedMail[] = [];
let smtp: SMTPServer;
let smtpPort: number;

beforeAll(async () => {
  smtp = new SMTPServer({
    // STARTTLS with smtp-server's own self-signed certificate; the client is told to trust it.
    authMethods: ['PLAIN', 'LOGIN'],
    logger: false,
    onAuth(auth, _session, callback) {
      if (auth.username === USER && auth.password === PASSWORD) callback(null, { user: USER });
      else callback(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
    onRcptTo(address, _session, callback) {
      if (address.address === 'nobody@example.com') callback(Object.assign(new Error('No such mailbox'), { responseCode: 550 }));
      else if (address.address === 'later@example.com') callback(Object.assign(new Error('Mailbox busy, try later'), { responseCode: 451 }));
      else callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        mails.push({
          from: session.envelope.mailFrom === false ? false : session.envelope.mailFrom.address,
          to: session.envelope.rcptTo.map((r) => r.address),
          user: session.user,
          secure: session.secure,
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  smtpPort = (smtp.server.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const channels of opened) channels.close();
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
});

const opened: ClosableChannels[] = [];

function smtpConfig(overrides: Partial<SmtpConfig> = {}): SmtpConfig {
  return { host: '127.0.0.1', port: smtpPort, secure: false, user: USER, password: PASSWORD, from: 'Interlock <interlock@example.com>', ...overrides };
}

function channelsFor(smtpOverrides: Partial<SmtpConfig> = {}, timeoutMs = 2_000, publicUrl: string | null = 'https://interlock.example.com'): ClosableChannels {
  const config: NotificationsConfig = { publicUrl, reminderAtShare: null, smtp: smtpConfig(smtpOverrides), people: {}, groups: {}, agents: {}, callbackAllowPrivate: [] };
  const channels = createChannels(config, { timeoutMs, clock: { nowMs: () => NOW_MS, wallMs: () => NOW_MS }, smtpTls: { rejectUnauthorized: false } });
  opened.push(channels);
  return channels;
}

function buildContent(overrides: Partial<MessageContent> = {}): MessageContent {
  return {
    event: 'escalated',
    effect_id: '3f2a9c1d7e4b',
    request_id: 'case-4471',
    agent: 'support-bot',
    amount: 8_000,
    currency: 'usd',
    why: 'a rule wants a person to decide',
    reason: 'Never arrived <script>alert("x")</script> & more',
    group: 'ap-leads',
    level: 0,
    due_ms: NOW_MS + 3 * 3_600_000 + 20 * 60_000,
    link: 'https://interlock.example.com/items/3f2a9c1d7e4b',
    ...overrides,
  };
}

const emailTo = (to: string, id = 'a1b2c3d4e5f6'): Delivery => ({ id, recipient: { kind: 'person', name: 'ana' }, channel: { kind: 'email', to }, content: buildContent() });
const never = new AbortController().signal;

/** The header block of a raw message, unfolded. */
function headersOf(raw: string): string {
  return raw.slice(0, raw.indexOf('\r\n\r\n')).replace(/\r\n[ \t]+/g, ' ');
}

/** Each MIME part's content type and decoded body (quoted-printable or 7bit, as nodemailer writes them). */
function partsOf(raw: string): Record<string, string> {
  const boundary = /boundary="?([^";\r\n]+)"?/.exec(headersOf(raw))?.[1];
  if (boundary === undefined) throw new Error('not a multipart message');
  const parts: Record<string, string> = {};
  for (const part of raw.split(`--${boundary}`).slice(1, -1)) {
    const split = part.indexOf('\r\n\r\n');
    const headers = part.slice(0, split).replace(/\r\n[ \t]+/g, ' ');
    let body = part.slice(split + 4);
    if (/content-transfer-encoding: quoted-printable/i.test(headers)) {
      body = Buffer.from(body.replace(/=\r\n/g, '').replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))), 'latin1').toString('utf8');
    }
    const type = /content-type: ([^;\r\n]+)/i.exec(headers)?.[1]?.toLowerCase() ?? 'unknown';
    parts[type] = body;
  }
  return parts;
}

describe('email over SMTP', () => {
  it('logs in over STARTTLS and sends text and HTML parts with Interlock-Message-Id and a Message-ID from it', async () => {
    const outcome = await channelsFor().deliver(emailTo('ana@example.com'), never);
    expect(outcome).toMatchObject({ ok: true, status: 250 });
    const mail = mails.at(-1)!;
    expect(mail).toMatchObject({ from: 'interlock@example.com', to: ['ana@example.com'], user: USER, secure: true });
    const headers = headersOf(mail.raw);
    // Header names are case-insensitive; nodemailer writes this one Interlock-Message-ID.
    expect(headers).toMatch(/^Interlock-Message-Id: a1b2c3d4e5f6$/im);
    // The Message-ID's domain is the public address's host; the email says a program sent it (RFC 3834).
    expect(headers).toMatch(/^Message-ID: <a1b2c3d4e5f6@interlock\.example\.com>$/m);
    expect(headers).toMatch(/^Auto-Submitted: auto-generated$/m);
    expect(headers).toMatch(/^Subject: Decision needed: \$80\.00 refund case-4471$/m);
    expect(headers).toMatch(/^From: Interlock <interlock@example\.com>$/m);
    const parts = partsOf(mail.raw);
    expect(parts['text/plain']).toContain('A refund of $80.00 waits for a decision in ap-leads.');
    expect(parts['text/plain']).toContain('2026-12-03 09:00 UTC (in 3h 20m)');
    expect(parts['text/plain']).toContain('Never arrived <script>alert("x")</script> & more');
    expect(parts['text/html']).toContain('Never arrived &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; more');
    expect(parts['text/html']).not.toContain('<script>');
    expect(parts['text/html']).toContain('<a href="https://interlock.example.com/items/3f2a9c1d7e4b">');
  });

  it('with no public_url the Message-ID takes the From address\'s domain; a public_url with a port gives its host alone', async () => {
    expect(await channelsFor({}, 2_000, null).deliver(emailTo('ana@example.com', 'b1b2b3b4b5b6'), never)).toMatchObject({ ok: true });
    expect(headersOf(mails.at(-1)!.raw)).toMatch(/^Message-ID: <b1b2b3b4b5b6@example\.com>$/m);
    expect(await channelsFor({}, 2_000, 'https://inbox.example.org:8443/interlock').deliver(emailTo('ana@example.com', 'c1c2c3c4c5c6'), never)).toMatchObject({ ok: true });
    const headers = headersOf(mails.at(-1)!.raw);
    expect(headers).toMatch(/^Message-ID: <c1c2c3c4c5c6@inbox\.example\.org>$/m);
    expect(headers).toMatch(/^Auto-Submitted: auto-generated$/m);
  });

  it('sends several emails over the one pooled transport', async () => {
    const channels = channelsFor();
    const before = mails.length;
    const outcomes = await Promise.all(['b1', 'b2', 'b3'].map((id) => channels.deliver(emailTo('bea@example.com', id), never)));
    expect(outcomes.every((outcome) => outcome.ok)).toBe(true);
    expect(mails.length - before).toBe(3);
  });

  it('a wrong password is a final failure (535), not retried', async () => {
    const outcome = await channelsFor({ password: 'wrong' }).deliver(emailTo('ana@example.com'), never);
    expect(outcome).toMatchObject({ ok: false, status: 535, retryable: false, error: expect.stringContaining('smtp 127.0.0.1: EAUTH') });
  });

  it('a refused mailbox (550) is final; a temporary refusal (451) is worth a retry', async () => {
    const channels = channelsFor();
    expect(await channels.deliver(emailTo('nobody@example.com'), never)).toMatchObject({ ok: false, status: 550, retryable: false });
    expect(await channels.deliver(emailTo('later@example.com'), never)).toMatchObject({ ok: false, status: 451, retryable: true });
  });

  it('no SMTP server listening is worth a retry', async () => {
    const closed = createTcpServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    expect(await channelsFor({ port }).deliver(emailTo('ana@example.com'), never)).toMatchObject({ ok: false, status: null, retryable: true });
  });

  it('a server that never greets ends at the timeout, worth a retry', async () => {
    const sockets: Socket[] = [];
    const silent: TcpServer = createTcpServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as AddressInfo).port;
    const started = performance.now();
    const outcome = await channelsFor({ port }, 300).deliver(emailTo('ana@example.com'), never);
    expect(outcome).toMatchObject({ ok: false, status: null, retryable: true });
    expect(performance.now() - started).toBeLessThan(1_500);
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  });

  it('with no SMTP configured, an email is a final failure', async () => {
    const channels = createChannels({ publicUrl: null, reminderAtShare: null, smtp: null, people: {}, groups: {}, agents: {}, callbackAllowPrivate: [] });
    expect(await channels.deliver(emailTo('ana@example.com'), never)).toEqual({ ok: false, status: null, error: 'email needs notifications.smtp, which is not configured', retryable: false });
  });
});
