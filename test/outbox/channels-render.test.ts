import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { emailMessageId, messageIdDomain } from '../../server/outbox/email.ts';
import { DIGEST_LINES_MAX, describeMessage, escapeSlack, renderEmail, renderSlack, renderWebhook } from '../../server/outbox/render.ts';
import type { DigestItem, MessageContent, MessageEvent } from '../../server/outbox/types.ts';
import { formatAmount, formatDeadline, formatSpan } from '../../server/outbox/wording.ts';

const NOW_MS = Date.UTC(2026, 11, 3, 5, 40);
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** What an escalation's message says, as the planner journals it; `overrides` change any field. */
function buildContent(overrides: Partial<MessageContent> = {}): MessageContent {
  return {
    event: 'escalated',
    effect_id: '3f2a9c1d7e4b',
    request_id: 'case-4471',
    agent: 'support-bot',
    amount: 8_000,
    currency: 'usd',
    why: 'over $50.00',
    reason: 'Parcel never arrived',
    group: 'ap-leads',
    level: 0,
    due_ms: NOW_MS + 3 * HOUR + 20 * MINUTE,
    link: 'https://interlock.example.com/items/3f2a9c1d7e4b',
    ...overrides,
  };
}

const HOSTILE = 'hi <!channel> <!here> <@U123> <https://evil.example|click> & <script>alert(1)</script>';

describe('amounts and deadlines', () => {
  it.each([
    [8_000, 'usd', '$80.00'],
    [1_250, 'eur', '€12.50'],
    [8_000, 'jpy', '¥8,000'],
    [1_234_567, 'gbp', '£12,345.67'],
    [1_500, 'kwd', 'KWD 1.500'],
    [999, 'cad', 'CA$9.99'],
    [8_000, null, '80.00 (currency not recorded)'],
  ])('%i in %s reads %s', (minor, currency, expected) => {
    expect(formatAmount(minor, currency).replace(/\u00a0/g, ' ')).toBe(expected);
  });

  it.each([
    [3 * HOUR + 20 * MINUTE, '3h 20m'],
    [2 * HOUR, '2h'],
    [12 * MINUTE + 59_000, '12m'],
    [26 * HOUR + 5 * MINUTE, '1d 2h'],
    [59_000, 'less than a minute'],
  ])('a span of %i ms reads %s', (ms, expected) => {
    expect(formatSpan(ms)).toBe(expected);
    expect(formatSpan(-ms)).toBe(expected);
  });

  it('gives a deadline in UTC, then how long is left or how long it is overdue', () => {
    expect(formatDeadline(NOW_MS + 3 * HOUR + 20 * MINUTE, NOW_MS)).toBe('2026-12-03 09:00 UTC (in 3h 20m)');
    expect(formatDeadline(NOW_MS - 12 * MINUTE, NOW_MS)).toBe('2026-12-03 05:28 UTC (overdue by 12m)');
  });
});

describe('what a message says', () => {
  it('says what waits, the amount, why it needs a person, the deadline and the link', () => {
    const view = describeMessage(buildContent(), NOW_MS);
    expect(view.subject).toBe('Decision needed: $80.00 refund case-4471');
    expect(view.headline).toBe('A refund of $80.00 waits for a decision in ap-leads.');
    expect(view.facts).toEqual([
      { label: 'Request', value: 'case-4471 (from support-bot)' },
      { label: 'Amount', value: '$80.00' },
      { label: 'Why a person', value: 'over $50.00' },
      { label: "Agent's reason", value: 'Parcel never arrived' },
      { label: 'Deadline', value: '2026-12-03 09:00 UTC (in 3h 20m)' },
    ]);
    expect(view.link).toBe('https://interlock.example.com/items/3f2a9c1d7e4b');
  });

  const HEADLINES: [MessageEvent, Partial<MessageContent>, string][] = [
    ['moved_up', { group: 'finance-manager' }, 'A refund of $80.00 moved up to finance-manager: nobody decided it before the deadline at the level before.'],
    ['reminder', {}, 'Reminder: a refund of $80.00 still waits for a decision in ap-leads.'],
    ['breach', { group: 'finance-manager', due_ms: NOW_MS - 30 * MINUTE }, 'Overdue: a refund of $80.00 missed its deadline at the last level (finance-manager).'],
    ['final', { why: 'the refund was sent to Stripe once' }, 'The refund case-4471 of $80.00 is final: the refund was sent to Stripe once.'],
    ['failed_at_stripe', { why: 'Stripe refused the refund' }, 'The refund case-4471 of $80.00 failed at Stripe: Stripe refused the refund.'],
  ];

  it.each(HEADLINES)('%s: %s', (event, overrides, headline) => {
    expect(describeMessage(buildContent({ event, ...overrides }), NOW_MS).headline).toBe(headline);
  });

  it('a breach shows how long the deadline is past', () => {
    const view = describeMessage(buildContent({ event: 'breach', due_ms: NOW_MS - 90 * MINUTE }), NOW_MS);
    expect(view.facts.find((fact) => fact.label === 'Deadline')?.value).toBe('2026-12-03 04:10 UTC (overdue by 1h 30m)');
  });

  it('a digest lists its items, one line each, and counts those past the cap', () => {
    const item = (i: number): DigestItem => ({
      effect_id: `e${i}`,
      request_id: `case-${i}`,
      amount: 8_000,
      currency: 'jpy',
      why: 'a person must decide',
      due_ms: NOW_MS + HOUR,
      link: `https://interlock.example.com/items/e${i}`,
    });
    const two = describeMessage(buildContent({ event: 'digest', effect_id: null, request_id: null, items: [item(1), item(2)] }), NOW_MS);
    expect(two.headline).toBe('2 refunds wait for a decision in ap-leads.');
    expect(two.lines[0]).toBe('¥8,000 · case-1 · a person must decide · due 2026-12-03 06:40 UTC (in 1h) · https://interlock.example.com/items/e1');
    const many = describeMessage(buildContent({ event: 'digest', items: Array.from({ length: DIGEST_LINES_MAX + 3 }, (_, i) => item(i)) }), NOW_MS);
    expect(many.lines).toHaveLength(DIGEST_LINES_MAX + 1);
    expect(many.lines.at(-1)).toBe('and 3 more in the inbox');
  });

  it('keeps agent text on one line, without control or bidirectional-override characters', () => {
    const view = describeMessage(buildContent({ reason: 'line one\r\nBcc: x@evil.example\u202Egnp.exe' }), NOW_MS);
    expect(view.facts.find((fact) => fact.label === "Agent's reason")?.value).toBe('line one Bcc: x@evil.example gnp.exe');
  });

  it('writes only an http(s) link', () => {
    expect(describeMessage(buildContent({ link: 'javascript:alert(1)' }), NOW_MS).link).toBeNull();
  });
});

