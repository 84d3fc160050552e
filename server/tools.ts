import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** What `npm run build` compiles into dist/server, by output name: the server, the ledger's export worker, and the tools an operator runs. */
export const SERVER_ENTRY_POINTS = {
  main: 'server/main.ts',
  // Started by server/ledger/csv-stream.ts from beside the compiled server, built ahead.
  'export-worker': 'server/ledger/export-worker.ts',
  verify: 'server/receipts/verify-cli.ts',
  export: 'server/export/export-cli.ts',
  mcp: 'server/mcp/main.ts',
  'hash-secret': 'server/config/hash-secret.ts',
  backup: 'server/backup/backup-cli.ts',
  reload: 'server/app/reload-cli.ts',
  migrate: 'server/app/migrate-cli.ts',
  'rebuild-views': 'server/views/rebuild-cli.ts',
} as const;

/** The tools whose npm script in a clone has the name of their compiled file. */
export type Tool = 'verify' | 'export' | 'hash-secret' | 'reload' | 'migrate' | 'rebuild-views';

/**
 * How an operator runs `tool` with `args` where this code runs, for a message to name: `node
 * dist/server/verify.js <args>` beside the compiled server (a production install has no npm
 * scripts and no tsx), `npm run verify -- <args>` in a clone run from source.
 */
export function toolCommand(tool: Tool, args: string, moduleUrl: string = import.meta.url): string {
  if (moduleUrl.endsWith('.ts')) return `npm run ${tool} -- ${args}`;
  // Compiled, this module is inside one of the bundles of dist/server, beside the tool's own.
  const file = fileURLToPath(new URL(`./${tool}.js`, moduleUrl));
  const relative = path.relative(process.cwd(), file);
  const shown = relative === '' || relative.startsWith('..') || path.isAbsolute(relative) ? file : relative;
  return `node ${shown} ${args}`;
}
