import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { SERVER_ENTRY_POINTS } from '../server/tools.ts';

// `npm run build`, after the web build: the server compiled to plain JavaScript in dist/server,
// which production runs with `node dist/server/main.js` (no tsx, no esbuild at run time). Each entry
// point is one ESM bundle of our own code; packages stay imports resolved from node_modules, so
// better-sqlite3's native module and the rest install as usual (`npm ci --omit=dev`).
//
// The bundles sit two folders below the project, as server/http/app.ts and server/config/load.ts
// do, so their paths relative to the module (../../dist/web, ../../interlock.yaml) still hold.
// db/open.ts finds the migrations beside itself: they are copied beside the bundles.

const root = fileURLToPath(new URL('../', import.meta.url));


/** Compile the server into `outDir` (emptied first) and copy the migrations beside it. */
export async function buildServer(outDir: string = join(root, 'dist/server')): Promise<void> {
  rmSync(outDir, { recursive: true, force: true });
  const entryPoints = Object.fromEntries(Object.entries(SERVER_ENTRY_POINTS).map(([name, path]) => [name, join(root, path)]));
  const result = await build({
    entryPoints,
    outdir: outDir,
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    // The lowest Node that runs us (package.json engines).
    target: 'node20.19',
    sourcemap: 'linked',
    logLevel: 'warning',
  });
  // A warning is code that would misbehave at run time (an import.meta that means something else once bundled, say).
  if (result.warnings.length > 0) throw new Error(`the server did not compile cleanly: ${result.warnings.map((w) => w.text).join('; ')}`);
  cpSync(join(root, 'db/migrations'), join(outDir, 'migrations'), { recursive: true });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildServer();
