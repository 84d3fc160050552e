import type { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { SchemaAheadError } from '../../db/schema-version.ts';
import { isStorageStartRefusal, migrateServerStorage, placeName, shippedMigrations, storageSchema } from '../../db/server-storage.ts';
import { asUsage, commandLine, isMainModule, messageOf, UsageError } from '../cli.ts';
import { EnvError, parseEnv, storagePlace } from '../config/env.ts';
import { INTERLOCK_VERSION } from '../journal/version.ts';

/**
 * `npm run migrate`: bring the journal database of the data folder (DATA_DIR, DB_PATH), or the
 * PostgreSQL database of DATABASE_URL (as the owner of DATABASE_MIGRATE_URL), to the schema this
 * Interlock knows, and nothing else; with --dry-run, list the migrations it would apply
 * and change nothing. A database a newer Interlock migrated is refused, as a start refuses it.
 */

/** How the command exits: 0 done, 2 refused (a database newer than this Interlock, a bad environment), 1 failed, 64 bad arguments. */
export const MIGRATE_EXIT_CODES = { ok: 0, failed: 1, refused: 2, usage: 64 } as const;
type MigrateExitCode = (typeof MIGRATE_EXIT_CODES)[keyof typeof MIGRATE_EXIT_CODES];

/** How to call it, by the command that started it. */
export const migrateUsage = (): string =>
  `usage: ${commandLine('[--dry-run]')}\n` +
  '  Applies the migrations the journal database (DATA_DIR, DB_PATH; or DATABASE_URL, as DATABASE_MIGRATE_URL) lacks,\n' +
  '  creating a SQLite file when missing. Stop the\n' +
  '  server and take a backup first. --dry-run lists them and changes nothing.\n' +
  '  Exit 0: done; 1: failed; 2: refused (the database is newer than this Interlock); 64: bad arguments.';

interface Streams {
  stdout: Writable;
  stderr: Writable;
}


const plural = (n: number) => `${n} migration${n === 1 ? '' : 's'}`;

/** Run it on command-line arguments (without `node` and the script path): its exit code. */
export async function runMigrateCli(args: readonly string[], env: Readonly<Record<string, string | undefined>>, io: Streams): Promise<MigrateExitCode> {
  try {
    const { values, positionals } = asUsage(() =>
      parseArgs({ args: [...args], strict: true, allowPositionals: true, options: { 'dry-run': { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } }),
    );
    if (values.help === true) {
      io.stdout.write(`${migrateUsage()}\n`);
      return MIGRATE_EXIT_CODES.ok;
    }
    if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
    const place = storagePlace(parseEnv(env));
    const dbPath = await placeName(place);
    const shipped = await shippedMigrations(place);
    const before = await storageSchema(place);
    if (before !== null && (before.unknown > 0 || before.schema > shipped.length)) throw new SchemaAheadError(before, shipped.length);
    const pending = shipped.slice(before?.schema ?? 0);
    const knows = `this Interlock (${INTERLOCK_VERSION}) knows schema ${shipped.length}`;
    const at = before === null ? `${dbPath}: no database yet` : `${dbPath}: schema ${before.schema}`;
    if (values['dry-run'] === true) {
      const lines = [`${at}; ${knows}.`, pending.length === 0 ? 'Nothing to apply.' : `${plural(pending.length)} to apply (dry run: none applied):`];
      io.stdout.write(`${[...lines, ...pending.map((tag) => `  ${tag}`)].join('\n')}\n`);
      return MIGRATE_EXIT_CODES.ok;
    }
    const after = await migrateServerStorage(place);
    const lines = [`${at}; ${knows}.`, pending.length === 0 ? 'Nothing to apply.' : `Applied ${plural(pending.length)}:`, ...pending.map((tag) => `  ${tag}`)];
    lines.push(`${dbPath} is at schema ${after.schema} (Interlock ${after.interlock ?? INTERLOCK_VERSION}).`);
    io.stdout.write(`${lines.join('\n')}\n`);
    return MIGRATE_EXIT_CODES.ok;
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`${error.message}\n${migrateUsage()}\n`);
      return MIGRATE_EXIT_CODES.usage;
    }
    if (error instanceof SchemaAheadError || error instanceof EnvError || isStorageStartRefusal(error)) {
      io.stderr.write(`refused: ${error.message}\n`);
      return MIGRATE_EXIT_CODES.refused;
    }
    io.stderr.write(`failed: ${messageOf(error)}\n`);
    return MIGRATE_EXIT_CODES.failed;
  }
}

if (isMainModule(import.meta.url)) process.exitCode = await runMigrateCli(process.argv.slice(2), process.env, { stdout: process.stdout, stderr: process.stderr });
