import { resolve } from 'node:path';
import { SchemaAheadError } from '../../db/schema-version.ts';
import type { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { asUsage, commandLine, isMainModule, messageOf, UsageError } from '../cli.ts';
import { ConfigError } from '../config/load.ts';
import { EnvError, parseEnv } from '../config/env.ts';
import { PG_BACKUP_INSTEAD, refuseOnPostgres } from '../app/file-tools.ts';
import { StoreUnsupportedError } from '../../db/port/errors.ts';
import { SigningKeyError } from '../receipts/keys.ts';
import { takeBackup } from './backup.ts';
import { takeIncrement } from './increment.ts';
import { INCREMENT_FORMAT } from './increment-manifest.ts';
import { BackupError } from './manifest.ts';
import { RESTORE_LOSES, restoreBackup } from './restore.ts';
import { type InPlaceResult, restoreInPlace } from './restore-in-place.ts';
import type { RestoreFindings } from './restore-plan.ts';
import { isStorageStartRefusal } from '../../db/server-storage.ts';

/** How the backup and restore commands end. */
export const BACKUP_EXIT_CODES = { ok: 0, failed: 1, refused: 2, usage: 64 } as const;
/** One exit code of the backup and restore commands. */
export type BackupExitCode = (typeof BACKUP_EXIT_CODES)[keyof typeof BACKUP_EXIT_CODES];

/** How to take a backup, by the command that started this tool. */
export const backupUsage = (): string =>
  `usage: ${commandLine('<dir> [--since <earlier backup>] [--with-key]', 'backup')}\n` +
  "  SQLite's online backup of the journal (DATA_DIR, DB_PATH) into <dir> (new or empty), safe while the server\n" +
  '  runs, with the config (INTERLOCK_CONFIG) and manifest.json (journal id, last seq, global chain head, time,\n' +
  '  every file and its sha256).\n' +
  '  --since <dir>  an increment instead: only the entries after that backup (full or increment) and the small\n' +
  "                 tables, its manifest naming that backup; a restore of it reads that backup's folder too\n" +
  '  --with-key  also copy the receipt signing key (warned about: whoever reads the backup can then sign receipts)\n' +
  '  Exit 0: done; 1: failed; 2: refused (the folder is not empty, no journal, the earlier backup does not check\n' +
  '  or is not of this journal); 64: bad arguments.';

/** How to restore one, by the command that started this tool. */
export const restoreUsage = (): string =>
  `usage: ${commandLine('<dir> [--replace]', 'restore')}\n` +
  `       ${commandLine('--in-place', 'restore')}\n` +
  '  Restores the backup in <dir> as the journal of the configured data folder (DATA_DIR, DB_PATH), then asks Stripe\n' +
  '  for every refund since the backup point: refunds the backup does not know are journaled as committed, so they\n' +
  '  are never sent twice, and a new epoch begins naming them. Stop the server first; start it afterwards.\n' +
  '  An increment (backup --since) is restored with its chain: the full backup and each increment up to it, every\n' +
  '  link checked before anything is written.\n' +
  '  --replace   put a journal already there aside (as <db>.before-restore-<ms>) instead of refusing\n' +
  '  --in-place  PostgreSQL: the database DATABASE_URL names was restored with pg_restore (or from a base backup);\n' +
  "              run Interlock's own steps on it: Stripe asked since its newest entry, the refunds it lacks journaled\n" +
  '              as committed and the new epoch, in one transaction (a restore cut short changes nothing; run it\n' +
  '              again). Refused while an Interlock server is connected to the database, or when it is not at this\n' +
  "              Interlock's schema (schema_behind, schema_ahead) or fails the check a server makes at start.\n" +
  '  The last line says what happened: "restore done: ...", "restore refused: ..." or "restore failed: ...".\n' +
  '  Exit 0: done; 2: not done (refused: a journal is there, a server has it open, the backup does not check; or failed); 64: bad arguments.';

interface Streams {
  stdout: Writable;
  stderr: Writable;
}

type Env = Readonly<Record<string, string | undefined>>;

/** The restore's backup folder and --replace, or --in-place (no folder); null for --help. */
function readRestoreArguments(args: readonly string[]): { dir: string; replace: boolean } | { inPlace: true } | null {
  const { values, positionals } = asUsage(() =>
    parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: true,
      options: { replace: { type: 'boolean' }, 'in-place': { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    }),
  );
  if (values.help === true) return null;
  if (values['in-place'] === true) {
    if (positionals.length > 0 || values.replace === true) throw new UsageError('--in-place restores the database DATABASE_URL names: give no backup folder and no --replace');
    return { inPlace: true };
  }
  if (positionals.length !== 1) throw new UsageError('name one backup folder');
  return { dir: resolve(positionals[0]!), replace: values.replace === true };
}

/** The backup command's folder, its earlier backup with --since (null for a full one), and --with-key; null for --help. */
function readBackupArguments(args: readonly string[]): { dir: string; since: string | null; withKey: boolean } | null {
  const { values, positionals } = asUsage(() =>
    parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: true,
      options: { since: { type: 'string' }, 'with-key': { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    }),
  );
  if (values.help === true) return null;
  if (positionals.length !== 1) throw new UsageError('name one backup folder');
  if (values.since === '') throw new UsageError('--since names the earlier backup folder');
  return { dir: resolve(positionals[0]!), since: values.since === undefined ? null : resolve(values.since), withKey: values['with-key'] === true };
}

/** `npm run backup`: its exit code. */
export async function runBackupCli(args: readonly string[], env: Env, io: Streams): Promise<BackupExitCode> {
  return run(io, BACKUP_COMMAND, async () => {
    const read = readBackupArguments(args);
    if (read === null) return 'help';
    const parsed = parseEnv(env);
    refuseOnPostgres(parsed, read.since === null ? 'npm run backup' : 'npm run backup -- --since', PG_BACKUP_INSTEAD);
    const options = { env: parsed, dir: read.dir, withKey: read.withKey };
    const { manifest, warnings } = read.since === null ? await takeBackup(options) : await takeIncrement({ ...options, since: read.since });
    for (const warning of warnings) io.stderr.write(`warning: ${warning}\n`);
    const { point } = manifest;
    const what = manifest.format === INCREMENT_FORMAT ? `increment since ${read.since} (${manifest.carried} entries after seq ${manifest.base.last_seq})` : 'backup';
    io.stdout.write(
      `${what} in ${read.dir}: journal ${point.journal_id ?? '(no id yet)'}, ${point.entries} entries to seq ${point.last_seq}, ` +
        `global head ${point.global_head ?? '(none)'}, taken ${new Date(manifest.taken_at_ms).toISOString()}; files: ${Object.values(manifest.files)
          .map((f) => f.name)
          .join(', ')}\n`,
    );
    return 'done';
  });
}

/** `npm run restore`: its exit code. */
export async function runRestoreCli(args: readonly string[], env: Env, io: Streams): Promise<BackupExitCode> {
  return run(io, RESTORE_COMMAND, async () => {
    const read = readRestoreArguments(args);
    if (read === null) return 'help';
    const parsed = parseEnv(env);
    if ('inPlace' in read) {
      io.stdout.write(`${inPlaceLines(await restoreInPlace({ env: parsed })).join('\n')}\n`);
      return 'done';
    }
    refuseOnPostgres(parsed, 'npm run restore -- <dir>', 'restore the database with pg_restore (or from a base backup and its WAL), then run npm run restore -- --in-place (see docs/operators/postgresql.md)');
    const result = await restoreBackup({ env: parsed, dir: read.dir, replace: read.replace });
    const { findings } = result;
    for (const warning of result.warnings) io.stderr.write(`warning: ${warning}\n`);
    const lines = [
      ...(result.chain.length === 1 ? [] : [`the chain: ${result.chain.join(' <- ')}`]),
      `restored ${read.dir} (taken ${new Date(result.manifest.taken_at_ms).toISOString()}, ${findings.backup.entries} entries to seq ${findings.backup.last_seq}); epoch ${result.epoch} begins.`,
      ...(result.replacedTo === null ? [] : [`the journal that was there is kept as ${result.replacedTo}`]),
      ...findingsLines(findings),
      `restore done: ${parsed.dbPath} is the journal restored, epoch ${result.epoch}; start the server.`,
    ];
    io.stdout.write(`${lines.join('\n')}\n`);
    return 'done';
  });
}

/** What a restore found at Stripe and what it loses, as both restores say it. */
function findingsLines(findings: RestoreFindings): string[] {
  return [
    `Stripe, since ${new Date(findings.listed_since_ms).toISOString()}: ${findings.refunds_listed} refunds, ${findings.refunds_ours} sent by Interlock; ` +
      `${findings.refunds_not_in_backup.length} of them not in the backup, now journaled as committed:`,
    ...findings.refunds_not_in_backup.map((r) => `  ${r.effect_id}  ${r.refund}  ${r.amount} ${r.currency}  ${r.payment_intent}  ${r.status}`),
    ...(findings.refunds_ambiguous_in_backup.length === 0 ? [] : [`${findings.refunds_ambiguous_in_backup.length} refunds are AMBIGUOUS in the backup and stay so for a person: ${findings.refunds_ambiguous_in_backup.map((r) => r.effect_id).join(', ')}`]),
    'What a restore loses:',
    ...RESTORE_LOSES.map((line) => `  - ${line}`),
    `Receipts issued after the backup, by effect id: ${findings.receipts_after_backup.length === 0 ? '(none found)' : findings.receipts_after_backup.join(', ')}`,
  ];
}

/** What a restore in place says it did, its last line first of all "restore done". */
function inPlaceLines(result: InPlaceResult): string[] {
  const { point } = result;
  return [
    `restored in place: ${result.location} (${point.entries} entries to seq ${point.last_seq}, the newest stamped ${new Date(point.taken_at_ms).toISOString()}); epoch ${result.epoch} begins.`,
    ...findingsLines(result.findings),
    `restore done: ${result.location} is the journal restored, epoch ${result.epoch}; start the servers.`,
  ];
}

/** What a command is called, its usage, and how it ends when something unexpected stops it. */
interface Command {
  name: 'backup' | 'restore';
  usage: () => string;
  failed: BackupExitCode;
}

const BACKUP_COMMAND: Command = { name: 'backup', usage: backupUsage, failed: BACKUP_EXIT_CODES.failed };
/** A restore ends 0 or 2 whatever stops it: either the journal is restored, or it is not. */
const RESTORE_COMMAND: Command = { name: 'restore', usage: restoreUsage, failed: BACKUP_EXIT_CODES.refused };

/**
 * Run a command: print its usage for --help or a bad argument, and otherwise end with one line that
 * says what happened (the stack of an unexpected error before it); its exit code.
 */
async function run(io: Streams, command: Command, work: () => Promise<'help' | 'done'>): Promise<BackupExitCode> {
  try {
    if ((await work()) === 'help') {
      io.stdout.write(`${command.usage()}\n`);
    }
    return BACKUP_EXIT_CODES.ok;
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`${error.message}\n${command.usage()}\n`);
      return BACKUP_EXIT_CODES.usage;
    }
    if ([BackupError, EnvError, ConfigError, SigningKeyError, SchemaAheadError, StoreUnsupportedError].some((kind) => error instanceof kind) || isStorageStartRefusal(error)) {
      io.stderr.write(`${command.name} refused: ${messageOf(error)}\n`);
      return BACKUP_EXIT_CODES.refused;
    }
    if (error instanceof Error && error.stack !== undefined) io.stderr.write(`${error.stack}\n`);
    io.stderr.write(`${command.name} failed: ${messageOf(error)}\n`);
    return command.failed;
  }
}

/**
 * Run the command named by argv[2] as the process: its last line and exit code. Should the event
 * loop empty while the command still waits (work waiting on something nothing is left to
 * settle), the process does not end in silence with Node's exit 13: it says so, exit 2.
 */
async function main(): Promise<void> {
  const command = process.argv[2] === 'restore' ? RESTORE_COMMAND : BACKUP_COMMAND;
  let finished = false;
  process.once('beforeExit', () => {
    if (finished) return;
    process.stderr.write(`${command.name} failed: it stopped while waiting on work that nothing was left to finish\n`);
    process.exitCode = BACKUP_EXIT_CODES.refused;
  });
  const runCommand = command.name === 'restore' ? runRestoreCli : runBackupCli;
  const code = await runCommand(process.argv.slice(3), process.env, { stdout: process.stdout, stderr: process.stderr });
  finished = true;
  process.exitCode = code;
}

if (isMainModule(import.meta.url)) await main();
