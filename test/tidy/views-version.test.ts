import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { VIEWS_FOLD_MODULES, VIEWS_VERSION } from '../../server/views/version.ts';

/**
 * The derived tables are a cache of the views' folds, tagged with the folds' version: a server
 * whose folds changed must rebuild them, or it would serve rows an older fold wrote. So a change
 * to a fold module (server/views/version.ts `VIEWS_FOLD_MODULES`) must come with a new
 * `VIEWS_VERSION`. `views-version.json` pins the version and each module's SHA-256; after a bump,
 * `PIN_VIEWS_VERSION=1 npx vitest run test/tidy/views-version.test.ts` pins the new digests (it
 * refuses while the version is the pinned one).
 */

const root = fileURLToPath(new URL('../../', import.meta.url));
const PINNED_FILE = fileURLToPath(new URL('./views-version.json', import.meta.url));

interface Pinned {
  version: string;
  modules: Record<string, string>;
}

const digestOf = (file: string) => createHash('sha256').update(readFileSync(join(root, file))).digest('hex');

/**
 * The fold modules and every module they import code from, transitively (type-only imports left
 * out): the status ranks a row's confirmation is decided by decide rows as much as the fold does.
 */
function foldClosure(): string[] {
  const seen = new Set<string>();
  const queue = [...VIEWS_FOLD_MODULES];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const source = readFileSync(join(root, file), 'utf8');
    for (const match of source.matchAll(/^(?:import|export)\s+(?!type\b)[^;]*?from\s+['"](\.[^'"]+)['"]/gms)) {
      queue.push(normalize(join(dirname(file), match[1]!)));
    }
  }
  return [...seen].sort();
}

/** Each fold module's digest now, by path, with every module the folds import code from. */
const current = (): Record<string, string> => Object.fromEntries(foldClosure().map((file) => [file, digestOf(file)]));

/** What is wrong between the pinned digests and the sources, one line each; none when they agree. */
function versionProblems(pinned: Pinned, version: string, now: Record<string, string>): string[] {
  if (pinned.version !== version) {
    return [`VIEWS_VERSION is ${version} and the digests are pinned for ${pinned.version}: pin them with PIN_VIEWS_VERSION=1 npx vitest run test/tidy/views-version.test.ts`];
  }
  const bump = `bump VIEWS_VERSION in server/views/version.ts (the derived tables are then rebuilt from the journal at start), then pin the digests with PIN_VIEWS_VERSION=1 npx vitest run test/tidy/views-version.test.ts`;
  const problems: string[] = [];
  for (const [file, digest] of Object.entries(now)) {
    if (pinned.modules[file] === undefined) problems.push(`${file} became a fold module under version ${version}: ${bump}`);
    else if (pinned.modules[file] !== digest) problems.push(`${file} changed under views version ${version}: ${bump}`);
  }
  for (const file of Object.keys(pinned.modules)) if (now[file] === undefined) problems.push(`${file} is no longer a fold module under version ${version}: ${bump}`);
  return problems;
}

describe("the views' version", () => {
  const pinned: Pinned = JSON.parse(readFileSync(PINNED_FILE, 'utf8'));

  if (process.env.PIN_VIEWS_VERSION === '1') {
    it('pins the digests of a new version', () => {
      expect(pinned.version, 'the version is the pinned one: bump VIEWS_VERSION first').not.toBe(VIEWS_VERSION);
      writeFileSync(PINNED_FILE, `${JSON.stringify({ version: VIEWS_VERSION, modules: current() }, null, 2)}\n`);
    });
    return;
  }

  it('every fold module is as pinned for this version, or the version was bumped', () => {
    expect(versionProblems(pinned, VIEWS_VERSION, current())).toEqual([]);
  });

  it('pins what the folds import too: the status ranks among them', () => {
    expect(Object.keys(current())).toEqual(expect.arrayContaining(['shared/receipts/confirmations.ts', 'shared/api.ts', ...VIEWS_FOLD_MODULES]));
  });

  it('names the file that changed and what to do; a bump asks for new digests', () => {
    const now = current();
    const changed = { ...now, 'server/ledger/chain.ts': '0'.repeat(64) };
    expect(versionProblems(pinned, VIEWS_VERSION, changed)).toEqual([expect.stringMatching(/^server\/ledger\/chain\.ts changed under views version .*: bump VIEWS_VERSION in server\/views\/version\.ts/)]);
    expect(versionProblems(pinned, `${VIEWS_VERSION}-next`, now)).toEqual([expect.stringContaining('pin them with PIN_VIEWS_VERSION=1')]);
    const { 'server/ledger/table.ts': _gone, ...fewer } = now;
    expect(versionProblems(pinned, VIEWS_VERSION, fewer)).toEqual([expect.stringMatching(/^server\/ledger\/table\.ts is no longer a fold module/)]);
  });
});