describe('each channel escapes what it did not write', () => {
  it('Slack: <!channel>, <@U123>, <url|label> and & in an agent reason stay plain text', () => {
    const { text } = renderSlack(buildContent({ reason: HOSTILE, request_id: 'case-<!everyone>' }), NOW_MS);
    expect(text).toContain("*Agent's reason:* hi &lt;!channel&gt; &lt;!here&gt; &lt;@U123&gt; &lt;https://evil.example|click&gt; &amp; &lt;script&gt;alert(1)&lt;/script&gt;");
    expect(text).toContain('case-&lt;!everyone&gt;');
    // The one link is ours; nothing an agent wrote opens a Slack control sequence.
    expect(text.match(/<[^&]/g)).toEqual(['<h']);
    expect(text).toContain('<https://interlock.example.com/items/3f2a9c1d7e4b|Open it in Interlock>');
  });

  it('Slack escapes only &, < and >, as Slack requires', () => {
    expect(escapeSlack('a & b < c > d "e" \'f\'')).toBe('a &amp; b &lt; c &gt; d "e" \'f\'');
  });

  it('email: the HTML part escapes <script> and every other text; the text part keeps the words', () => {
    const email = renderEmail(buildContent({ reason: HOSTILE, why: 'rule "<b>x</b>"' }), NOW_MS);
    expect(email.html).not.toContain('<script>');
    expect(email.html).toContain('hi &lt;!channel&gt; &lt;!here&gt; &lt;@U123&gt; &lt;https://evil.example|click&gt; &amp; &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(email.html).toContain('rule &quot;&lt;b&gt;x&lt;/b&gt;&quot;');
    expect(email.html).toContain('<a href="https://interlock.example.com/items/3f2a9c1d7e4b">Open it in Interlock</a>');
    expect(email.text).toContain(`Agent's reason: ${HOSTILE}`);
    expect(email.text).toContain('Deadline:       2026-12-03 09:00 UTC (in 3h 20m)');
    expect(email.text).toContain('Open it in Interlock: https://interlock.example.com/items/3f2a9c1d7e4b');
    expect(email.subject).toBe('Decision needed: $80.00 refund case-4471');
  });

  it('webhook: the id, the event and the whole content, for a program', () => {
    const content = buildContent({ reason: HOSTILE });
    expect(renderWebhook('a1b2c3d4e5f6', content)).toEqual({ id: 'a1b2c3d4e5f6', event: 'escalated', content });
  });
});

describe("the notifications page's samples", () => {
  const section = readFileSync(new URL('../../docs/operators/notifications.md', import.meta.url), 'utf8');
  const block = (language: string) => new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``).exec(section)?.[1] ?? '';
  const sample = buildContent({ reason: 'Parcel never arrived', link: 'https://interlock.example.com/items/3f2a9c1d7e4b' });

  it('the email is what renderEmail writes', () => {
    const [headers = '', ...body] = block('text').split('\n\n');
    const email = renderEmail(sample, NOW_MS);
    expect(headers.split('\n')[0]).toBe(`Subject: ${email.subject}`);
    const id = /^Interlock-Message-ID: (\S+)$/m.exec(headers)?.[1] ?? '';
    expect(headers).toContain(`\nMessage-ID: ${emailMessageId(id, messageIdDomain(new URL(sample.link!).origin, 'interlock@example.com'))}\n`);
    expect(headers).toMatch(/^Auto-Submitted: auto-generated$/m);
    expect(body.join('\n\n')).toBe(email.text);
  });

  it('the Slack message is what renderSlack writes', () => {
    expect(JSON.parse(block('json'))).toEqual(renderSlack({ ...sample, reason: 'Parcel never arrived <!channel>' }, NOW_MS));
  });
});
