import { closeSync, existsSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { configLimits } from './schema.ts';

// Secrets handed over in files: a file a setting or a variable names, or a systemd credential
// (`LoadCredential=<name>:<path>` puts the file at $CREDENTIALS_DIRECTORY/<name>). The config's
// `*_file` secrets, the Stripe keys' `*_FILE` variables and the receipt signing key read them so.

/** The systemd credential `name`, when systemd handed one over ($CREDENTIALS_DIRECTORY set and the file there); else null. */
export function credentialPath(credentialsDirectory: string | null, name: string, exists: (path: string) => boolean = existsSync): string | null {
  if (credentialsDirectory === null) return null;
  const path = join(credentialsDirectory, name);
  return exists(path) ? path : null;
}

/**
 * Read a secret file, bounded: a path that names a device or a log by mistake must not be read
 * whole. `fail` names the problem and does not return.
 */
export function readSecretFile(file: string, fail: (problem: string) => never): string {
  const read = readSecretFileOrProblem(file);
  return 'text' in read ? read.text : fail(read.problem);
}

/** As `readSecretFile`, with the problem returned (the end of a sentence about the file: `cannot be read (ENOENT)`). */
export function readSecretFileOrProblem(file: string): { text: string } | { problem: string } {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (error) {
    return { problem: `cannot be read (${errorCode(error)})` };
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return { problem: 'is not a regular file' };
    if (stat.size > configLimits.secretFileBytesMax) return { problem: `is larger than ${configLimits.secretFileBytesMax} bytes` };
    return { text: readFileSync(fd, 'utf8') };
  } catch (error) {
    return { problem: `cannot be read (${errorCode(error)})` };
  } finally {
    closeSync(fd);
  }
}

function errorCode(error: unknown): string {
  return error instanceof Error && 'code' in error && typeof error.code === 'string' ? error.code : String(error);
}
