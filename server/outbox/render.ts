import { assertNever } from '../../shared/statuses.ts';
import type { DigestItem, MessageContent, MessageEvent } from './types.ts';
import { formatAmount, formatDeadline } from './wording.ts';

// What a message says, for each channel. One plain-words view of the content is built first
// (what waits, the amount, why it needs a person, the deadline, the link); each channel then
// writes it in its own markup and escapes every text it did not write itself: the agent's
// request id and reason, the stored why, group and agent names.

/** A digest lists at most this many items; the rest are counted, and the inbox shows them all. */
export const DIGEST_LINES_MAX = 20;

/** One labelled line of a message: `Amount: $80.00`. */
interface Fact {
  label: string;
  value: string;
}

/** A message in plain words, before any channel's markup. Every string is unescaped. */
export interface MessageView {
  subject: string;
  headline: string;
  facts: Fact[];
  /** A digest's items, one line each. */
  lines: string[];
  link: string | null;
}

/** An email: subject, text part, HTML part. */
export interface RenderedEmail {
  subject: string;
  text: string;
  html: string;
}

/** A Slack incoming-webhook body: mrkdwn `text`. */
export interface SlackBody {
  text: string;
}

// Control characters would break a line (or a header); bidirectional overrides make text read
// differently from what it is. Neither belongs in a message, whoever wrote it.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const UNSAFE_CHARS = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]+/g;

/** Text on one line, without control or bidirectional-override characters. */
export function oneLine(text: string): string {
  return text.replace(UNSAFE_CHARS, ' ').trim();
}

function amountOf(content: { amount: number | null; currency: string | null }): string {
  return content.amount === null ? 'an amount not recorded' : formatAmount(content.amount, content.currency);
}

/** `case-4471 (from support-bot)`. */
function requestOf(content: MessageContent): string {
  const id = content.request_id === null ? 'a request' : oneLine(content.request_id);
  return content.agent === null ? id : `${id} (from ${oneLine(content.agent)})`;
}

/** ` in ap-leads`, ` to ap-leads`: the group, when the message names one. */
function where(content: MessageContent, preposition = 'in'): string {
  return content.group === null ? '' : ` ${preposition} ${oneLine(content.group)}`;
}

function headlineOf(content: MessageContent, amount: string, count: number): { subject: string; headline: string } {
  const id = content.request_id === null ? '' : ` ${oneLine(content.request_id)}`;
  switch (content.event) {
    case 'escalated':
      return { subject: `Decision needed: ${amount} refund${id}`, headline: `A refund of ${amount} waits for a decision${where(content)}.` };
    case 'moved_up':
      return {
        subject: `Moved up: ${amount} refund${id}`,
        headline: `A refund of ${amount} moved up${where(content, 'to')}: nobody decided it before the deadline at the level before.`,
      };
    case 'reminder':
      return { subject: `Reminder: ${amount} refund${id} waits for a decision`, headline: `Reminder: a refund of ${amount} still waits for a decision${where(content)}.` };
    case 'breach':
      return { subject: `Overdue: ${amount} refund${id}`, headline: `Overdue: a refund of ${amount} missed its deadline at the last level${content.group === null ? '' : ` (${oneLine(content.group)})`}.` };
    case 'digest': {
      const refunds = count === 1 ? '1 refund waits' : `${count} refunds wait`;
      return { subject: `${refunds} for a decision`, headline: `${refunds} for a decision${where(content)}.` };
    }
    case 'final':
      return { subject: `Refund${id} is final`, headline: `The refund${id} of ${amount} is final: ${oneLine(content.why)}.` };
    case 'failed_at_stripe':
      return { subject: `Refund${id} failed at Stripe`, headline: `The refund${id} of ${amount} failed at Stripe: ${oneLine(content.why)}.` };
    default:
      return assertNever(content.event);
  }
}

function digestLine(item: DigestItem, nowMs: number): string {
  const parts = [amountOf(item), oneLine(item.request_id), oneLine(item.why)];
  if (item.due_ms !== null) parts.push(`due ${formatDeadline(item.due_ms, nowMs)}`);
  if (item.link !== null) parts.push(item.link);
  return parts.filter((part) => part !== '').join(' · ');
}

