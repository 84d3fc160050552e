import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { isStorageStartRefusal, openServerStorage, placeName, type StoragePlace } from '../../db/server-storage.ts';
import { asUsage, commandLine, isMainModule, messageOf, UsageError } from '../cli.ts';
import { ConfigError } from '../config/check.ts';
import { EnvError, parseEnv, storagePlace } from '../config/env.ts';
import { loadConfig } from '../config/load.ts';
import { JournalCorruptError } from '../journal/store.ts';
import { type Rebuilt, rebuildViews } from './rebuild.ts';

/**
 * `npm run rebuild-views`: reset the views' derived tables of a journal database and rebuild them
 * from its journal, entry by entry as a start replays it, printing the pace and each table's
 * digest. For a stopped server, or a copy of its database before an upgrade.
 */

/** How the command exits: 0 done, 1 failed (a journal that fails its checks too), 2 refused (no such database, a bad config or environment), 64 bad arguments. */
export const REBUILD_VIEWS_EXIT_CODES = { ok: 0, failed: 1, refused: 2, usage: 64 } as const;
type RebuildExitCode = (typeof REBUILD_VIEWS_EXIT_CODES)[keyof typeof REBUILD_VIEWS_EXIT_CODES];

/** How to call it, by the command that started it. */
export const rebuildViewsUsage = (): string =>
  `usage: ${commandLine('[--db <file>]')}\n` +
  "  Resets the views' derived tables of the journal database (--db, else DATABASE_URL, else DATA_DIR, DB_PATH) and rebuilds them\n" +
  '  from its journal, under the inbox name of the config (INTERLOCK_CONFIG). Stop the server first.\n' +
  '  Exit 0: done; 1: failed (the journal fails its checks); 2: refused (no such database, a bad config); 64: bad arguments.';

interface Streams {
  stdout: Writable;
  stderr: Writable;
}

/** The lines a rebuild prints: what was replayed, at what pace, and each table's digest. */
export function rebuiltLines(file: string, rebuilt: Rebuilt): string[] {
  const pace = rebuilt.seconds > 0 ? Math.round(rebuilt.entries / rebuilt.seconds) : rebuilt.entries;
  return [
    `${file}: rebuilt the views' derived tables from ${rebuilt.entries} journal entries in ${rebuilt.seconds.toFixed(2)} s (${pace} entries/s), under views version ${rebuilt.version}, cursor at seq ${rebuilt.seq}.`,
    ...(rebuilt.digests.length === 0 ? ['No rows.'] : rebuilt.digests.map((digest) => `  ${digest.view}: ${digest.rows} rows, digest ${digest.sum}`)),
  ];
}

/** Run it on command-line arguments (without `node` and the script path): its exit code. */
export async function runRebuildViewsCli(args: readonly string[], env: Readonly<Record<string, string | undefined>>, io: Streams): Promise<RebuildExitCode> {
  try {
    const { values, positionals } = asUsage(() =>
      parseArgs({ args: [...args], strict: true, allowPositionals: true, options: { db: { type: 'string' }, help: { type: 'boolean', short: 'h' } } }),
    );
    if (values.help === true) {
      io.stdout.write(`${rebuildViewsUsage()}\n`);
      return REBUILD_VIEWS_EXIT_CODES.ok;
    }
    if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
    const paths = parseEnv(env);
    // --db names a SQLite file, whatever the environment keeps; without it, the server's own storage.
    const place: StoragePlace = values.db === undefined ? storagePlace(paths) : { kind: 'sqlite', file: resolve(values.db) };
    const file = await placeName(place);
    if (place.kind === 'sqlite' && !existsSync(place.file)) {
      io.stderr.write(`refused: ${file}: no such journal database\n`);
      return REBUILD_VIEWS_EXIT_CODES.refused;
    }
    const { inboxName } = loadConfig(paths.configPath, env);
    const storage = await openServerStorage(place);
    try {
      const journal = storage.journal({ wallClockMs: () => Date.now() });
      const rebuilt = await rebuildViews({ journal, tables: storage.derived, inboxName });
      io.stdout.write(`${rebuiltLines(file, rebuilt).join('\n')}\n`);
      return REBUILD_VIEWS_EXIT_CODES.ok;
    } finally {
      await storage.close();
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`${error.message}\n${rebuildViewsUsage()}\n`);
      return REBUILD_VIEWS_EXIT_CODES.usage;
    }
    if (error instanceof EnvError || error instanceof ConfigError || isStorageStartRefusal(error)) {
      io.stderr.write(`refused: ${error.message}\n`);
      return REBUILD_VIEWS_EXIT_CODES.refused;
    }
    if (error instanceof JournalCorruptError) {
      io.stderr.write(`failed: journal corrupt at seq ${error.seq}, effect ${error.effectId}: ${error.message}; the tables hold what was rebuilt before it\n`);
      return REBUILD_VIEWS_EXIT_CODES.failed;
    }
    io.stderr.write(`failed: ${messageOf(error)}\n`);
    return REBUILD_VIEWS_EXIT_CODES.failed;
  }
}

if (isMainModule(import.meta.url)) process.exitCode = await runRebuildViewsCli(process.argv.slice(2), process.env, { stdout: process.stdout, stderr: process.stderr });
