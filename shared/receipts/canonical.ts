// RFC 8785 canonical JSON: the bytes every entry hash and receipt signature is taken over. It is
// written here, with no package and no node: module, so the server that seals entries and a
// browser that verifies a receipt share one writer. Every read of the journal re-hashes every
// entry, so the common case is a recursive writer that takes JSON.stringify's own string and
// number forms (half the time of the `canonicalize` package, and the same bytes; a property test
// holds it to the package). What it does not take (nesting deeper than `canonicalDepthMax`, and
// objects that are not plain: a Date, a boxed value, a toJSON method) goes to an iterative writer
// that serialises as the package does, so no depth exhausts the stack.

/** Nesting the recursive writer takes; deeper values go to the iterative one. */
const canonicalDepthMax = 256;

/** Thrown inside the fast writer to hand the whole value to the iterative one. */
const handOver = Symbol('canonical hand-over');

/** A string JSON.stringify writes as itself in quotes: no quote, backslash, control or surrogate. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what JSON escapes.
const needsEscape = /["\\\u0000-\u001f\ud800-\udfff]/;

/** RFC 8785 canonical JSON of a value. Throws for a value with no canonical form (NaN, a lone surrogate, a bigint, a cycle). */
export function canonical(value: unknown): string {
  try {
    const text = writeValue(value, 0);
    if (text === undefined) throw new TypeError('value has no canonical JSON form');
    return text;
  } catch (error) {
    if (error !== handOver) throw error;
  }
  const text = writeIteratively(value);
  if (text === undefined) throw new TypeError('value has no canonical JSON form');
  return text;
}

/** canonical() of an entry without its `hash` member (what an entry's hash covers), written without copying the entry. */
export function canonicalWithoutHash(entry: Readonly<Record<string, unknown>>): string {
  if (Object.getPrototypeOf(entry) === Object.prototype) {
    try {
      return writeObject(entry, 0, 'hash');
    } catch (error) {
      if (error !== handOver) throw error;
    }
  }
  const { hash: _ignored, ...rest } = entry;
  return canonical(rest);
}

/** The canonical text of a value, or undefined for what JSON omits (undefined, a function, a symbol). */
function writeValue(value: unknown, depth: number): string | undefined {
  switch (typeof value) {
    case 'string':
      return writeString(value);
    case 'number':
      return writeNumber(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object':
      if (value === null) return 'null';
      if (Array.isArray(value)) return writeArray(value, depth + 1);
      if (!isPlainObject(value)) throw handOver;
      return writeObject(value, depth + 1, undefined);
    case 'bigint':
      throw new TypeError('a bigint has no canonical JSON form');
    default:
      return undefined;
  }
}

function writeNumber(value: number): string {
  if (!Number.isFinite(value)) throw new TypeError(`${value} has no canonical JSON form`);
  // For a finite number this is the ECMAScript Number::toString that RFC 8785 prescribes.
  return String(value);
}

/** True for an object made by a literal or JSON.parse: its members are all it holds. */
function isPlainObject(value: object): value is Record<string, unknown> {
  return Object.getPrototypeOf(value) === Object.prototype;
}

function writeArray(array: readonly unknown[], depth: number): string {
  if (depth > canonicalDepthMax) throw handOver;
  let text = '[';
  for (let i = 0; i < array.length; i++) {
    if (i > 0) text += ',';
    // As in JSON, an element with no JSON form is written as null.
    text += writeValue(array[i], depth) ?? 'null';
  }
  return `${text}]`;
}

/** Members in UTF-16 code unit order of their keys (what `sort()` does by default), minus `skip`. */
function writeObject(object: Record<string, unknown>, depth: number, skip: string | undefined): string {
  if (depth > canonicalDepthMax) throw handOver;
  const keys = sortKeys(Object.keys(object));
  let text = '{';
  for (const key of keys) {
    if (key === skip) continue;
    const value = object[key];
    const member = writeValue(value, depth);
    if (member === undefined) {
      // A toJSON method changes what JSON writes for the whole object; the iterative writer does that.
      if (key === 'toJSON' && typeof value === 'function') throw handOver;
      // As in JSON, a member with no JSON form is left out.
      continue;
    }
    if (text.length > 1) text += ',';
    text += keyText(key) + member;
  }
  return `${text}}`;
}

/**
 * Sort keys in place by UTF-16 code units, as `sort()` does. An insertion sort: objects have a
 * handful of keys, often already in order, and for those it costs less than the built-in sort.
 */
function sortKeys(keys: string[]): string[] {
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!;
    let j = i - 1;
    while (j >= 0 && keys[j]! > key) {
      keys[j + 1] = keys[j]!;
      j--;
    }
    keys[j + 1] = key;
  }
  return keys;
}

/** Quoted keys with their colon, by key: entries use a few dozen keys, written millions of times. */
const keyTexts = new Map<string, string>();
/** Keys remembered at most; keys beyond them (from agents' requests, say) are quoted each time. */
const keyTextsMax = 4_096;

