import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// Which Interlock this is: package.json's `version`, read once. This module sits two folders below
// the project, as the compiled server does (dist/server/main.js), so ../../package.json is the
// project's own from the sources and from a production install alike.

const packageFile = fileURLToPath(new URL('../../package.json', import.meta.url));

function readVersion(): string {
  const manifest = JSON.parse(readFileSync(packageFile, 'utf8')) as { version?: unknown };
  if (typeof manifest.version !== 'string' || manifest.version === '') throw new Error(`${packageFile} names no version`);
  return manifest.version;
}

/** This Interlock's version (package.json), as /healthz, /metrics and the first log line name it. */
export const INTERLOCK_VERSION: string = readVersion();
