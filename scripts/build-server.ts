import { cpSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { SERVER_ENTRY_POINTS } from '../server/tools.ts';

// `npm run build`, after the web build: the server compiled to plain JavaScript in dist/server,
// which production runs with `node dist/server/main.js` (no tsx, no esbuild at run time). The entry
// points are ESM bundles of our code and of the packages it imports, sharing chunks beside them:
// resolving and linking each package's files one by one took most of an empty server's start, as
// a CPU profile of one showed (typebox alone is 529 modules).
// Packages stay installed as usual (`npm ci --omit=dev`): the ones a bundle cannot hold are
// imported from node_modules at run time (NOT_BUNDLED).
//
// The bundles sit two folders below the project, as server/http/app.ts and server/config/load.ts
// do, so their paths relative to the module (../../dist/web, ../../interlock.yaml) still hold.
// db/open.ts finds the migrations beside itself: they are copied beside the bundles.

const root = fileURLToPath(new URL('../', import.meta.url));

/**
 * Packages imported from node_modules at run time rather than bundled: a native addon, and packages
 * that read their own files or start workers by a path relative to their folder.
 */
export const NOT_BUNDLED = [
  'better-sqlite3',
  'pino',
  'pino-pretty',
  'thread-stream',
  '@fastify/swagger',
  '@fastify/swagger-ui',
  // pg's optional native binding, never installed.
  'pg-native',
];

/** Packages bundled as CommonJS call `require` for Node's own modules: an ESM bundle has none of its own. */
const REQUIRE_BANNER = "import { createRequire as __interlockRequire } from 'node:module'; const require = __interlockRequire(import.meta.url);";


/**
 * Compile the server into `outDir` (emptied first) and copy the migrations beside it; `extra`
 * entry points (name to path from the project root) are compiled beside the server's own.
 */
export async function buildServer(outDir: string = join(root, 'dist/server'), extra: Record<string, string> = {}): Promise<void> {
  rmSync(outDir, { recursive: true, force: true });
  const entryPoints = Object.fromEntries(Object.entries({ ...SERVER_ENTRY_POINTS, ...extra }).map(([name, path]) => [name, join(root, path)]));
  const result = await build({
    entryPoints,
    outdir: outDir,
    bundle: true,
    external: NOT_BUNDLED,
    splitting: true,
    banner: { js: REQUIRE_BANNER },
    platform: 'node',
    format: 'esm',
    // The lowest Node that runs us (package.json engines).
    target: 'node20.19',
    sourcemap: 'linked',
    logLevel: 'warning',
  });
  // A warning is code that would misbehave at run time (an import.meta that means something else once bundled, say).
  if (result.warnings.length > 0) throw new Error(`the server did not compile cleanly: ${result.warnings.map((w) => w.text).join('; ')}`);
  refuseFolderPaths(outDir);
  cpSync(join(root, 'db/migrations'), join(outDir, 'migrations'), { recursive: true });
  // db/pg/migrate.ts finds PostgreSQL's beside the bundles under a name of their own.
  cpSync(join(root, 'db/pg/migrations'), join(outDir, 'pg-migrations'), { recursive: true });
}

/**
 * A bundled CommonJS package that finds its own files by `__dirname` or `__filename` would throw
 * at run time (an ESM bundle has neither): refuse the build, so the package joins NOT_BUNDLED.
 */
function refuseFolderPaths(outDir: string): void {
  const offenders = readdirSync(outDir).filter((file) => file.endsWith('.js') && /\b__(dirname|filename)\b/.test(readFileSync(join(outDir, file), 'utf8')));
  if (offenders.length > 0) throw new Error(`bundled code reads __dirname or __filename (${offenders.join(', ')}): add its package to NOT_BUNDLED in scripts/build-server.ts`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildServer();
