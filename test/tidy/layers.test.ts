import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The layers (docs/internals/layout.md, STYLE.md): shared/ imports nothing but typebox (the contract's
 * schemas: plain JSON Schema objects, no I/O, safe in a browser); web/ only shared/; db/ no
 * server/ module but the journal layer (server/journal/); the journal layer only shared/; the pure
 * decision core no I/O at all (no node: module, no framework, no await, no clock); and no import
 * cycle anywhere in server/, db/, shared/ or web/. Type-only imports count: an arrow is an arrow.
 * Only db/ names a database driver, and Services holds no handle (the storage seam).
 */

const root = fileURLToPath(new URL('../../', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name);
    return statSync(join(root, path)).isDirectory() ? sources(path) : /\.(ts|tsx)$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+'([^']+)'|import\(\s*'([^']+)'\s*\)/g;

/** Every module a file names: relative ones resolved to repo paths, packages as written. */
function importsOf(file: string): { local: string[]; packages: string[] } {
  const text = readFileSync(join(root, file), 'utf8');
  const local: string[] = [];
  const packages: string[] = [];
  for (const match of text.matchAll(IMPORT)) {
    const spec = match[1] ?? match[2]!;
    if (spec.startsWith('.')) local.push(normalize(join(dirname(file), spec)));
    else packages.push(spec);
  }
  return { local, packages };
}

const FILES = ['server', 'db', 'shared', 'web/src'].flatMap(sources);
const GRAPH = new Map(FILES.map((file) => [file, importsOf(file)]));

/** Modules of the pure decision core: they decide on values handed to them and return values. */
const PURE_CORE = [
  'server/journal/chain.ts',
  'server/journal/shapes.ts',
  'server/journal/confirmations.ts',
  'server/gate/decide.ts',
  'server/gate/target.ts',
  'server/gate/premises.ts',
  'server/gate/leases.ts',
  'server/inbox/state.ts',
  'server/inbox/escalation.ts',
  'server/inbox/summary.ts',
  'server/inbox/decide.ts',
  'server/ledger/outcome.ts',
  'server/throttle/login.ts',
  'server/throttle/rate.ts',
  'server/throttle/client-address.ts',
  'server/http/served-hosts.ts',
  'server/http/overload-rules.ts',
  'server/access/rules.ts',
];

function offenders(files: string[], bad: (imports: { local: string[]; packages: string[] }, file: string) => string[]): string[] {
  return files.flatMap((file) => bad(GRAPH.get(file) ?? importsOf(file), file).map((what) => `${file} -> ${what}`));
}

const under = (dir: string) => FILES.filter((file) => file.startsWith(`${dir}/`));

describe('layers', () => {
  it('shared/ imports nothing but typebox: no other package, no node: module, nothing outside shared/', () => {
    const outside = ({ local, packages }: { local: string[]; packages: string[] }) => [
      ...packages.filter((p) => p !== 'typebox'),
      ...local.filter((m) => !m.startsWith('shared/')),
    ];
    expect(offenders(under('shared'), outside)).toEqual([]);
  });

  it('web/ imports only shared/ (and its own files and packages)', () => {
    expect(offenders(under('web/src'), ({ local }) => local.filter((m) => !m.startsWith('shared/') && !m.startsWith('web/')))).toEqual([]);
  });

  it('db/ imports no server/ module but the journal layer', () => {
    expect(offenders(under('db'), ({ local }) => local.filter((m) => m.startsWith('server/') && !m.startsWith('server/journal/')))).toEqual([]);
  });

  it('the journal layer (server/journal/) imports only shared/ and itself', () => {
    expect(offenders(under('server/journal'), ({ local }) => local.filter((m) => !m.startsWith('shared/') && !m.startsWith('server/journal/')))).toEqual([]);
  });

  it('the pure core imports no I/O: no node: module, no framework, no db/, no await, no Date.now', () => {
    for (const file of PURE_CORE) expect(existsSync(join(root, file)), `${file} is listed as pure core`).toBe(true);
    const io = /^(node:|fastify|@fastify|drizzle-orm|better-sqlite3|stripe|ws)/;
    expect(
      offenders(PURE_CORE, ({ local, packages }, file) => {
        // Code only: what a comment says about awaiting or clocks is no I/O.
        const text = readFileSync(join(root, file), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
        return [
          ...packages.filter((p) => io.test(p)),
          // The journal layer's types and pure predicates are fine; its hashing is not the core's business.
          ...local.filter((m) => m.startsWith('db/') || (m.startsWith('server/') && !PURE_CORE.includes(m) && m !== 'server/journal/store.ts')),
          ...(/\bawait\b/.test(text) ? ['await'] : []),
          ...(/Date\.now\(/.test(text) ? ['Date.now()'] : []),
        ];
      }),
    ).toEqual([]);
  });

  it('only the composition root (server/app/) and server/http/ itself import server/http/', () => {
    const outside = FILES.filter((file) => !file.startsWith('server/app/') && !file.startsWith('server/http/'));
    expect(offenders(outside, ({ local }) => local.filter((m) => m.startsWith('server/http/')))).toEqual([]);
  });

  it('the error handler under every route does not put the views stack under them', () => {
    expect(offenders(['server/http/errors.ts', 'server/http/journal-scope.ts'], ({ local }) => local.filter((m) => m.startsWith('server/views/views')))).toEqual([]);
  });

  it('no import cycle in server/, db/, shared/ or web/', () => {
    // Tarjan's strongly connected components: any component of more than one file is a cycle.
    const index = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const onStack = new Set<string>();
    const cycles: string[][] = [];
    let counter = 0;
    const visit = (file: string) => {
      index.set(file, counter);
      low.set(file, counter);
      counter++;
      stack.push(file);
      onStack.add(file);
      for (const next of GRAPH.get(file)?.local ?? []) {
        if (!GRAPH.has(next)) continue;
        if (!index.has(next)) {
          visit(next);
          low.set(file, Math.min(low.get(file)!, low.get(next)!));
        } else if (onStack.has(next)) low.set(file, Math.min(low.get(file)!, index.get(next)!));
      }
      if (low.get(file) === index.get(file)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== file);
        if (component.length > 1) cycles.push(component.map((f) => relative(root, join(root, f))).sort());
      }
    };
    for (const file of FILES) if (!index.has(file)) visit(file);
    expect(cycles).toEqual([]);
  });
});

/** A database driver or its query builder: only the storage folder (db/) names one. */
const DRIVER = /^(better-sqlite3|drizzle-orm|pg|postgres|@electric-sql\/pglite|mysql2)(\/|$)/;

/**
 * Where a driver may be named outside db/, and why. Everything else reaches what is kept through
 * the storage port (db/port/) or a db/ helper that opens one (db/sqlite-storage.ts, db/open.ts).
 */
const DRIVER_ALLOWED: Record<string, string> = {
  'server/sandbox/': 'the fake Stripe keeps its own store, which is no part of Interlock\'s',
  'bench/': 'the benchmarks time SQLite itself, under the store',
  // Tests that write the journal file behind the store on purpose: a row changed, a guard dropped, a table or id removed.
  'test/adversarial/reconciliation-masked-missing.test.ts': 'edits the fake Stripe\'s own store to hide a refund',
  'test/backup/restore-damaged.test.ts': 'damages a backup\'s journal file',
  'test/export/export-cli.test.ts': 'tampers with a copy of the journal file and reads what was written',
  'test/http/journal-corrupt.test.ts': 'corrupts the journal file under a running server',
  'test/integrity/checkpoint-rows.test.ts': 'writes checkpoint rows past the store',
  'test/integrity/journal-id.test.ts': 'removes or changes the journal id row',
  'test/integrity/tamper.test.ts': 'tampers with entries, seals and guards',
  'test/integrity/verify-journal.test.ts': 'tampers with the file the offline check reads',
  'test/reconcile/reconciliation.test.ts': 'edits the fake Stripe\'s own store',
  'test/sandbox/durability.test.ts': 'reads the fake Stripe\'s own store',
  'test/support/tamper.ts': 'the tamper helper: edits the file with the guards off',
  'test/views/chains-pinned.test.ts': 'replaces rows behind the server',
  // The storage folder's own SQLite: files as an earlier Interlock left them, and migrations raced.
  'test/db/outbox-migration.test.ts': 'writes a file at an earlier schema and migrates it',
  'test/db/schema-version.test.ts': 'writes files at earlier and later schemas',
  'test/db/sqlite-schema.test.ts': 'writes raw rows against the schema\'s guards, and races migrations',
};

/** Every TypeScript file of the project but the storage folder: the server, the web app, the tests, the journeys, the tools. */
const NOT_STORAGE = ['server', 'shared', 'web/src', 'test', 'e2e', 'experiments', 'scripts', 'bench'].flatMap(sources);

describe('the storage seam', () => {
  it('only db/ imports a database driver or drizzle; the exceptions are named, with why', () => {
    const allowed = (file: string) => Object.keys(DRIVER_ALLOWED).some((path) => (path.endsWith('/') ? file.startsWith(path) : file === path));
    const outside = NOT_STORAGE.filter((file) => !allowed(file));
    expect(offenders(outside, ({ packages }) => packages.filter((p) => DRIVER.test(p)))).toEqual([]);
    // An exception that no longer names a driver is dropped from the list, so the list stays the truth.
    const named = Object.keys(DRIVER_ALLOWED).filter((path) => !path.endsWith('/'));
    expect(named.filter((file) => !existsSync(join(root, file)) || importsOf(file).packages.every((p) => !DRIVER.test(p)))).toEqual([]);
  });

  it('the server opens its storage in one place: no server/ file opens a database itself (db/open.ts)', () => {
    expect(offenders(under('server'), ({ local }) => local.filter((m) => m === 'db/open.ts'))).toEqual([]);
    expect(readFileSync(join(root, 'server/app/runtime.ts'), 'utf8')).toMatch(/\bopenServerStorage\(/);
  });

  it('Services carries no database handle: no member is typed with a db/ connection', () => {
    const text = readFileSync(join(root, 'server/app/services.ts'), 'utf8');
    const body = /\nexport interface Services \{\n([\s\S]*?)\n\}\n/.exec(text)?.[1];
    expect(body, 'server/app/services.ts declares the Services interface').toBeDefined();
    const code = (body ?? '').replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
    const members = code.split('\n').filter((line) => /\b(OpenDatabase|JournalDb|Database|BetterSQLite3Database|SqliteJournal)\b/.test(line));
    expect(members.map((line) => line.trim())).toEqual([]);
  });
});
