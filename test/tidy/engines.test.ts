import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

/**
 * Which Node versions Interlock runs on. @fastify/cookie's and @fastify/static's dependencies are
 * ESM-only and are loaded with require(), which works only from Node 20.19 and 22.12; of the Nodes
 * from there, the suite runs on Node 20 every time and scripts/try-node.sh checks Node 22, so our
 * engines name those two lines and no other (a Node 24 is named once a check of it passes). Packages that declare a narrower Node range (npm ci warns
 * EBADENGINE for them) are allowed only when engine-warnings.json names them and says why.
 */
const ENGINES = '^20.19.0 || ^22.12.0';

const root = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { engines?: { node?: string } };
const lock = JSON.parse(readFileSync(`${root}package-lock.json`, 'utf8')) as {
  packages: Record<string, { name?: string; version?: string; engines?: { node?: string } | string[] }>;
};
const allowList = JSON.parse(readFileSync(new URL('./engine-warnings.json', import.meta.url), 'utf8')) as {
  allowed: { name: string; version: string; node: string; why: string }[];
};

/** The package name from a lock key such as `node_modules/a/node_modules/@b/c`. */
const nameOf = (key: string): string => key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);

describe('engines', () => {
  it('package.json and the lock admit exactly the Node versions that run us', () => {
    expect(pkg.engines?.node).toBe(ENGINES);
    const own = lock.packages[''];
    expect(own?.engines && !Array.isArray(own.engines) ? own.engines.node : undefined).toBe(ENGINES);
    // The versions on which require(esm) is missing or flagged, where those plugins crash at load.
    // And the lines nothing checks.
    for (const v of ['20.18.3', '21.7.3', '22.11.0', '23.11.0', '24.0.0']) expect(semver.satisfies(v, ENGINES), v).toBe(false);
    for (const v of ['20.19.0', '20.20.2', '22.12.0', '22.23.5']) expect(semver.satisfies(v, ENGINES), v).toBe(true);
  });

  it('every installed package that does not admit our lowest Node is in the allow-list, and nothing else is', () => {
    const lowest = semver.minVersion(ENGINES)?.version;
    expect(lowest).toBe('20.19.0');
    const narrower = Object.entries(lock.packages)
      .filter(([key]) => key !== '')
      .flatMap(([key, entry]) => {
        const range = entry.engines && !Array.isArray(entry.engines) ? entry.engines.node : undefined;
        if (range === undefined || semver.satisfies(lowest!, range)) return [];
        return [`${entry.name ?? nameOf(key)}@${entry.version} node ${range}`];
      });
    const allowed = allowList.allowed.map((a) => `${a.name}@${a.version} node ${a.node}`);
    const unexplained = [...new Set(narrower)].filter((p) => !allowed.includes(p)).sort();
    const stale = allowed.filter((a) => !narrower.includes(a)).sort();
    expect(unexplained, 'installed packages whose engines.node excludes Node 20.19.0; add each to test/tidy/engine-warnings.json with why it is harmless, or avoid it').toEqual([]);
    expect(stale, 'engine-warnings.json entries no installed package needs any more; remove them').toEqual([]);
    for (const a of allowList.allowed) expect(a.why.length, `${a.name}: say why it is harmless`).toBeGreaterThan(20);
  });
});
