import { ERROR_CODES } from '../../shared/codes.ts';
import { MESSAGE_ID_HEADER, SIGNATURE_HEADER } from '../outbox/signing.ts';

// What the published document says beyond the route schemas: where the server is, the one
// shape of every error, the Retry-After header of the answers that carry it, the agents'
// callback, and patterns every regular-expression engine a code generator targets can compile.

type Json = Record<string, unknown>;
type Document = { paths?: Record<string, unknown>; components?: object };

/** The header a 429, a 202 and a 503 may carry, as the document declares it once. */
export const RETRY_AFTER_HEADER = 'Retry-After';

const RETRY_AFTER: Record<string, { name: string; required: boolean; description: string }> = {
  '202': {
    name: 'RetryAfterQueued',
    required: false,
    description: 'whole seconds until asking again is worth it: sent while the request waits its turn to reach Stripe, from its place in the queue',
  },
  '429': {
    name: 'RetryAfter',
    required: true,
    description: 'whole seconds (at least 1) to wait before sending the same call again; nothing was written',
  },
  '503': {
    name: 'RetryAfterUnavailable',
    required: false,
    description: "whole seconds to wait before trying again: sent when the journal's database could not be reached or was held past the wait; absent when the journal failed an integrity check",
  },
};

/**
 * Patterns the server checks with JavaScript's Unicode property escapes, and what the document
 * publishes instead (null: no pattern; the description says the rule). The server keeps its own
 * check, so it refuses what it always did.
 */
const PORTABLE_PATTERNS: Readonly<Record<string, string | null>> = {
  // Well-formed text (no lone surrogate): an engine reading UTF-8 or code points cannot even hold
  // a lone surrogate, and no portable pattern says it for engines reading UTF-16.
  '^\\P{Cs}*$': null,
};

/** Every error answer's shape, whatever its codes: the one error type of a generated client. */
const ERROR_SCHEMA = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: {
        code: { type: 'string', enum: Object.keys(ERROR_CODES), description: 'stable; each answer lists the codes its route answers under its status' },
        message: { type: 'string', description: 'for a person; never exception text' },
      },
    },
  },
  description: 'every error answer: {"error":{"code","message"}}',
};

/**
 * Every JSON error answer also refers to the `Error` component (`allOf`): it keeps its own list of
 * codes, and a generator gets one error type for all of them.
 */
export function withErrorComponent<T extends Document>(document: T): T {
  const paths = mapOperations(document.paths, (operation) => {
    const responses = isRecord(operation.responses) ? operation.responses : {};
    const withError = Object.entries(responses).map(([status, answer]) => {
      const content = isRecord(answer) && isRecord(answer.content) ? answer.content : {};
      const media = content['application/json'];
      const schema = isRecord(media) ? media.schema : undefined;
      if (Number(status) < 400 || !isRecord(answer) || !isRecord(media) || !isRecord(schema) || !isRecord(schema.properties) || !isRecord(schema.properties.error)) {
        return [status, answer];
      }
      const referred = { ...schema, allOf: [{ $ref: '#/components/schemas/Error' }] };
      return [status, { ...answer, content: { ...content, 'application/json': { ...media, schema: referred } } }];
    });
    return { ...operation, responses: Object.fromEntries(withError) };
  });
  const components = isRecord(document.components) ? document.components : {};
  const schemas = { ...(isRecord(components.schemas) ? components.schemas : {}), Error: ERROR_SCHEMA };
  const sorted = Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b)));
  return { ...document, paths, components: { ...components, schemas: sorted } };
}

/** Where the document's operations are served: the configured public URL, else wherever the document came from. */
export function serversOf(publicUrl: string | null): Json[] {
  if (publicUrl === null) return [{ url: '/', description: 'the server this document was read from' }];
  return [{ url: publicUrl.replace(/\/+$/, ''), description: "the config's public_url" }];
}

