import { invalidRequest } from './errors.ts';
import { sandboxLimits } from './limits.ts';
import type { StripeFailure } from './types.ts';

/** A value decoded from a form body or query string: Stripe's `a[b]=c` and `a[0]=c` nesting. */
export type FormValue = string | FormObject | FormValue[];
/** An object decoded from a form body or query string. */
export interface FormObject {
  [key: string]: FormValue;
}

/** The pairs as they are decoded, before lists become arrays. */
interface FormTree {
  [key: string]: string | FormTree;
}

/** The result of decoding: the parameters, or the 400 a malformed body gets. */
export type FormResult = { ok: true; params: FormObject } | { ok: false; failure: StripeFailure };

/**
 * Decode `application/x-www-form-urlencoded` text (a body or a query string) the way Stripe reads
 * it: `metadata[effect_id]=x` nests, `expand[0]=a` and `expand[]=a` make arrays, `+` is a space.
 */
export function parseForm(text: string): FormResult {
  const root: FormTree = {};
  const pairs = text.split('&').filter((pair) => pair !== '');
  if (pairs.length > sandboxLimits.formPairsMax) {
    return fail(`A request may carry at most ${sandboxLimits.formPairsMax} parameters.`);
  }
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    const rawKey = eq === -1 ? pair : pair.slice(0, eq);
    const rawValue = eq === -1 ? '' : pair.slice(eq + 1);
    const key = decode(rawKey);
    const value = decode(rawValue);
    if (key === null || value === null) return fail('The request body is not valid form encoding.');
    const path = splitKey(key);
    if (path === null) return fail(`Invalid parameter name: '${key}'.`);
    if (!assign(root, path, value)) return fail(`Conflicting values for parameter '${key}'.`);
  }
  return { ok: true, params: listsInside(root) };
}

/**
 * A canonical text of parameters (keys sorted at every level), so that the same request sent
 * with its pairs in another order has the same fingerprint.
 */
export function canonicalParams(value: FormValue): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalParams).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalParams(value[k]!)}`).join(',')}}`;
}

function fail(message: string): FormResult {
  return { ok: false, failure: invalidRequest('parameter_unknown', message) };
}

function decode(text: string): string | null {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return null;
  }
}

/** `a[b][]` → ['a', 'b', '']; null when malformed, too deep or touching Object.prototype. */
function splitKey(key: string): string[] | null {
  const match = /^([^[\]]+)((?:\[[^[\]]*\])*)$/.exec(key);
  if (!match) return null;
  const path = [match[1]!];
  const rest = match[2] ?? '';
  for (const part of rest.matchAll(/\[([^[\]]*)\]/g)) path.push(part[1]!);
  if (path.length > sandboxLimits.formDepthMax) return null;
  if (path.some((segment) => segment === '__proto__' || segment === 'constructor' || segment === 'prototype')) {
    return null;
  }
  return path;
}

/** Set `value` at `path`; false when the path runs through a string already set (a conflict). */
function assign(root: FormTree, path: string[], value: string): boolean {
  let node: FormTree = root;
  for (let i = 0; i < path.length; i += 1) {
    const isLast = i === path.length - 1;
    // An empty segment (`a[]`) appends: it takes the next free numeric index.
    const segment = path[i] === '' ? String(Object.keys(node).length) : path[i]!;
    if (isLast) {
      if (typeof node[segment] === 'object') return false;
      node[segment] = value;
      return true;
    }
    const next = node[segment];
    if (typeof next === 'string') return false;
    if (next === undefined) {
      const child: FormTree = {};
      node[segment] = child;
      node = child;
    } else {
      node = next;
    }
  }
  return true;
}

/** Objects whose keys are exactly 0..n-1 become arrays, as qs decodes `a[0]=x&a[1]=y`. */
function toArrays(value: string | FormTree): FormValue {
  if (typeof value === 'string') return value;
  const converted = listsInside(value);
  const keys = Object.keys(converted);
  const isList = keys.length > 0 && keys.every((key, i) => key === String(i));
  return isList ? keys.map((key) => converted[key]!) : converted;
}

/** An object with the lists inside it made arrays; the object itself stays one (the parameters are named). */
function listsInside(tree: FormTree): FormObject {
  const converted: FormObject = {};
  for (const key of Object.keys(tree)) converted[key] = toArrays(tree[key]!);
  return converted;
}
