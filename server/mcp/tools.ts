import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { type InterlockClient, isInterlockClientError, type RefundResult, type WaitProgress } from '@interlock-placeholder/client';
import { limits } from '../../shared/limits.ts';
import { describeAnswer, describeError, describeReport, describeWait } from './words.ts';

/**
 * The MCP tools over the typed client: each checks its input against a schema the model sees,
 * makes one call of the agents' API, and answers in plain words plus the raw answer.
 */

/** Told to the model once, when it connects. */
const INSTRUCTIONS =
  'Interlock stands between you and Stripe refunds. Every refund you ask for carries request_id, your own id for that ' +
  'decision: keep it, and when a call fails or times out, call request_refund again with the same request_id and the ' +
  'same arguments. That retry is safe: the same request_id is the same decision forever, and is never refunded twice. ' +
  'A different refund needs a new request_id.';

const requestId = z
  .string()
  .min(1)
  .max(limits.requestIdCharsMax)
  .regex(/^[A-Za-z0-9._:/-]+$/)
  .describe(
    `Your own id for this refund decision, 1 to ${limits.requestIdCharsMax} characters of A-Z a-z 0-9 . _ : / - ` +
      '(for example the ticket and a counter: "case-4471/1"). Choose it once per decision and reuse it on every retry of that decision.',
  );

/**
 * A tool's arguments: a strict object, so an argument the tool does not take is refused by name
 * before Interlock is asked, never dropped (a model that sends `dry_run: true` expects nothing to
 * happen), as the HTTP API refuses an unknown field; the JSON Schema the tool list publishes says
 * `additionalProperties: false`. An argument is added by adding one line to the tool's shape.
 */
function toolArguments<Shape extends z.ZodRawShape>(tool: string, shape: Shape) {
  const takes = Object.keys(shape).join(', ');
  return z.strictObject(shape, {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `${issue.keys.join(', ')}: unknown argument${issue.keys.length > 1 ? 's' : ''}; ${tool} takes ${takes}. Nothing was sent to Interlock.`
        : undefined,
  });
}

const refundInput = toolArguments('request_refund', {
  request_id: requestId,
  payment_intent: z
    .string()
    .regex(/^pi_[A-Za-z0-9_]+$/)
    .describe('The Stripe payment intent to refund, "pi_..."'),
  amount: z
    .number()
    .int()
    .min(1)
    .max(limits.refundCentsMax)
    .describe(
      "How much to refund, as a whole number in the smallest currency unit (cents for USD, whole yen for JPY) of the payment's own currency: " +
        '2000 is $20.00 on a dollar payment and ¥2,000 on a yen payment. Read the currency from the payment, never assume dollars.',
    ),
  currency: z
    .string()
    .regex(/^[A-Za-z]{3}$/)
    .optional()
    .describe(
      'The payment currency you worked the amount out in, as Stripe writes it ("usd", "jpy"). Interlock refuses the request ' +
        "(currency_mismatch, nothing sent) unless it is the payment's currency, so give it whenever you know it. It is not part of " +
        'the decision: the same request_id with or without it is the same request.',
    ),
  reason: z.string().max(limits.reasonCharsMax).optional().describe('Why, in a sentence an approver reads'),
  flags: z
    .array(z.string().regex(/^[a-z0-9_-]{1,64}$/))
    .max(limits.flagsMax)
    .optional()
    .describe('Labels the policy rules read, e.g. "vip" or "fraud_review" (these always need a person)'),
  context_url: z
    .string()
    .max(limits.contextUrlCharsMax)
    .regex(/^https?:\/\/\S+$/)
    .optional()
    .describe('A link to the ticket or conversation behind the request, shown to the approver'),
  on_behalf_of: z
    .string()
    .max(limits.onBehalfOfCharsMax)
    .regex(/^\S+$/)
    .optional()
    .describe(
      'The person the refund benefits, by their Interlock name or email address, when you know it (an employee refunding ' +
        'their own order, a colleague asking for a refund for themselves). That person may not approve it; Interlock also ' +
        "refuses an approver whose email is the payment's customer email. Part of the decision: the same request_id must carry it again.",
    ),
});

const REQUEST_REFUND =
  'Ask Interlock for a Stripe refund. Interlock decides under its policy: a routine refund is sent at once; others wait ' +
  'for a person (QUEUED, waiting_for "person") or are refused with the reason, what changed, and a repair when there is one. ' +
  'A request may also be QUEUED with waiting_for "stripe": it waits its turn to reach Stripe within its rate limits, no ' +
  'person has it and nothing was sent yet; never tell anyone a person is reviewing it. ' +
  'request_id is your decision id, never generated by this tool: pick one per refund decision and keep it. If this call ' +
  'fails, times out or you are unsure it arrived, call it again with the same request_id and the same arguments: that ' +
  'is what makes a retry safe, because the same request_id is the same decision forever and is never refunded twice. ' +
  'The same request_id with other arguments is refused (conflicting_payload); a different refund needs a new request_id. ' +
  "amount is in the smallest unit of the payment's own currency; give currency too, so that an amount worked out in another " +
  'currency is refused (currency_mismatch) rather than sent.';

/** What the SDK hands a tool besides its arguments: the request's progress token and a way to notify about it. */
type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** A tool result: the words a model acts on, and the raw answer for a program. */
function toolResult(text: string, structured: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent: structured };
}

/** What a refund call answered, in words and raw. */
function refundResult(result: RefundResult, text = describeAnswer(result)): CallToolResult {
  return toolResult(text, { ...result.answer });
}