/** The message in plain words, with deadlines relative to `nowMs` (the application clock). */
export function describeMessage(content: MessageContent, nowMs: number): MessageView {
  const items = content.items ?? [];
  const amount = amountOf(content);
  const { subject, headline } = headlineOf(content, amount, items.length);
  const facts: Fact[] = [];
  if (content.event !== 'digest') {
    facts.push({ label: 'Request', value: requestOf(content) }, { label: 'Amount', value: amount });
    const waiting = content.event !== 'final' && content.event !== 'failed_at_stripe';
    if (content.why !== '') facts.push({ label: waiting ? 'Why a person' : 'Status', value: oneLine(content.why) });
    if (content.reason !== null && content.reason !== '') facts.push({ label: "Agent's reason", value: oneLine(content.reason) });
    if (content.due_ms !== null) facts.push({ label: 'Deadline', value: formatDeadline(content.due_ms, nowMs) });
  }
  const lines = items.slice(0, DIGEST_LINES_MAX).map((item) => digestLine(item, nowMs));
  if (items.length > DIGEST_LINES_MAX) lines.push(`and ${items.length - DIGEST_LINES_MAX} more in the inbox`);
  return { subject: oneLine(subject), headline, facts, lines, link: safeLink(content.link) };
}

/** Only an http(s) link is ever written into a message. */
function safeLink(link: string | null): string | null {
  if (link === null) return null;
  try {
    const url = new URL(link);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null;
  } catch {
    return null;
  }
}

/** `&`, `<`, `>`, `"` and `'` as HTML entities: for text and attribute values alike. */
export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

/**
 * Slack's three control characters as entities (api.slack.com "Escaping text"), so `<!channel>`,
 * `<@U123>` or `<https://evil|click>` in an agent's text shows as typed and never notifies or links.
 */
export function escapeSlack(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** An email's subject, text part and HTML part; every text in the HTML part is escaped. */
export function renderEmail(content: MessageContent, nowMs: number): RenderedEmail {
  const view = describeMessage(content, nowMs);
  const width = Math.max(0, ...view.facts.map((fact) => fact.label.length)) + 2;
  const text = [
    view.headline,
    '',
    ...view.facts.map((fact) => `${`${fact.label}:`.padEnd(width)}${fact.value}`),
    ...view.lines.map((line) => `- ${line}`),
    ...(view.link === null ? [] : ['', `Open it in Interlock: ${view.link}`]),
    '',
  ].join('\n');
  const rows = view.facts.map((fact) => `<tr><th align="left" style="padding-right:1em">${escapeHtml(fact.label)}</th><td>${escapeHtml(fact.value)}</td></tr>`);
  const html = [
    '<!doctype html><html><body style="font-family:sans-serif">',
    `<p><strong>${escapeHtml(view.headline)}</strong></p>`,
    rows.length === 0 ? '' : `<table>${rows.join('')}</table>`,
    view.lines.length === 0 ? '' : `<ul>${view.lines.map((line) => `<li>${escapeHtml(line)}</li>`).join('')}</ul>`,
    view.link === null ? '' : `<p><a href="${escapeHtml(view.link)}">Open it in Interlock</a></p>`,
    '</body></html>',
  ].join('');
  return { subject: view.subject, text, html };
}

/** A Slack message in mrkdwn; every text is escaped as Slack requires. */
export function renderSlack(content: MessageContent, nowMs: number): SlackBody {
  const view = describeMessage(content, nowMs);
  const lines = [
    `*${escapeSlack(view.headline)}*`,
    ...view.facts.map((fact) => `*${escapeSlack(fact.label)}:* ${escapeSlack(fact.value)}`),
    ...view.lines.map((line) => `• ${escapeSlack(line)}`),
    // A `|` would end the link's URL early; an href from URL() keeps it only unencoded in the path.
    ...(view.link === null ? [] : [`<${escapeSlack(view.link).replace(/\|/g, '%7C')}|Open it in Interlock>`]),
  ];
  return { text: lines.join('\n') };
}

/** A generic webhook's body: the message id, its event and its whole content, for a program to read. */
export function renderWebhook(id: string, content: MessageContent): { id: string; event: MessageEvent; content: MessageContent } {
  return { id, event: content.event, content };
}
