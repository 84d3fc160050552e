import type { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { knownMigrations, knownSchema, SchemaAheadError, schemaOnDisk } from '../../db/schema-version.ts';
import { migrateStorage } from '../../db/sqlite-storage.ts';
import { asUsage, commandLine, isMainModule, messageOf, UsageError } from '../cli.ts';
import { EnvError, parseEnv } from '../config/env.ts';
import { INTERLOCK_VERSION } from '../journal/version.ts';

/**
 * `npm run migrate`: bring the journal database of the data folder (DATA_DIR, DB_PATH) to the
 * schema this Interlock knows, and nothing else; with --dry-run, list the migrations it would apply
 * and change nothing. A database a newer Interlock migrated is refused, as a start refuses it.
 */

/** How the command exits: 0 done, 2 refused (a database newer than this Interlock, a bad environment), 1 failed, 64 bad arguments. */
export const MIGRATE_EXIT_CODES = { ok: 0, failed: 1, refused: 2, usage: 64 } as const;
type MigrateExitCode = (typeof MIGRATE_EXIT_CODES)[keyof typeof MIGRATE_EXIT_CODES];

/** How to call it, by the command that started it. */
export const migrateUsage = (): string =>
  `usage: ${commandLine('[--dry-run]')}\n` +
  '  Applies the migrations the journal database (DATA_DIR, DB_PATH) lacks, creating it when missing. Stop the\n' +
  '  server and take a backup first. --dry-run lists them and changes nothing.\n' +
  '  Exit 0: done; 1: failed; 2: refused (the database is newer than this Interlock); 64: bad arguments.';

interface Streams {
  stdout: Writable;
  stderr: Writable;
}

/** The migrations a database at `schema` lacks, by name. */
const pendingFrom = (schema: number) => knownMigrations().slice(schema).map((migration) => migration.tag);

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
    const { dbPath } = parseEnv(env);
    const before = schemaOnDisk(dbPath);
    if (before !== null && (before.unknown > 0 || before.schema > knownSchema())) throw new SchemaAheadError(before);
    const pending = pendingFrom(before?.schema ?? 0);
    const knows = `this Interlock (${INTERLOCK_VERSION}) knows schema ${knownSchema()}`;
    const at = before === null ? `${dbPath}: no database yet` : `${dbPath}: schema ${before.schema}`;
    if (values['dry-run'] === true) {
      const lines = [`${at}; ${knows}.`, pending.length === 0 ? 'Nothing to apply.' : `${plural(pending.length)} to apply (dry run: none applied):`];
      io.stdout.write(`${[...lines, ...pending.map((tag) => `  ${tag}`)].join('\n')}\n`);
      return MIGRATE_EXIT_CODES.ok;
    }
    const after = await migrateStorage(dbPath);
    const lines = [`${at}; ${knows}.`, pending.length === 0 ? 'Nothing to apply.' : `Applied ${plural(pending.length)}:`, ...pending.map((tag) => `  ${tag}`)];
    lines.push(`${dbPath} is at schema ${after.schema} (Interlock ${after.interlock ?? INTERLOCK_VERSION}).`);
    io.stdout.write(`${lines.join('\n')}\n`);
    return MIGRATE_EXIT_CODES.ok;
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`${error.message}\n${migrateUsage()}\n`);
      return MIGRATE_EXIT_CODES.usage;
    }
    if (error instanceof SchemaAheadError || error instanceof EnvError) {
      io.stderr.write(`refused: ${error.message}\n`);
      return MIGRATE_EXIT_CODES.refused;
    }
    io.stderr.write(`failed: ${messageOf(error)}\n`);
    return MIGRATE_EXIT_CODES.failed;
  }
}

if (isMainModule(import.meta.url)) process.exitCode = await runMigrateCli(process.argv.slice(2), process.env, { stdout: process.stdout, stderr: process.stderr });
