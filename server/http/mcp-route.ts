import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { Type } from 'typebox';
import { responses } from '../../shared/schemas.ts';
import { inProcessClient } from '../agents/in-process-client.ts';
import type { Services } from '../app/services.ts';
import { createMcpServer } from '../mcp/tools.ts';
import { declarePublic } from './access-guard.ts';
import type { AgentGuard } from './agent-guard.ts';
import { agentCallOf } from './agent-routes.ts';
import { AppError } from './errors.ts';
import type { OverloadState } from './overload.ts';
import { REQUEST_ID_HEADER } from './request-ids.ts';

/** Where hosted agents reach Interlock's MCP tools over Streamable HTTP. */
export const MCP_PATH = '/mcp';

/** A JSON-RPC message (or a batch of them) as an MCP client posts it; the SDK reads the rest. */
const JsonRpcMessage = Type.Object({ jsonrpc: Type.Literal('2.0') }, { additionalProperties: true, description: 'a JSON-RPC 2.0 message of the MCP protocol' });
const McpBody = Type.Union([JsonRpcMessage, Type.Array(JsonRpcMessage, { minItems: 1 })], { description: 'one JSON-RPC message, or a batch' });

/** The answer of the SDK's transport: JSON-RPC, as JSON or as one server-sent event stream that ends with the answer. */
const McpAnswer = Type.Unsafe<string>({
  description: 'the JSON-RPC answer: application/json, or text/event-stream (progress notifications, then the answer) as the Accept header allows',
  content: { 'application/json': { schema: Type.Object({}, { additionalProperties: true }) }, 'text/event-stream': { schema: Type.String() } },
});

/** What a GET or DELETE is told: no session is kept, so there is no stream to open and none to end. */
const POST_ONLY = 'this MCP endpoint keeps no session: send each JSON-RPC message with POST';

/** The headers every API answer carries that would come from onSend hooks, which a hijacked reply skips. */
function setApiHeaders(request: FastifyRequest, reply: FastifyReply): void {
  reply.raw.setHeader(REQUEST_ID_HEADER, request.id);
  reply.raw.setHeader('content-security-policy', "default-src 'none'; frame-ancestors 'none'");
  reply.raw.setHeader('cache-control', 'no-store');
}

/**
 * `POST /mcp`: the MCP tools of `npm run mcp` (server/mcp/tools.ts), over Streamable HTTP for hosted
 * agents, with the same names, descriptions and words, over the agents' use cases in this process.
 * Stateless: each request gets a server and a transport of its own, so any server answers any
 * request. The agent's bearer token is checked, and its rates taken, before the SDK sees anything;
 * without a valid token the answer is 401 with `WWW-Authenticate: Bearer`. Helmet's headers, the
 * request id and the load shedding apply first, as on every agent's call; then the reply is handed
 * to the SDK's transport.
 */
export async function mcpRoute(scope: FastifyInstance, opts: { services: Services; guard: AgentGuard; overload: OverloadState }): Promise<void> {
  const { services, guard, overload } = opts;
  declarePublic(scope, "an agent's MCP endpoint: its bearer token is checked before the protocol is read");
  const agents = { tags: ['agents'], security: [{ agentToken: [] }] };
  const checkAgent = async (request: FastifyRequest, reply: FastifyReply) => {
    try {
      guard(request);
    } catch (error) {
      if (error instanceof AppError && error.code === 'unauthorized') reply.header('www-authenticate', 'Bearer');
      throw error;
    }
  };
  scope.post(
    MCP_PATH,
    {
      onRequest: checkAgent,
      schema: {
        ...agents,
        operationId: 'callMcp',
        summary: "MCP over Streamable HTTP: Interlock's four tools for hosted agents",
        description:
          'The tools request_refund, get_refund, wait_for_decision and verify_receipt, as the stdio server has them (docs/agents/mcp.md). ' +
          'Stateless: no Mcp-Session-Id, every request stands alone. Send Accept: application/json, text/event-stream. ' +
          'Without a valid agent token: 401 with WWW-Authenticate: Bearer.',
        body: McpBody,
        response: responses({ 200: McpAnswer }, [
          'validation_failed',
          'unauthorized',
          'payload_too_large',
          'unsupported_media_type',
          'rate_limited',
          'internal_error',
          'journal_unavailable',
        ]),
      },
    },
    async (request, reply) => {
      const call = agentCallOf(request);
      // A refund asked over MCP holds a place among the refund requests in flight, as POST /v1/refunds does.
      const whileRefunding = <T>(refund: () => Promise<T>) => overload.whileRefunding(call.agent.name, refund);
      const server = createMcpServer(inProcessClient(services, call, { whileRefunding }), (message) => request.log.error(message));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      setApiHeaders(request, reply);
      reply.hijack();
      reply.raw.once('close', () => {
        void transport.close();
        void server.close();
      });
      try {
        await server.connect(transport);
        await transport.handleRequest(request.raw, reply.raw, request.body);
      } catch (error) {
        request.log.error({ err: error }, 'the MCP transport failed');
        if (!reply.raw.headersSent) {
          reply.raw.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
          reply.raw.end(JSON.stringify({ error: { code: 'internal_error', message: 'something went wrong on our side; nothing was changed by this answer' } }));
        }
      }
    },
  );
  const notAllowed = { ...agents, summary: 'not offered: the MCP endpoint keeps no session (405, Allow: POST)', response: responses({}, ['method_not_allowed']) };
  const refuse = async (_request: FastifyRequest, reply: FastifyReply) => {
    reply.header('allow', 'POST');
    throw new AppError('method_not_allowed', POST_ONLY);
  };
  scope.get(MCP_PATH, { schema: { ...notAllowed, operationId: 'openMcpStream' } }, refuse);
  scope.delete(MCP_PATH, { schema: { ...notAllowed, operationId: 'endMcpSession' } }, refuse);
}
