import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * A type assertion (`x as T`) tells the compiler to trust us; in server/ and db/ the code should
 * say what it knows instead: a guard that checks at runtime, narrowing by `kind`, a parser that
 * validates its input, a generic, or the SDK's own types. Their number may only go down, and
 * `as unknown as`, which overrides even the compiler's sanity check, is not allowed there at all.
 * `as const` is not an assertion; nor are renames in imports and exports. The rule is a line
 * rule, so text in a string that reads like an assertion ("the report as JSON") counts too.
 */

/** At most this many assertions in server/ and db/. Lower it when you remove some; never raise it. */
const ASSERTIONS_MAX = 15;

const root = fileURLToPath(new URL('../../', import.meta.url));

/** A word, `)`, `]`, quote or backtick, then `as` and a type (not `const`). */
const ASSERTION = /[\w)\]'"`]\s+as\s+(?!const\b)(?:[A-Z][A-Za-z0-9_]*|unknown|string|number|boolean|never|any|object|readonly|keyof|typeof|null|undefined|\{|\[|\()/g;
/** `{ a as b } from '`: an import list's renames, taken out before counting. */
const IMPORT_LIST = /\{[^}]*\}\s*from\s*'/g;
/** Lines that are comments, imports or re-exports. */
const SKIPPED_STARTS = ['*', '/*', '//', 'import ', 'export {'];
const DOUBLE_ASSERTION = /\bas\s+unknown\s+as\b/;

/** How many assertions one line of source holds, by the rule above. */
function assertionsOnLine(line: string): number {
  const text = line.trimStart();
  if (SKIPPED_STARTS.some((start) => text.startsWith(start))) return 0;
  return line.replace(IMPORT_LIST, '').match(ASSERTION)?.length ?? 0;
}

function sources(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name);
    return statSync(join(root, path)).isDirectory() ? sources(path) : /\.tsx?$/.test(name) ? [path] : [];
  });
}

interface Found {
  where: string;
  count: number;
  doubled: boolean;
}

function assertionsIn(dirs: readonly string[]): Found[] {
  return dirs.flatMap(sources).flatMap((file) =>
    readFileSync(join(root, file), 'utf8')
      .split('\n')
      .flatMap((line, i) => {
        const count = assertionsOnLine(line);
        return count === 0 ? [] : [{ where: `${file}:${i + 1}: ${line.trim()}`, count, doubled: DOUBLE_ASSERTION.test(line) }];
      }),
  );
}

describe('type assertions', () => {
  it('the rule: counts `as T` casts, not `as const`, comments, import or export renames', () => {
    const lines: [string, number][] = [
      ['const a = value as Mapping;', 1],
      ["const b = (error as Error).message + (x as { code?: string }).code;", 2],
      ['return read as Read<T | null>;', 1],
      ['const c = (list as readonly string[]).includes(name);', 1],
      // The rule counts a double assertion once; the test below refuses it outright.
      ['const d = report as unknown as JsonObject;', 1],
      ["const e = ['a', 'b'] as const;", 0],
      ["import { readFile as read } from 'node:fs';", 0],
      ["import * as schema from './schema.ts';", 0],
      ['export { a as b };', 0],
      ['// this reads (error as Error)', 0],
      [' * a doc line: value as Mapping', 0],
    ];
    expect(lines.map(([line]) => assertionsOnLine(line))).toEqual(lines.map(([, count]) => count));
  });

  it(`server/ and db/ hold at most ${ASSERTIONS_MAX} type assertions`, () => {
    const found = assertionsIn(['server', 'db']);
    const total = found.reduce((sum, f) => sum + f.count, 0);
    const listing = found.map((f) => f.where).join('\n');
    expect(total, `${total} type assertions in server/ and db/ (at most ${ASSERTIONS_MAX}); say what the code knows instead:\n${listing}`).toBeLessThanOrEqual(ASSERTIONS_MAX);
  });

  it('server/ and db/ hold no `as unknown as`', () => {
    const doubled = assertionsIn(['server', 'db']).filter((f) => f.doubled);
    expect(doubled.map((f) => f.where)).toEqual([]);
  });
});
