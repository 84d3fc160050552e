import { Value } from 'typebox/value';
import type { RefundRequestBody } from '../../shared/api.ts';
import { RefundRequestBodySchema } from '../../shared/schemas.ts';
import { validationError } from '../app/error-answer.ts';

/** A schema node, as far as a refusal's words need it. */
type SchemaNode = { description?: unknown; properties?: Record<string, { description?: unknown }> };

/** A member of a schema node, or undefined. */
function member(node: unknown, key: string): unknown {
  return typeof node === 'object' && node !== null ? Reflect.get(node, key) : undefined;
}

function isSchemaNode(node: unknown): node is SchemaNode {
  return typeof node === 'object' && node !== null;
}

/** The part of the request's schema that judges the value at `instancePath` (`/flags/0` is the flags' items). */
function schemaAt(instancePath: string): SchemaNode | undefined {
  let node: unknown = RefundRequestBodySchema;
  for (const part of instancePath.split('/').slice(1)) node = /^\d+$/.test(part) ? member(node, 'items') : member(member(node, 'properties'), part);
  return isSchemaNode(node) ? node : undefined;
}

/**
 * A refund request checked against the contract's own schema (`RefundRequestBodySchema`), as
 * `POST /v1/refunds` checks its body: nothing coerced, an unknown field refused by name; a refusal
 * is the same 400 validation_failed in the same words (the field and its description).
 */
export function parseRefundBody(value: unknown): RefundRequestBody {
  if (Value.Check(RefundRequestBodySchema, value)) return value;
  // The refusal of an unknown field is reported twice (as a false schema, then by name): by name.
  const first = [...Value.Errors(RefundRequestBodySchema, value)].find((error) => error.keyword !== 'boolean');
  if (first === undefined) throw validationError([], 'body');
  const params: Record<string, unknown> = { ...first.params };
  const named = (key: string) => (Array.isArray(params[key]) ? String(params[key][0]) : undefined);
  if (first.keyword === 'required') {
    throw validationError([{ keyword: 'required', instancePath: first.instancePath, params: { missingProperty: named('requiredProperties') }, parentSchema: schemaAt(first.instancePath) }], 'body');
  }
  if (first.keyword === 'additionalProperties') {
    throw validationError([{ keyword: 'additionalProperties', instancePath: first.instancePath, params: { additionalProperty: named('additionalProperties') } }], 'body');
  }
  throw validationError([{ keyword: first.keyword, instancePath: first.instancePath, params, message: first.message, parentSchema: schemaAt(first.instancePath) }], 'body');
}
