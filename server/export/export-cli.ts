import { existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { asUsage, commandLine, endQuietlyWhenPipeCloses, isMainModule, messageOf, UsageError } from '../cli.ts';
import { describeUrl } from '../config/check.ts';
import { EnvError, type InterlockEnv, parseEnv } from '../config/env.ts';
import { isStorageStartRefusal } from '../../db/server-storage.ts';
import { JournalCorruptError } from '../journal/store.ts';
import { type Destination, DestinationBusyError, fileDestination, otlpDestination, sentRecordPath, streamDestination } from './destinations.ts';
import { EXPORT_FORMATS, type ExportFormat, exportPeriod, lineIdsOf } from './export.ts';
import { EXIT_CODES, type ExitCode } from './limits.ts';
import { OtlpSendError } from './otlp.ts';
import { type ExportJournal, openExportJournal } from './journal-source.ts';
import { ExportInputError, type Period, readSigningKey } from './read-journal.ts';

/** How to call the exporter, by the command that started it; printed with every usage error. */
export const exportUsage = (): string =>
  `usage: ${commandLine('--format otlp|cef|ndjson --from <ISO or ms> --to <ISO or ms> [--out <file> | --endpoint <url>]')}\n` +
  "  Exports the receipts and decisions journaled from --from (inclusive) to --to (exclusive) from the server's\n" +
  '  journal (the SQLite file of DATA_DIR, DB_PATH, or the PostgreSQL database of DATABASE_URL), signed with its\n' +
  '  key (RECEIPT_KEY_PATH or the systemd credential when the server has one). Every receipt is verified; one that\n' +
  '  does not verify is exported with verified: false and why, and the command exits 2.\n' +
  '  --out       append to a file, skipping records it already holds (default: standard output)\n' +
  '  --endpoint  an OTLP/HTTP receiver (otlp only), e.g. http://127.0.0.1:4318; spans go to <url>/v1/traces\n' +
  '  Times: milliseconds since 1970, or ISO 8601 (2026-01-05, 2026-01-05T09:00:00Z, 2026-01-05T10:00:00+01:00).\n' +
  '  Exit 0: done; 2: done, some receipt does not verify; 1: the journal or the destination failed; 64: bad arguments; 66: no journal or key (a database not reached, or not at this schema).';

/** Where an export goes, read from the arguments. */
type Target = { kind: 'stdout' } | { kind: 'file'; path: string } | { kind: 'otlp'; url: URL };

/** The arguments, checked before anything is opened or written. */
export interface ExportArguments {
  format: ExportFormat;
  period: Period;
  target: Target;
}

const ISO_TIME = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:\d{2}))?$/;

/** A time argument in ms: whole milliseconds, or ISO 8601 with a zone when it has a time of day (a local time means a different instant on each machine). */
export function parseTime(name: string, value: string): number {
  if (/^\d{1,16}$/.test(value) && Number.isSafeInteger(Number(value))) return Number(value);
  const ms = ISO_TIME.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isFinite(ms) && ms >= 0) return ms;
  throw new UsageError(`--${name} must be milliseconds since 1970 or an ISO 8601 date or time with a zone (2026-01-05T09:00:00Z), not ${JSON.stringify(value)}`);
}