/** Each 429, 202 and 503 answer with its Retry-After header, declared once under components.headers. */
export function withRetryAfter<T extends Document>(document: T): T {
  const paths = mapOperations(document.paths, (operation) => {
    const responses = isRecord(operation.responses) ? operation.responses : {};
    const withHeaders = Object.fromEntries(
      Object.entries(responses).map(([status, answer]) => {
        const header = RETRY_AFTER[status];
        if (header === undefined || !isRecord(answer)) return [status, answer];
        const headers = { ...(isRecord(answer.headers) ? answer.headers : {}), [RETRY_AFTER_HEADER]: { $ref: `#/components/headers/${header.name}` } };
        return [status, { ...answer, headers }];
      }),
    );
    return { ...operation, responses: withHeaders };
  });
  const headers = Object.fromEntries(
    Object.values(RETRY_AFTER).map(({ name, required, description }) => [name, { description, required, schema: { type: 'integer', minimum: 1 } }]),
  );
  const components = isRecord(document.components) ? document.components : {};
  return { ...document, paths, components: { ...components, headers: { ...(isRecord(components.headers) ? components.headers : {}), ...headers } } };
}

/** The callback an agent with a `callback_url` is sent once its request is final, on the operation that asks for the refund. */
export function withRefundCallback<T extends Document>(document: T, operationId: string): T {
  const callback = {
    // The URL is configured per agent, never taken from a request: no runtime expression names it.
    callback_url: {
      post: {
        summary: 'the refund answer, once final, to the agent’s callback_url',
        description:
          "Sent to the callback_url of the agent's entry in interlock.yaml when its request becomes final, " +
          'and again when Stripe reports a sent refund failed. The body is the answer GET /v1/refunds/{request_id} gives. Attempted until 24 h after the first attempt; ' +
          'a 2xx answer is delivered, 408, 429 and 5xx are tried again, a redirect is not followed.',
        operationId: 'refundCallback',
        security: [],
        parameters: [
          {
            name: MESSAGE_ID_HEADER,
            in: 'header',
            required: true,
            description: 'the same on every attempt of one message: drop a repeat',
            schema: { type: 'string' },
          },
          {
            name: SIGNATURE_HEADER,
            in: 'header',
            required: true,
            description:
              't=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>"> keyed with the agent\'s callback secret, as Stripe signs its webhooks; several v1 while a secret is rotated. Check it over the raw body, within 300 s',
            schema: { type: 'string', pattern: '^t=[0-9]+(,v1=[0-9a-f]{64})+$' },
          },
        ],
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/RefundAnswer' } } } },
        responses: {
          '2XX': { description: 'delivered' },
          '4XX': { description: 'not delivered, and not tried again; 408 and 429 are tried again' },
          '5XX': { description: 'not delivered: tried again later' },
        },
      },
    },
  };
  const paths = mapOperations(document.paths, (operation) => (operation.operationId === operationId ? { ...operation, callbacks: { refundFinal: callback } } : operation));
  return { ...document, paths };
}

/** The document with every pattern a portable engine cannot compile replaced as PORTABLE_PATTERNS says. */
export function withPortablePatterns<T>(document: T): T {
  // The document is JSON: changed on a copy written and read back.
  const copy: T = JSON.parse(JSON.stringify(document));
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(visit);
    if (!isRecord(value)) return;
    Object.values(value).forEach(visit);
    if (typeof value.pattern !== 'string' || !Object.hasOwn(PORTABLE_PATTERNS, value.pattern)) return;
    const portable = PORTABLE_PATTERNS[value.pattern];
    if (typeof portable === 'string') value.pattern = portable;
    else {
      delete value.pattern;
      value.description = `${typeof value.description === 'string' ? `${value.description}; ` : ''}no lone UTF-16 surrogate (the server checks it)`;
    }
  };
  visit(copy);
  return copy;
}

function mapOperations(paths: Record<string, unknown> | undefined, change: (operation: Json) => Json): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(paths ?? {}).map(([path, item]) => {
      if (!isRecord(item)) return [path, item];
      return [path, Object.fromEntries(Object.entries(item).map(([method, operation]) => [method, isRecord(operation) ? change(operation) : operation]))];
    }),
  );
}

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
