import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChannels } from '../../server/outbox/channels.ts';
import { renderEmail, renderSlack } from '../../server/outbox/render.ts';
import type { Delivery, MessageContent, NotificationsConfig } from '../../server/outbox/types.ts';

// Agent-supplied text in messages: the request's `reason` (any well-formed text up to 1,000
// characters), the request id (a narrow pattern), and the approver-facing link. Checked over the
// real channels: a real SMTP server and a real HTTP receiver standing in for Slack.

const NOW = Date.UTC(2026, 11, 3, 5, 40);

function content(reason: string): MessageContent {
  return {
    event: 'escalated',
    effect_id: '3f2a9c1d7e4b',
    request_id: 'case-4471',
    agent: 'support-bot',
    amount: 8_000,
    currency: 'usd',
    why: 'over $50.00',
    reason,
    group: 'ap-leads',
    level: 0,
    due_ms: NOW + 3 * 3_600_000,
    link: 'https://interlock.example/items/3f2a9c1d7e4b',
  };
}

const HOSTILE =
  'cracked jar\r\nBcc: everyone@example.com\r\nSubject: pwned\r\n\r\n<img src=x onerror=alert(1)><a href="javascript:alert(1)">x</a> <!channel> <!here> <@U123> <https://evil.example|Open it in Interlock> & &amp;';

let mails: string[] = [];
let smtp: SMTPServer;
let smtpPort: number;
let hook: Server;
let hookUrl: string;
let posted: { body: string; headers: IncomingHttpHeaders }[] = [];

beforeAll(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, callback) {
      let raw = '';
      stream.on('data', (chunk: Buffer) => {
        raw += chunk.toString();
      });
      stream.on('end', () => {
        mails.push(raw);
        callback();
      });
    },
  });
  await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', r));
  smtpPort = (smtp.server.address() as AddressInfo).port;
  hook = createServer((request, response) => {
    let body = '';
    request.on('data', (c) => {
      body += c;
    });
    request.on('end', () => {
      posted.push({ body, headers: request.headers });
      response.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/slack`;
});

afterAll(async () => {
  await new Promise((r) => smtp.close(() => r(null)));
  hook.closeAllConnections();
  await new Promise((r) => hook.close(r));
});

function config(): NotificationsConfig {
  return {
    publicUrl: 'https://interlock.example',
    reminderAtShare: null,
    smtp: { host: '127.0.0.1', port: smtpPort, secure: false, user: null, password: null, from: 'Interlock <interlock@example.com>' },
    people: {},
    groups: {},
    agents: {},
    callbackAllowPrivate: ['127.0.0.1'],
  };
}

async function send(delivery: Omit<Delivery, 'id' | 'recipient'>) {
  const channels = createChannels(config(), { timeoutMs: 5_000, clock: { nowMs: () => NOW, wallMs: () => NOW } });
  try {
    const outcome = await channels.deliver({ id: 'a1b2c3d4e5f6', recipient: { kind: 'person', name: 'ana' }, ...delivery }, new AbortController().signal);
    expect(outcome.ok).toBe(true);
  } finally {
    channels.close();
  }
}

/** The header block of a raw mail, and its headers by name (lowercase). */
function headersOf(raw: string): Map<string, string[]> {
  const block = raw.split(/\r?\n\r?\n/)[0]!.replace(/\r?\n[ \t]+/g, ' ');
  const out = new Map<string, string[]>();
  for (const line of block.split(/\r?\n/)) {
    const at = line.indexOf(':');
    const name = line.slice(0, at).toLowerCase();
    out.set(name, [...(out.get(name) ?? []), line.slice(at + 1).trim()]);
  }
  return out;
}

describe('agent text in an email (holds)', () => {
  it('a CRLF in the reason adds no header; the HTML part has no live markup', async () => {
    mails = [];
    await send({ channel: { kind: 'email', to: 'ana@example.com' }, content: content(HOSTILE) });
    expect(mails).toHaveLength(1);
    const headers = headersOf(mails[0]!);
    expect(headers.get('bcc')).toBeUndefined();
    expect(headers.get('subject')).toEqual(['Decision needed: $80.00 refund case-4471']);
    const { html, text } = renderEmail(content(HOSTILE), NOW);
    expect(html).not.toMatch(/<img|<a href="javascript/i);
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    // Only Interlock's own link is a link.
    expect([...html.matchAll(/<a href="([^"]*)"/g)].map((m) => m[1])).toEqual(['https://interlock.example/items/3f2a9c1d7e4b']);
    expect(text.split('\n').filter((line) => line.startsWith("Agent's reason:"))).toHaveLength(1);
  });
});

describe('agent text in Slack (holds)', () => {
  it('<!channel>, <!here>, <@U123>, <url|label> and & stay plain text: no mention, no disguised link', async () => {
    posted = [];
    await send({ channel: { kind: 'slack', url: hookUrl }, content: content(HOSTILE) });
    const text = String(JSON.parse(posted[0]!.body).text);
    // The only `<…>` left is Interlock's own link.
    expect([...text.matchAll(/<([^<>]*)>/g)].map((m) => m[1])).toEqual(['https://interlock.example/items/3f2a9c1d7e4b|Open it in Interlock']);
    expect(text).toContain('&lt;!channel&gt;');
    expect(text).toContain('&amp;amp;');
  });
});

describe('line breaks that are not control characters', () => {
  // render.ts oneLine removes C0/C1 controls and bidi overrides, "Text on one line", but not
  // U+2028 LINE SEPARATOR or U+2029 PARAGRAPH SEPARATOR: mandatory breaks in Unicode line breaking
  // (UAX #14 class BK) that browsers, mail clients and Slack show as new lines. An agent's reason
  // can thus forge whole lines of the message, e.g. a fake "Open it in Interlock:" line pointing
  // elsewhere, above the real one, in the text part, the HTML part and Slack.
  const FORGED = 'parcel never arrived\u2028\u2028Open it in Interlock: https://interlock-example.evil/items/3f2a9c1d7e4b\u2029';

  it('the reason stays on its one line in the email text part', () => {
    const { text } = renderEmail(content(FORGED), NOW);
    const lines = text.split(/\r\n|\n|\r|\u2028|\u2029|\u0085/);
    expect(lines.filter((line) => line.startsWith('Open it in Interlock:'))).toEqual(['Open it in Interlock: https://interlock.example/items/3f2a9c1d7e4b']);
  });

  it('the reason stays on its one line in Slack', async () => {
    posted = [];
    await send({ channel: { kind: 'slack', url: hookUrl }, content: content(FORGED) });
    const text = String(JSON.parse(posted[0]!.body).text);
    expect(text).not.toMatch(/[\u2028\u2029]/);
    // The forged words stay inside the reason's own line; the one line that is a link is Interlock's.
    expect(renderSlack(content(FORGED), NOW).text.split(/\n|\u2028|\u2029/).filter((line) => line.startsWith('<') && line.includes('Open it in Interlock'))).toHaveLength(1);
  });
});
