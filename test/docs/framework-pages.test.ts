import { describe, expect, it } from 'vitest';
import type { RefundAnswer, RequestPayload } from '../../shared/api.ts';
import { ConflictingPayloadError, InterlockError } from '../../shared/client/errors.ts';
import type { Status, WaitingFor } from '../../shared/statuses.ts';
import { WHY } from '../../shared/statuses.ts';
import { describeAnswer, describeError } from '../../server/mcp/words.ts';
import { readPage } from './pages.ts';

/**
 * The framework pages (docs/agents/frameworks/) each show what a model reads at each status: the
 * MCP server's own words, never words written for the page. Every line of each table row is made
 * here by server/mcp/words.ts from an answer of that status and must stand in every page, so a
 * change of the words that leaves a page behind fails.
 */

const PAGES = ['docs/agents/frameworks/vercel-ai-sdk.md', 'docs/agents/frameworks/openai-agents.md', 'docs/agents/frameworks/langgraph.md'];

/** A refund answer of `status` with `why`, as the server words it, for request `…` (as the pages write a request id). */
function answer(status: Status, why: string, more: { refund?: string; waiting_for?: WaitingFor } = {}): RefundAnswer {
  return {
    request_id: '…',
    effect_id: '0123456789ab',
    status,
    why,
    currency: 'usd',
    refund: more.refund ?? null,
    waiting_for: more.waiting_for ?? null,
    changes: [],
    repairs: [],
    receipt: '/v1/receipts/0123456789ab',
    decision: null,
    approvals: null,
  };
}

/** Each status's answer, final or not, as the agent is told it. */
const ANSWERS: { answer: RefundAnswer; final: boolean }[] = [
  { answer: answer('COMMITTED', 'the refund was sent to Stripe once', { refund: 're_…' }), final: true },
  { answer: answer('QUEUED', 'an approver must decide: over $50.00', { waiting_for: 'person' }), final: false },
  { answer: answer('QUEUED', WHY.waiting_turn, { waiting_for: 'stripe' }), final: false },
  { answer: answer('APPROVED', 'an approver approved it; it is being sent'), final: false },
  { answer: answer('IN_FLIGHT', WHY.in_flight), final: false },
  { answer: answer('CLOSED', 'rejected by Ana Lopez: <their reason>; it is never sent'), final: true },
  { answer: answer('AMBIGUOUS', WHY.ambiguous), final: true },
  { answer: answer('DUPLICATE_IGNORED', 'the refund was sent to Stripe once', { refund: 're_…' }), final: true },
];

const payload = (amount: number): RequestPayload => ({ payment_intent: 'pi_…', amount, flags: [] });

/** The tool errors the pages show, with the messages the server sends. */
const ERRORS = [
  new ConflictingPayloadError({
    code: 'conflicting_payload',
    status: 409,
    message: 'request case-4471/1 was already made with another amount; nothing was written or sent (a different refund needs a new request_id)',
    body: {},
    retryAfterMs: null,
    recorded: payload(2000),
    offered: payload(2500),
  }),
  new InterlockError({
    code: 'rate_limited',
    status: 429,
    message: 'agent support-bot sent requests faster than its rate allows; nothing was written, send this one again in 1 s',
    body: {},
    retryAfterMs: 1_000,
  }),
  new InterlockError({ code: 'unauthorized', status: 401, message: 'send Authorization: Bearer <agent token>', body: {}, retryAfterMs: null }),
];

/** A page's text with its request ids as the words of a generic one, `"…"`. */
function pageText(path: string): string {
  return readPage(path).replaceAll('"case-4471/1"', '"…"');
}

describe('the framework pages show the MCP server’s words', () => {
  it.each(PAGES)('%s: every line of each status’s answer, and each tool error, as the server words them', (path) => {
    const text = pageText(path);
    for (const { answer: a, final } of ANSWERS) {
      const lines = describeAnswer({ answer: a, final, httpStatus: final ? 200 : 202, retryAfterMs: null }).split('\n');
      // The last line names the request and its effect: the pages say it once, above the table.
      expect(lines.at(-1)).toBe('Request …, effect 0123456789ab; verify_receipt checks its signed receipt.');
      for (const line of lines.slice(0, -1)) expect(text, `${a.status}: ${line}`).toContain(`\`${line}\``);
    }
    for (const error of ERRORS) {
      for (const line of describeError(error).split('\n')) expect(text, `${error.code}: ${line}`).toContain(`\`${line}\``);
    }
    expect(text).toContain('`Request <request_id>, effect <effect_id>; verify_receipt\nchecks its signed receipt.`');
  });

  it.each(PAGES)('%s: wired through the MCP server, stdio and POST /mcp with a bearer token', (path) => {
    const text = readPage(path);
    expect(text).toContain('dist/server/mcp.js');
    expect(text).toContain('`POST /mcp`');
    expect(text).toMatch(/authorization: `Bearer \$\{process\.env\.INTERLOCK_AGENT_TOKEN\}`/);
  });
});
