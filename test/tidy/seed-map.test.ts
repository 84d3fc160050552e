import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * test/seed-map.tsv maps every test of the earlier Python system, in the files this product
 * re-implements, to the tests of ours that cover it, or says why none does (`n/a: <reason>`).
 * This keeps the map honest: every seed row once, every cited test still there under its title.
 */

const ROOT = join(import.meta.dirname, '..', '..');
const MAP_FILE = join(ROOT, 'test', 'seed-map.tsv');
/** The earlier system's tests, one a row (seed_file, seed_class, seed_test, behaviour); INTERLOCK_SEED_TESTS overrides. */
const SEED_FILE = process.env.INTERLOCK_SEED_TESTS ?? join(ROOT, '..', 'shared', 'seed', 'seed-tests.tsv');

/** The seed files whose behaviour we re-implement: foundation, inbox server, webhooks, scoreboard, experiments, the MCP tools, the audit exports, the public deployment's protections, races between servers on one database, and the gate's parity across stores. */
const MAPPED_SEED_FILES = [
  'tests/test_interlock.py',
  'tests/test_receipts.py',
  'tests/test_contract.py',
  'tests/test_review_fixes.py',
  'tests/test_recovery_locking.py',
  'tests/test_lockin_review_fixes.py',
  'tests/test_mcp_proxy.py',
  'tests/test_merge_defects.py',
  'tests/test_explained.py',
  'tests/test_approval_recovery_fixes.py',
  'tests/test_integration_recovery_fixes.py',
  'tests/test_approvals.py',
  'tests/test_routing.py',
  'tests/test_escalation_flow.py',
  'tests/test_escalation_receipts.py',
  'tests/test_escalation_fixes.py',
  'tests/test_backend.py',
  'tests/test_confirmations.py',
  'tests/test_scoreboard.py',
  'tests/test_repair.py',
  'tests/test_scenario_shared_cap.py',
  'tests/test_export.py',
  'tests/test_export_authority_fixes.py',
  'tests/test_scenario_stripe_dispute.py',
  'tests/test_public.py',
  'tests/test_runtime_sql_races.py',
  'tests/test_runtime_gate_parity.py',
];

const HEADER = 'seed_file\tseed_test\tour_test';
const NA_PREFIX = 'n/a:';
const NA_REASON_MIN = 10;
/** A test file, or a port's contract suite (`test/port/*.contract.ts`), which its test files run over every store. */
const TEST_FILE = /^(test|e2e)\/.+\.(test|spec|contract)\.ts$/;

interface MapRow {
  line: number;
  seedFile: string;
  seedTest: string;
  ourTest: string;
}

function dataLines(text: string): string[] {
  return text.split('\n').filter((line) => line.trim() !== '');
}

function readMap(): { header: string; rows: MapRow[]; malformed: string[] } {
  const [header = '', ...rest] = dataLines(readFileSync(MAP_FILE, 'utf8'));
  const rows: MapRow[] = [];
  const malformed: string[] = [];
  rest.forEach((text, i) => {
    const line = i + 2;
    const cells = text.split('\t');
    if (cells.length !== 3 || cells.some((cell) => cell.trim() === '' || cell !== cell.trim())) {
      malformed.push(`line ${line}: expected three trimmed, non-empty tab-separated cells: ${text}`);
      return;
    }
    const [seedFile = '', seedTest = '', ourTest = ''] = cells;
    rows.push({ line, seedFile, seedTest, ourTest });
  });
  return { header, rows, malformed };
}

function readSeedKeys(): string[] {
  if (!existsSync(SEED_FILE)) throw new Error(`the seed test list is missing: ${SEED_FILE} (set INTERLOCK_SEED_TESTS to its path)`);
  const [, ...rows] = dataLines(readFileSync(SEED_FILE, 'utf8'));
  return rows
    .map((row) => row.split('\t'))
    .filter(([file]) => MAPPED_SEED_FILES.includes(file ?? ''))
    .map(([file, , test]) => `${file}\t${test}`);
}

