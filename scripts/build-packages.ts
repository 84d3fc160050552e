import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

// `npm run build:packages`: the typed client and the MCP server as npm packages, in packages/client
// and packages/mcp. Each package's tsconfig.json compiles the sources where they live (shared/client,
// server/mcp) into its dist/ as JavaScript and declarations; the MCP server imports the client by
// the client package's name, which the MCP package's build resolves to the client's declarations,
// so the MCP package depends on the client package rather than holding a copy of it.
// `npm run pack:packages` builds them and writes their tarballs (`npm pack`) into dist/packages.

const run = promisify(execFile);
const root = fileURLToPath(new URL('../', import.meta.url));

/** The packages, in build order: the MCP package's build reads the client's declarations. */
export const PACKAGES = ['client', 'mcp'] as const;

/** Where `npm run pack:packages` writes the tarballs. */
export const PACKS_DIR = join(root, 'dist/packages');

/** A relative module specifier that names a TypeScript source (`'./client.ts'`), in quotes. */
const TS_SPECIFIER = /(['"])(\.\.?\/[^'"\n]*?)\.(m?)ts\1/g;

/**
 * The declarations name the modules they import as the sources did (`./client.ts`): TypeScript
 * rewrites the extension in the JavaScript it emits (`rewriteRelativeImportExtensions`) but not in
 * declarations. Rewritten to `.js`, beside which each `.d.ts` lies, as every tool resolves them.
 */
function rewriteDeclarations(dir: string): void {
  for (const entry of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    if (!entry.endsWith('.d.ts')) continue;
    const file = join(dir, entry);
    const text = readFileSync(file, 'utf8');
    const rewritten = text.replace(TS_SPECIFIER, (_all, quote: string, path: string, m: string) => `${quote}${path}.${m}js${quote}`);
    if (rewritten !== text) writeFileSync(file, rewritten);
  }
}

/** The package.json of a package folder. */
function manifestOf(name: string): { bin?: Record<string, string> } {
  return JSON.parse(readFileSync(join(root, 'packages', name, 'package.json'), 'utf8'));
}

/** Compile one package into its dist/ (emptied first) and check what an installed copy needs of it. */
export async function buildPackage(name: (typeof PACKAGES)[number]): Promise<void> {
  const dir = join(root, 'packages', name);
  rmSync(join(dir, 'dist'), { recursive: true, force: true });
  await run(join(root, 'node_modules/typescript/bin/tsc'), ['-p', dir], { cwd: root }).catch((error: { stdout?: string; message: string }) => {
    throw new Error(`packages/${name} did not compile:\n${error.stdout || error.message}`);
  });
  rewriteDeclarations(join(dir, 'dist'));
  for (const bin of Object.values(manifestOf(name).bin ?? {})) {
    const file = join(dir, bin);
    if (!readFileSync(file, 'utf8').startsWith('#!/usr/bin/env node\n')) throw new Error(`${name}: ${bin} does not start with #!/usr/bin/env node`);
    chmodSync(file, 0o755);
  }
}

/** Build every package, in order. */
export async function buildPackages(): Promise<void> {
  for (const name of PACKAGES) await buildPackage(name);
}

/** `npm pack` the built packages into `outDir`: the tarballs' paths, in PACKAGES' order. */
export async function packPackages(outDir: string = PACKS_DIR): Promise<string[]> {
  mkdirSync(outDir, { recursive: true });
  const dirs = PACKAGES.map((name) => join(root, 'packages', name));
  const { stdout } = await run('npm', ['pack', ...dirs, '--pack-destination', outDir, '--json', '--silent'], { cwd: root });
  const packed: { filename: string }[] = JSON.parse(stdout);
  return packed.map((pack) => join(outDir, pack.filename));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildPackages();
  if (process.argv.includes('--pack')) for (const file of await packPackages()) process.stdout.write(`${file}\n`);
}
