import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name);
    return statSync(join(root, path)).isDirectory() ? sources(path) : /\.(ts|tsx)$/.test(name) ? [path] : [];
  });
}

/** The layers' import rule (STYLE.md): shared imports nothing of ours; web only shared; the decision core no I/O framework. */
const RULES: [string, RegExp, string][] = [
  ['shared', /from '\.\.?\/.*\b(server|web|db)\//, 'shared/ imports nothing from server/, web/ or db/'],
  ['web/src', /from '(\.\.\/)+(server|db)\//, 'web/ imports only shared/, never server/ or db/'],
  ['server/gate', /from '(fastify|drizzle-orm|better-sqlite3)|from '\.\.\/\.\.\/db\//, 'the gate core imports no fastify, drizzle or db'],
  ['server/scoreboard', /from '(fastify|drizzle-orm|better-sqlite3)|from '\.\.\/\.\.\/db\//, 'the scoreboard imports no fastify, drizzle or db'],
];

describe('layers', () => {
  it.each(RULES)('%s: %#', (dir, forbidden, rule) => {
    const offenders = sources(dir).filter((file) => forbidden.test(readFileSync(join(root, file), 'utf8')));
    expect(offenders.map((f) => relative(root, join(root, f))), rule).toEqual([]);
  });
});
