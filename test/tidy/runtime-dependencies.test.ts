import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * A runtime dependency is one production installs (`npm ci --omit=dev`) and loads: each package in
 * package.json's `dependencies` must be named by the code that ships (server/, db/, shared/,
 * web/src/). A package only the tests or tools use belongs in `devDependencies`, where a
 * production install neither fetches it nor warns about its engines.
 */

const root = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { dev?: boolean }>;
};

function sources(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name);
    return statSync(join(root, path)).isDirectory() ? sources(path) : /\.(ts|tsx)$/.test(name) ? [path] : [];
  });
}

/** Every package a shipped source names: imports, dynamic imports, and transport targets given as a string. */
function packagesNamed(): Set<string> {
  const named = new Set<string>();
  const spec = /(?:from\s+|import\(\s*|target:\s*)'([^'.][^']*)'/g;
  for (const file of ['server', 'db', 'shared', 'web/src'].flatMap(sources)) {
    for (const match of readFileSync(join(root, file), 'utf8').matchAll(spec)) {
      const parts = match[1]!.split('/');
      named.add(parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!);
    }
  }
  return named;
}

describe('runtime dependencies', () => {
  it('every runtime dependency is named by code that ships, not only by tests', () => {
    const named = packagesNamed();
    const unused = Object.keys(pkg.dependencies).filter((name) => !named.has(name));
    expect(unused, 'move these to devDependencies: nothing in server/, db/, shared/ or web/src/ loads them').toEqual([]);
  });

  it('canonicalize, the reference the canonical JSON test compares against, is a development dependency', () => {
    expect(pkg.dependencies).not.toHaveProperty('canonicalize');
    expect(lock.packages['node_modules/canonicalize']?.dev).toBe(true);
  });
});
