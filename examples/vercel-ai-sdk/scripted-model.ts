import { MockLanguageModelV3 } from 'ai/test';

/**
 * A language model that follows a script instead of a provider, built on the AI SDK's own
 * `MockLanguageModelV3`: its first turn asks for `request_refund` with the arguments given, its
 * second reads the tool result the SDK hands back (the MCP server's words) and answers in text.
 * Replace it with a real provider's model (`openai('gpt-…')`, `anthropic('claude-…')`) and the rest
 * of the agent stays as it is.
 */

/** The refund the scripted model asks for. */
export interface ScriptedRefund {
  request_id: string;
  payment_intent: string;
  amount: number;
  currency?: string;
  reason?: string;
}

/** What the SDK asks a model with: the prompt so far, tool results included. */
type CallOptions = Parameters<MockLanguageModelV3['doGenerate']>[0];
/** One turn of a model: text, or tool calls. */
type GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;

const usage = {
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 },
};

/** The last tool result in the prompt the SDK sends the model, as the model reads it; null before any tool ran. */
export function lastToolResult(prompt: CallOptions['prompt']): string | null {
  for (const message of [...prompt].reverse()) {
    if (message.role !== 'tool') continue;
    for (const part of message.content) {
      if (part.type !== 'tool-result') continue;
      const { output } = part;
      // An MCP tool's result reaches the model as its content parts, a tool error's too (its text leads with the code).
      if (output.type === 'content') return output.value.map((item) => (item.type === 'text' ? item.text : '')).join('\n');
      if (output.type === 'text' || output.type === 'error-text') return output.value;
      return JSON.stringify(output);
    }
  }
  return null;
}

/**
 * What the agent tells the customer, from the first words of the tool result (the headline and
 * status the MCP server opens with, or an error's code): a real model reads the same words.
 */
export function replyTo(toolResult: string): string {
  const [headline = ''] = toolResult.split('\n');
  if (/^Sent( \(found at Stripe\))? \(/.test(headline)) return `Your refund has been sent. (${headline})`;
  if (headline.startsWith('Already sent; nothing was sent twice')) return `That refund was already sent; nothing was sent twice. (${headline})`;
  if (headline.startsWith('Waiting for a person')) return `A person must approve this refund; I will tell you once they decide. (${headline})`;
  if (headline.startsWith('Waiting its turn to reach Stripe')) return `Your refund is on its way to the payment processor. (${headline})`;
  if (headline.startsWith('Refused') || headline.startsWith('Rejected')) return `I could not refund this. (${headline})`;
  return `I could not finish the refund yet. (${headline})`;
}

function toolCallTurn(refund: ScriptedRefund): GenerateResult {
  return {
    content: [{ type: 'tool-call', toolCallId: 'call-1', toolName: 'request_refund', input: JSON.stringify(refund) }],
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    usage,
    warnings: [],
  };
}

function textTurn(text: string): GenerateResult {
  return { content: [{ type: 'text', text }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };
}

/** The scripted model: one call of request_refund with `refund`, then an answer in words from what the tool said. */
export function scriptedRefundModel(refund: ScriptedRefund): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    provider: 'scripted',
    modelId: 'refund-agent',
    doGenerate: async ({ prompt }) => {
      const seen = lastToolResult(prompt);
      return seen === null ? toolCallTurn(refund) : textTurn(replyTo(seen));
    },
  });
}