function parseEndpoint(value: string): URL {
  const url = URL.canParse(value) ? new URL(value) : null;
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.username !== '' || url.password !== '') {
    // Credentials and a query are never repeated back: what is printed ends up in mail and CI logs.
    throw new UsageError(`--endpoint must be an http:// or https:// URL with no credentials in it, not ${describeUrl(value)}`);
  }
  // An OTLP endpoint is a base URL; the traces signal has its own path under it, as OTEL_EXPORTER_OTLP_ENDPOINT works.
  if (!url.pathname.endsWith('/v1/traces')) url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1/traces`;
  // The URL is also the key of the record of what the endpoint holds: a fragment is never sent and
  // an empty query asks nothing, so neither may make the same endpoint a new one.
  url.hash = '';
  if (url.search === '') url.search = '';
  return url;
}

function parseOut(value: string): string {
  const path = resolve(value);
  const folder = dirname(path);
  if (!existsSync(folder) || !statSync(folder).isDirectory()) throw new UsageError(`--out ${value}: the folder ${folder} does not exist`);
  if (existsSync(path) && !statSync(path).isFile()) throw new UsageError(`--out ${value} is not a file`);
  return path;
}

/** Read and check the arguments (without `node` and the script path); null for --help. */
export function readExportArguments(args: readonly string[]): ExportArguments | null {
  const { values } = asUsage(() =>
    parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: false,
      options: { format: { type: 'string' }, from: { type: 'string' }, to: { type: 'string' }, out: { type: 'string' }, endpoint: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    }),
  );
  if (values.help === true) return null;
  const format = EXPORT_FORMATS.find((known) => known === values.format);
  if (format === undefined) throw new UsageError(`--format must be one of ${EXPORT_FORMATS.join(', ')}${values.format === undefined ? '' : `, not ${JSON.stringify(values.format)}`}`);
  if (values.from === undefined || values.to === undefined) throw new UsageError('--from and --to are both required');
  const period = { fromMs: parseTime('from', values.from), toMs: parseTime('to', values.to) };
  if (period.fromMs >= period.toMs) throw new UsageError('--from must be before --to');
  if (values.out !== undefined && values.endpoint !== undefined) throw new UsageError('give --out or --endpoint, not both');
  if (values.endpoint !== undefined && format !== 'otlp') throw new UsageError('--endpoint takes OTLP spans only (--format otlp); write cef and ndjson to --out');
  if (values.endpoint !== undefined) return { format, period, target: { kind: 'otlp', url: parseEndpoint(values.endpoint) } };
  if (values.out !== undefined) return { format, period, target: { kind: 'file', path: parseOut(values.out) } };
  return { format, period, target: { kind: 'stdout' } };
}

async function openDestination(args: ExportArguments, dataDir: string, stdout: Writable): Promise<Destination> {
  switch (args.target.kind) {
    case 'stdout':
      return streamDestination(stdout);
    case 'file':
      return fileDestination(args.target.path, lineIdsOf(args.format));
    case 'otlp':
      return otlpDestination(args.target.url, sentRecordPath(dataDir, args.target.url));
  }
}

/** Run the exporter: data to `stdout` (when no --out or --endpoint), what happened to `stderr`, and the exit code. */
export async function runExportCli(args: readonly string[], env: Readonly<Record<string, string | undefined>>, io: { stdout: Writable; stderr: Writable }): Promise<ExitCode> {
  const say = (text: string) => io.stderr.write(`${text}\n`);
  let parsed: ExportArguments | null;
  let paths: InterlockEnv;
  try {
    parsed = readExportArguments(args);
    if (parsed === null) {
      io.stdout.write(`${exportUsage()}\n`);
      return EXIT_CODES.ok;
    }
    paths = parseEnv(env);
  } catch (error) {
    if (!(error instanceof UsageError || error instanceof EnvError)) throw error;
    say(`export: ${error.message}\n${exportUsage()}`);
    return EXIT_CODES.usage;
  }
  let journal: ExportJournal | null = null;
  try {
    const key = readSigningKey(paths);
    // Each receipt's own chain is verified as it is read; the journal as a whole (the global chain,
    // its checkpoints and epochs) is held first as start-up holds it, so a chain rewritten and
    // rehashed by someone without the key is not exported as verified under a fresh signature.
    journal = await openExportJournal(paths, key);
    const { journalProblem } = journal;
    if (journalProblem !== null) say(`export: the journal fails the check start-up makes (${journalProblem}); no receipt is exported as verified`);
    const destination = await openDestination(parsed, paths.dataDir, io.stdout);
    const summary = await exportPeriod({ journal: journal.source, key, period: parsed.period, format: parsed.format, destination, journalProblem });
    // An endpoint is named by origin and path, as every failure names it: a query may carry the receiver's key.
    const where = parsed.target.kind === 'stdout' ? 'standard output' : parsed.target.kind === 'file' ? parsed.target.path : `${parsed.target.url.origin}${parsed.target.url.pathname}`;
    say(`export: ${summary.receipts} receipts and ${summary.decisions} decisions as ${parsed.format}; ${summary.written} records written to ${where}, ${summary.offered - summary.written} already there`);
    if (summary.unverifiedCount === 0) return EXIT_CODES.ok;
    for (const { effectId, problems } of summary.unverified) say(`export: receipt ${effectId} does not verify: ${problems.join('; ')}`);
    const more = summary.unverifiedCount - summary.unverified.length;
    if (more > 0) say(`export: and ${more} more receipts do not verify (each row says why)`);
    return EXIT_CODES.unverified;
  } catch (error) {
    if (error instanceof ExportInputError || isStorageStartRefusal(error)) {
      say(`export: ${error.message}`);
      return EXIT_CODES.noInput;
    }
    if (error instanceof JournalCorruptError) {
      say(`export: journal_damaged: ${error.message}; nothing after it was exported`);
      return EXIT_CODES.failed;
    }
    if (error instanceof DestinationBusyError) {
      say(`export: ${error.message}`);
      return EXIT_CODES.failed;
    }
    if (error instanceof OtlpSendError) {
      say(`export: ${error.message}; nothing of that batch is recorded as sent, so running the export again sends it again`);
      return EXIT_CODES.failed;
    }
    throw error;
  } finally {
    await journal?.close();
  }
}

if (isMainModule(import.meta.url)) {
  endQuietlyWhenPipeCloses(process.stdout);
  try {
    process.exitCode = await runExportCli(process.argv.slice(2), process.env, { stdout: process.stdout, stderr: process.stderr });
  } catch (error) {
    process.stderr.write(`export failed: ${messageOf(error)}\n`);
    process.exitCode = EXIT_CODES.failed;
  }
}
