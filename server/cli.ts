import { realpathSync } from 'node:fs';
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
