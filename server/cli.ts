import { realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// What the command-line tools (npm run verify, npm run export) share: how a bad argument becomes a
// usage error, and whether a module is the script being run.

/** A bad argument: the tool prints why and its usage, and exits with its usage code. */
export class UsageError extends Error {}

/** Run `read` (a parseArgs call, a check of one value): what it throws is a UsageError that says why. */
export function asUsage<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    throw error instanceof UsageError ? error : new UsageError(messageOf(error));
  }
}

/** What a thrown value says: an Error's message, or the value itself as text. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** True when the module at `moduleUrl` (its import.meta.url) is the script node was started with. */
export function isMainModule(moduleUrl: string): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(moduleUrl));
  } catch {
    return false;
  }
}

/**
 * A reader that closed the pipe early (`npm run export … | head`) has what it wanted: end quietly
 * with exit 0, as Unix tools do, rather than with a stack trace. Any other write error still throws.
 */
export function endQuietlyWhenPipeCloses(stream: NodeJS.WriteStream): void {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    process.exit(0);
  });
}

/**
 * The command that started this tool, as its usage should print it, with `args` after it: `npm run
 * verify -- <args>` when npm ran it from a clone, `node dist/server/verify.js <args>` in a
 * production install (no npm script, no tsx there), `npx tsx server/receipts/verify-cli.ts <args>`
 * when tsx ran the source directly. `subcommand` is what the npm script adds to the script
 * (`backup` for `npm run backup`), printed when the tool was started without npm.
 */
export function commandLine(args = '', subcommand = '', argv: readonly string[] = process.argv, env: NodeJS.ProcessEnv = process.env): string {
  const script = shownPath(argv[1] ?? '');
  const npmScript = env.npm_lifecycle_event;
  // npm's variables reach a tool that a test or a script started under `npm test` too: they name this
  // tool only when the npm script runs this very file.
  if (npmScript !== undefined && env.npm_lifecycle_script?.split(/\s+/).includes(script)) {
    return args === '' ? `npm run ${npmScript}` : `npm run ${npmScript} -- ${args}`;
  }
  const runner = script.endsWith('.ts') ? 'npx tsx' : 'node';
  return [runner, script, subcommand, args].filter((part) => part !== '').join(' ');
}

/** A script's path as a person would type it: relative to the working folder when inside it. */
function shownPath(script: string): string {
  if (script === '') return script;
  const relative = path.relative(process.cwd(), script);
  return relative === '' || relative.startsWith('..') || path.isAbsolute(relative) ? script : relative;
}