function keyText(key: string): string {
  let text = keyTexts.get(key);
  if (text === undefined) {
    text = `${writeString(key)}:`;
    if (keyTexts.size < keyTextsMax) keyTexts.set(key, text);
  }
  return text;
}

/** A string as JSON.stringify quotes it; a lone surrogate has no canonical form (RFC 8785 refuses it). */
function writeString(value: string): string {
  if (!needsEscape.test(value)) return `"${value}"`;
  if (!isWellFormed(value)) throw new TypeError('a string with a lone surrogate has no canonical JSON form');
  return JSON.stringify(value);
}

/** A high surrogate with no low one after it, or a low one with no high one before it. */
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** What ES2024's String.prototype.isWellFormed answers (our TypeScript lib is ES2023): no lone surrogate. */
function isWellFormed(value: string): boolean {
  return !loneSurrogate.test(value);
}

/** A container being written by the iterative writer: its members left to write, and the objects to release when done. */
interface Frame {
  container: Record<string, unknown> | unknown[];
  /** Sorted keys of an object; null for an array. */
  keys: string[] | null;
  next: number;
  first: boolean;
  /** The container and any toJSON wrappers around it: on the path now, so met again they are a cycle. */
  held: object[];
}

/** A value resolved for writing: its text (undefined when JSON omits it), or a container to descend into. */
type Resolved = { text: string | undefined } | { frame: Frame };

/**
 * The writer for what the fast one hands over: an explicit stack instead of recursion, so depth
 * is bounded by memory, not by the call stack. toJSON results and boxed primitives are written
 * as JSON.stringify writes them; a cycle has no canonical form.
 */
function writeIteratively(value: unknown): string | undefined {
  const path = new Set<object>();
  const root = resolve(value, path);
  if ('text' in root) return root.text;
  const stack: Frame[] = [root.frame];
  let text = root.frame.keys === null ? '[' : '{';
  while (stack.length > 0) {
    const frame = stack.at(-1)!;
    const child = nextMember(frame, path);
    if (child === null) {
      text += frame.keys === null ? ']' : '}';
      for (const held of frame.held) path.delete(held);
      stack.pop();
      continue;
    }
    text += child.prefix;
    if ('text' in child.resolved) text += child.resolved.text;
    else {
      text += child.resolved.frame.keys === null ? '[' : '{';
      stack.push(child.resolved.frame);
    }
  }
  return text;
}

/** The next member of a container to write, with the comma and key before it; null when the container is done. */
function nextMember(frame: Frame, path: Set<object>): { prefix: string; resolved: Resolved } | null {
  const { container, keys } = frame;
  if (keys === null) {
    const array = container as unknown[];
    if (frame.next >= array.length) return null;
    const i = frame.next++;
    const resolved = resolve(array[i], path);
    // As in JSON, an element with no JSON form is written as null.
    return { prefix: i > 0 ? ',' : '', resolved: 'text' in resolved && resolved.text === undefined ? { text: 'null' } : resolved };
  }
  const object = container as Record<string, unknown>;
  while (frame.next < keys.length) {
    const key = keys[frame.next++]!;
    const resolved = resolve(object[key], path);
    // As in JSON, a member with no JSON form is left out.
    if ('text' in resolved && resolved.text === undefined) continue;
    const prefix = `${frame.first ? '' : ','}${writeString(key)}:`;
    frame.first = false;
    return { prefix, resolved };
  }
  return null;
}

/** What JSON.stringify would write a value as: toJSON applied, boxed primitives unboxed, containers opened. */
function resolve(value: unknown, path: Set<object>): Resolved {
  const held: object[] = [];
  let current = value;
  while (typeof current === 'object' && current !== null && typeof (current as { toJSON?: unknown }).toJSON === 'function') {
    hold(current, path, held);
    current = (current as { toJSON: () => unknown }).toJSON();
  }
  if (current instanceof Number || current instanceof String || current instanceof Boolean) current = current.valueOf();
  if (typeof current !== 'object' || current === null) {
    for (const object of held) path.delete(object);
    return { text: writePrimitive(current) };
  }
  hold(current, path, held);
  const keys = Array.isArray(current) ? null : Object.keys(current).sort();
  return { frame: { container: current as Frame['container'], keys, next: 0, first: true, held } };
}

function hold(object: object, path: Set<object>, held: object[]): void {
  if (path.has(object)) throw new TypeError('a cyclic value has no canonical JSON form');
  path.add(object);
  held.push(object);
}

/** A primitive's canonical text; undefined for undefined, a function or a symbol, as JSON omits them. */
function writePrimitive(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return writeString(value);
    case 'number':
      return writeNumber(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      throw new TypeError('a bigint has no canonical JSON form');
    case 'object':
      return 'null';
    default:
      return undefined;
  }
}