/** A test file's text without its comment lines, so a `// seed:` note never stands in for a test title. */
const codeCache = new Map<string, string>();
function codeOf(path: string): string {
  let code = codeCache.get(path);
  if (code === undefined) {
    code = readFileSync(join(ROOT, path), 'utf8')
      .split('\n')
      .filter((line) => !/^\s*(\/\/|\/\*|\*)/.test(line))
      .join('\n');
    codeCache.set(path, code);
  }
  return code;
}

/** What is wrong with one `our_test` cell (empty when it is fine). */
function problemsOf(ourTest: string): string[] {
  if (ourTest.startsWith(NA_PREFIX)) {
    const reason = ourTest.slice(NA_PREFIX.length).trim();
    return reason.length >= NA_REASON_MIN ? [] : [`n/a needs a reason of at least ${NA_REASON_MIN} characters: "${ourTest}"`];
  }
  const problems: string[] = [];
  for (const reference of ourTest.split(' ; ')) {
    const cut = reference.indexOf(' > ');
    if (cut < 0) {
      problems.push(`not "<test file> > <title>" nor "n/a: <reason>": "${reference}"`);
      continue;
    }
    const path = reference.slice(0, cut).trim();
    const fragment = reference.slice(cut + 3).trim();
    if (!TEST_FILE.test(path)) {
      problems.push(`not a test file under test/ or e2e/: ${path}`);
    } else if (!existsSync(join(ROOT, path)) || !statSync(join(ROOT, path)).isFile()) {
      problems.push(`no such test file: ${path}`);
    } else if (fragment === '') {
      problems.push(`no title after the file: "${reference}"`);
    } else if (!codeOf(path).includes(fragment)) {
      problems.push(`${path} has no test titled with "${fragment}" (renamed or deleted?)`);
    }
  }
  return problems;
}

describe('test/seed-map.tsv', () => {
  const { header, rows, malformed } = readMap();

  it('has the header seed_file, seed_test, our_test and three cells on every line', () => {
    expect(header).toBe(HEADER);
    expect(malformed).toEqual([]);
  });

  // The earlier system's list sits beside the project (../shared) where the project is developed and
  // in CI; a clone on its own has only the map, whose own checks (above and below) still run.
  it.skipIf(!existsSync(SEED_FILE))('maps every seed row of the re-implemented files exactly once, and no other row', () => {
    const seed = readSeedKeys();
    expect(new Set(seed).size).toBe(seed.length);
    const counts = new Map<string, number>();
    for (const row of rows) {
      const key = `${row.seedFile}\t${row.seedTest}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    const missing = seed.filter((key) => !counts.has(key));
    const twice = [...counts].filter(([, n]) => n > 1).map(([key]) => key);
    const unknown = [...counts.keys()].filter((key) => !seed.includes(key));
    expect({ missing, twice, unknown }).toEqual({ missing: [], twice: [], unknown: [] });
    expect(rows).toHaveLength(seed.length);
  });

  it('cites only test files that exist, by titles they still hold; every n/a says why', () => {
    const problems = rows.flatMap((row) => problemsOf(row.ourTest).map((p) => `line ${row.line} (${row.seedFile} ${row.seedTest}): ${p}`));
    expect(problems).toEqual([]);
  });

  it('the checker itself refuses a renamed title, a missing file and a bare n/a', () => {
    expect(problemsOf(`test/tidy/seed-map.test.ts > ${randomUUID()}`)).toHaveLength(1);
    expect(problemsOf('test/gate/no-such-file.test.ts > anything')).toHaveLength(1);
    expect(problemsOf('n/a: nope')).toHaveLength(1);
    expect(problemsOf('n/a: a reason long enough')).toEqual([]);
    expect(problemsOf('test/tidy/seed-map.test.ts > the checker itself refuses a renamed title')).toEqual([]);
  });
});
