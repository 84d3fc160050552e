import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// Which Interlock this is: package.json's `version`, read once; the journal's schema records it. This module sits two folders below
// the project, as the compiled server does (dist/server/main.js), so ../../package.json is the
// project's own from the sources and from a production install alike.

const packageFile = fileURLToPath(new URL('../../package.json', import.meta.url));

function readVersion(): string {
  const manifest: unknown = JSON.parse(readFileSync(packageFile, 'utf8'));
  const version = typeof manifest === 'object' && manifest !== null && 'version' in manifest ? manifest.version : undefined;
  if (typeof version !== 'string' || version === '') throw new Error(`${packageFile} names no version`);
  return version;
}

/** This Interlock's version (package.json), as /healthz, /metrics and the first log line name it. */
export const INTERLOCK_VERSION: string = readVersion();
