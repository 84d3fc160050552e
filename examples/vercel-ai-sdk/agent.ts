import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createMCPClient } from '@ai-sdk/mcp';
import { Experimental_StdioMCPTransport as StdioMCPTransport } from '@ai-sdk/mcp/mcp-stdio';
import { generateText, stepCountIs } from 'ai';
import { type ScriptedRefund, scriptedRefundModel } from './scripted-model.ts';

// A refund agent on the Vercel AI SDK with Interlock's tools through MCP: the SDK's MCP client
// starts Interlock's MCP server on stdio, turns its four tools into AI SDK tools, and
// `generateText` runs the agent loop (model, tool call, tool result, model) with a scripted model.
// It prints what the agent saw: the tool call, the MCP server's words, and the agent's answer.
//
//   INTERLOCK_URL=http://127.0.0.1:3000 INTERLOCK_AGENT_TOKEN=sk_agent_demo_support_bot \
//     npx tsx examples/vercel-ai-sdk/agent.ts --payment-intent pi_… --amount 2000 --request-id case-4471/1
//
// INTERLOCK_MCP_SERVER is the compiled MCP server to start (dist/server/mcp.js of this checkout
// unless told, made by `npm run build`).

const usage =
  'usage: agent.ts --payment-intent pi_… --amount <smallest currency unit> --request-id <your decision id> [--currency usd] [--reason "…"]\n' +
  'environment: INTERLOCK_URL (http://127.0.0.1:3000), INTERLOCK_AGENT_TOKEN (required), INTERLOCK_MCP_SERVER (dist/server/mcp.js)';

const { values } = parseArgs({
  options: {
    'payment-intent': { type: 'string' },
    amount: { type: 'string' },
    'request-id': { type: 'string' },
    currency: { type: 'string' },
    reason: { type: 'string' },
  },
});
const amount = Number(values.amount);
const token = process.env.INTERLOCK_AGENT_TOKEN ?? '';
if (values['payment-intent'] === undefined || values['request-id'] === undefined || !Number.isSafeInteger(amount) || token === '') {
  console.error(usage);
  process.exit(2);
}
const refund: ScriptedRefund = { request_id: values['request-id'], payment_intent: values['payment-intent'], amount };
if (values.currency !== undefined) refund.currency = values.currency;
if (values.reason !== undefined) refund.reason = values.reason;

const mcpServer = process.env.INTERLOCK_MCP_SERVER || fileURLToPath(new URL('../../dist/server/mcp.js', import.meta.url));

/** Indent every line of `text` for the printout. */
const indented = (text: string) => text.replace(/^/gm, '  ');

/** The words of an MCP tool result as the SDK hands it back (the server's CallToolResult), and whether it is a tool error. */
function wordsOf(output: unknown): { text: string; isError: boolean } {
  if (typeof output !== 'object' || output === null || !('content' in output) || !Array.isArray(output.content)) {
    return { text: JSON.stringify(output), isError: false };
  }
  const text = output.content.map((part: unknown) => (typeof part === 'object' && part !== null && 'text' in part ? String(part.text) : '')).join('\n');
  return { text, isError: 'isError' in output && output.isError === true };
}

const mcp = await createMCPClient({
  clientName: 'interlock-example-vercel-ai-sdk',
  transport: new StdioMCPTransport({
    command: process.execPath,
    args: [mcpServer],
    env: { INTERLOCK_URL: process.env.INTERLOCK_URL || 'http://127.0.0.1:3000', INTERLOCK_AGENT_TOKEN: token },
  }),
});
try {
  const tools = await mcp.tools();
  console.log(`tools: ${Object.keys(tools).sort().join(', ')}`);
  const result = await generateText({
    model: scriptedRefundModel(refund),
    // What Interlock's MCP server tells every client when it connects: keep request_id, retry with it.
    system: mcp.instructions,
    prompt: `The customer of ${refund.payment_intent} asks for ${refund.amount} back (ticket ${refund.request_id}).`,
    tools,
    stopWhen: stepCountIs(4),
  });
  for (const step of result.steps) {
    for (const call of step.toolCalls) console.log(`agent called ${call.toolName} ${JSON.stringify(call.input)}`);
    for (const toolResult of step.toolResults) {
      const { text, isError } = wordsOf(toolResult.output);
      console.log(`${toolResult.toolName} answered${isError ? ' (tool error)' : ''}:\n${indented(text)}`);
    }
  }
  console.log(`agent said: ${result.text}`);
} finally {
  await mcp.close();
}
