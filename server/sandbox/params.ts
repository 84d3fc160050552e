import { invalidRequest } from './errors.ts';
import type { FormObject, FormValue } from './form.ts';
import { sandboxLimits } from './limits.ts';
import type { StripeFailure } from './types.ts';

/** A parameter read from a request, or the 400 it earns. */
export type Read<T> = { ok: true; value: T } | { ok: false; failure: StripeFailure };

const ok = <T>(value: T): Read<T> => ({ ok: true, value });
const refuse = <T>(failure: StripeFailure): Read<T> => ({ ok: false, failure });

/** True for a value that has fields to read: a JSON object as a control route or a test gives it. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** True for a whole number from `min` to `max`. */
export function isWholeNumber(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}

/** Stripe refuses parameters an endpoint does not know; so does the sandbox, to catch typos early. */
export function rejectUnknown(params: FormObject, allowed: readonly string[]): StripeFailure | null {
  const unknown = Object.keys(params).find((name) => !allowed.includes(name));
  if (unknown === undefined) return null;
  return invalidRequest('parameter_unknown', `Received unknown parameter: ${unknown}`, unknown);
}

/** An optional plain string; an empty one counts as absent. */
export function readString(params: FormObject, name: string): Read<string | null> {
  const value = params[name];
  if (value === undefined || value === '') return ok(null);
  if (typeof value !== 'string') return refuse(invalidRequest(null, `Invalid string: ${name} must be a string.`, name));
  return ok(value);
}

/** A required plain string. */
export function readRequiredString(params: FormObject, name: string): Read<string> {
  const read = readString(params, name);
  if (!read.ok) return read;
  if (read.value === null) return refuse(invalidRequest('parameter_missing', `Missing required param: ${name}.`, name));
  return ok(read.value);
}

/** An optional amount in cents: a whole number from 1 to Stripe's ceiling. */
export function readAmountCents(params: FormObject, name: string): Read<number | null> {
  const value = params[name];
  if (value === undefined) return ok(null);
  if (typeof value !== 'string' || !/^-?\d+$/.test(value.trim())) {
    return refuse(invalidRequest('parameter_invalid_integer', `Invalid integer: ${String(value)}`, name));
  }
  const amountCents = Number(value.trim());
  if (amountCents < 1) {
    return refuse(invalidRequest('parameter_invalid_integer', 'This value must be greater than or equal to 1.', name));
  }
  if (amountCents > sandboxLimits.amountCentsMax) {
    return refuse(
      invalidRequest(
        'parameter_invalid_integer',
        `This value must be less than or equal to ${sandboxLimits.amountCentsMax}.`,
        name,
      ),
    );
  }
  return ok(amountCents);
}

/** An optional boolean sent as `true` or `false`. */
export function readBoolean(params: FormObject, name: string): Read<boolean> {
  const value = params[name];
  if (value === undefined || value === 'false') return ok(false);
  if (value === 'true') return ok(true);
  return refuse(invalidRequest(null, `Invalid boolean: ${String(value)}`, name));
}

/** An optional value from a closed list. */
export function readEnum<T extends string>(params: FormObject, name: string, allowed: readonly T[]): Read<T | null> {
  const read = readString(params, name);
  if (!read.ok) return read;
  if (read.value === null) return ok(null);
  const found = allowed.find((member) => member === read.value);
  if (found === undefined) {
    return refuse(invalidRequest(null, `Invalid ${name}: must be one of ${allowed.join(', ')}`, name));
  }
  return ok(found);
}

/** `metadata[k]=v` pairs within Stripe's limits; `metadata=` (empty) means none. */
export function readMetadata(params: FormObject): Read<Record<string, string>> {
  const value: FormValue | undefined = params['metadata'];
  if (value === undefined || value === '') return ok({});
  if (typeof value === 'string' || Array.isArray(value)) {
    return refuse(invalidRequest(null, 'Invalid object: metadata must be a hash of keys to strings.', 'metadata'));
  }
  const entries = Object.entries(value);
  if (entries.length > sandboxLimits.metadataKeysMax) {
    return refuse(
      invalidRequest(null, `You can have at most ${sandboxLimits.metadataKeysMax} keys in metadata.`, 'metadata'),
    );
  }
  const metadata: Record<string, string> = {};
  for (const [key, item] of entries) {
    const param = `metadata[${key}]`;
    if (typeof item !== 'string') return refuse(invalidRequest(null, `Invalid string: ${param}`, param));
    if (key.length > sandboxLimits.metadataKeyCharsMax) {
      return refuse(
        invalidRequest(null, `Metadata keys can have at most ${sandboxLimits.metadataKeyCharsMax} characters.`, param),
      );
    }
    if (item.length > sandboxLimits.metadataValueCharsMax) {
      return refuse(
        invalidRequest(
          null,
          `Metadata values can have at most ${sandboxLimits.metadataValueCharsMax} characters.`,
          param,
        ),
      );
    }
    // An empty value unsets a key in Stripe, so on creation it is simply not stored.
    if (item !== '') metadata[key] = item;
  }
  return ok(metadata);
}

/** A list's `limit`: 1 to 100, 10 when absent. */
export function readListLimit(params: FormObject): Read<number> {
  const value = params['limit'];
  if (value === undefined) return ok(sandboxLimits.listLimitDefault);
  const limit = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isInteger(limit) || limit < 1 || limit > sandboxLimits.listLimitMax) {
    return refuse(
      invalidRequest(
        'parameter_invalid_integer',
        `This value must be between 1 and ${sandboxLimits.listLimitMax}.`,
        'limit',
      ),
    );
  }
  return ok(limit);
}