/** An error as a tool error: its code and message, never a stack. */
function toolError(error: unknown, log: (message: string) => void): CallToolResult {
  if (isInterlockClientError(error)) {
    const structured = 'body' in error ? error.body : { error: { code: error.code, message: error.message } };
    return { isError: true, content: [{ type: 'text', text: describeError(error) }], structuredContent: { ...structured } };
  }
  if (error instanceof TypeError) return { isError: true, content: [{ type: 'text', text: `invalid_arguments: ${error.message}` }] };
  // Anything else is our bug: the stack goes to the log, the model gets the code.
  log(`interlock mcp: tool failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  return { isError: true, content: [{ type: 'text', text: 'internal_error: the tool failed; nothing more is known about the request' }] };
}

/** A receipt given as JSON text or as an object. */
function receiptOf(value: string | Record<string, unknown>): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    throw new TypeError('receipt is not JSON: give the receipt object, or its effect_id instead');
  }
}

/** The MCP server with Interlock's four tools over `client`; `log` writes to stderr, never to the protocol's stdout. */
export function createMcpServer(client: InterlockClient, log: (message: string) => void): McpServer {
  const server = new McpServer({ name: 'interlock', version: '1.0.0' }, { instructions: INSTRUCTIONS });
  const guarded =
    <A>(run: (args: A, extra: ToolExtra) => Promise<CallToolResult>) =>
    async (args: A, extra: ToolExtra) => {
      try {
        return await run(args, extra);
      } catch (error) {
        return toolError(error, log);
      }
    };

  server.registerTool(
    'request_refund',
    { description: REQUEST_REFUND, inputSchema: refundInput, annotations: { idempotentHint: true, destructiveHint: true, openWorldHint: true } },
    guarded(async (args) => refundResult(await client.requestRefund(args))),
  );

  server.registerTool(
    'get_refund',
    {
      description: 'Read the current status of a refund you asked for, by its request_id. Changes nothing, sends nothing.',
      inputSchema: toolArguments('get_refund', { request_id: requestId }),
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    guarded(async ({ request_id }) => refundResult(await client.getRefund(request_id))),
  );

  server.registerTool(
    'wait_for_decision',
    {
      description:
        'Wait until a refund you asked for has a final status (sent, refused, rejected or closed), or until timeout_seconds ' +
        `have passed, and return the status then either way, saying whether it is final. One call waits at most ` +
        `${limits.mcpWaitSecondsMax} s (${limits.mcpWaitSecondsDefault} s unless told); a larger timeout_seconds is taken as ` +
        `${limits.mcpWaitSecondsMax}. When it answers still waiting, call it again with the same request_id: a person may ` +
        'take minutes or hours; a turn to reach Stripe (waiting_for "stripe") usually seconds. Reads Interlock every 1 s, then less often, up to every 30 s; changes nothing.',
      inputSchema: toolArguments('wait_for_decision', {
        request_id: requestId,
        timeout_seconds: z
          .number()
          .int()
          .min(0)
          .default(limits.mcpWaitSecondsDefault)
          .describe(
            `How long to wait, in seconds (default ${limits.mcpWaitSecondsDefault}); one call waits at most ${limits.mcpWaitSecondsMax} s, ` +
              'and a larger value is taken as that',
          ),
      }),
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    guarded(async ({ request_id, timeout_seconds }, extra) => {
      const token = extra._meta?.progressToken;
      // A client that asked for progress hears of each read; a client's default request timeout does not count it as life.
      const onWait =
        token === undefined
          ? undefined
          : ({ polls, waitedMs, last }: WaitProgress) => {
              const status = last?.answer.status ?? 'unknown';
              const message = `still ${status} after ${Math.round(waitedMs / 1000)} s`;
              extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: polls, message } }).catch(() => {});
            };
      // Capped, not refused: a model that asks for longer gets the same "still waiting, call again" it must handle at
      // any timeout, rather than an error that costs it a turn to correct.
      const waitSeconds = Math.min(timeout_seconds, limits.mcpWaitSecondsMax);
      const result = await client.waitForDecision(request_id, { timeoutMs: waitSeconds * 1000, onWait });
      return refundResult(result, describeWait(result, timeout_seconds));
    }),
  );

  server.registerTool(
    'verify_receipt',
    {
      description:
        "Check a refund's signed receipt offline: give its effect_id (from request_refund or get_refund) to fetch it, or the " +
        "receipt itself. It checks the hash chain, the Ed25519 signature against Interlock's published keys, and what the " +
        'entries prove (sent once, under live authority, on facts that held). Says valid or not, and each problem.',
      inputSchema: toolArguments('verify_receipt', {
        effect_id: z
          .string()
          .regex(/^[0-9a-f]{12}$/)
          .optional()
          .describe('The effect id of a refund you asked for: 12 lowercase hex characters'),
        receipt: z
          .union([z.string(), z.record(z.string(), z.unknown())])
          .optional()
          .describe('A receipt {v, effect_id, entries, signature, key_id}, the object or its JSON text'),
      }),
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    guarded(async ({ effect_id, receipt }) => {
      if ((effect_id === undefined) === (receipt === undefined)) throw new TypeError('give either effect_id or receipt, not both and not neither');
      const report = await client.verifyReceipt(receipt === undefined ? await client.getReceipt(effect_id ?? '') : receiptOf(receipt));
      return toolResult(describeReport(report), { ...report });
    }),
  );

  return server;
}
