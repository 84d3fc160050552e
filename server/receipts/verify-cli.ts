import { createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { asUsage, commandLine, endQuietlyWhenPipeCloses, isMainModule, messageOf, UsageError } from '../cli.ts';
import { isStorageStartRefusal, openPgToolStorage } from '../../db/server-storage.ts';
import { type JournalReport, verifyJournalFile, verifyStorage } from '../integrity/verify-journal.ts';
import { keyIdFor, parsePublicKeySet } from './keys.ts';
import { type ReceiptKeys, verifyReceipt } from './verify.ts';

/** How to call the verifier, by the command that started it; printed with every usage error. */
export const verifyUsage = (): string =>
  `usage: ${commandLine('<receipt.json> [--key <public-key.pem> | --keys <interlock-keys.json>]')}\n` +
  '  Verifies a receipt offline and prints the report as JSON. Exit 0: valid; 1: not valid; 2: usage error.\n' +
  '  --key   a PEM public key (receipt-signing-key.pub.pem)\n' +
  '  --keys  the JSON served at /.well-known/interlock-keys\n' +
  '  Without a key the chain is still checked, but entries cut off the end cannot be detected.\n' +
  `       ${commandLine('--journal <interlock.sqlite> [--key <public-key.pem> [--checkpoint <note>]]')}\n` +
  '  Checks a journal database offline and read-only, the way start-up does (guards, every entry, both\n' +
  '  chains, its epochs and newest stored checkpoint, their signatures with --key), and with\n' +
  '  --checkpoint that it holds everything the signed checkpoint covers. Exit 0: valid; 1: not.\n' +
  `       ${commandLine('--database [--key <public-key.pem> [--checkpoint <note>]]')}\n` +
  '  The same check of the PostgreSQL database DATABASE_URL names, read-only (nothing written, never migrated).\n' +
  '  Exit 2 when it cannot be reached or is not at this Interlock\'s schema.';

/** What one run of the verifier prints and how it exits. */
export interface CliOutcome {
  exitCode: 0 | 1 | 2;
  stdout: string;
  stderr: string;
}

/** Run the verifier on command-line arguments (without `node` and the script path); `env` gives DATABASE_URL for --database (the process's own when run as `npm run verify`). */
export async function runVerifyCli(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<CliOutcome> {
  try {
    if (args.includes('--journal') || args.includes('--database')) return await runJournalMode(args, env);
    const { receiptPath, keys } = readArguments(args);
    if (receiptPath === null) return { exitCode: 0, stdout: `${verifyUsage()}\n`, stderr: '' };
    const receipt = readJsonFile(receiptPath, 'receipt');
    const report = await verifyReceipt(receipt, keys);
    return { exitCode: report.valid ? 0 : 1, stdout: `${JSON.stringify(report, null, 2)}\n`, stderr: '' };
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    return { exitCode: 2, stdout: '', stderr: `verify: ${error.message}\n${verifyUsage()}\n` };
  }
}

/** `--journal <file> | --database`, `[--checkpoint <note> --key <pem>]`: the journal check, as JSON. */
async function runJournalMode(args: readonly string[], env: NodeJS.ProcessEnv): Promise<CliOutcome> {
  const { values, positionals } = asUsage(() =>
    parseArgs({
      args: [...args],
      allowPositionals: true,
      strict: true,
      options: { journal: { type: 'string' }, database: { type: 'boolean' }, checkpoint: { type: 'string' }, key: { type: 'string' } },
    }),
  );
  const mode = values.database === true ? '--database' : '--journal';
  if (positionals.length > 0) throw new UsageError(`${mode} takes no receipt file, got ${positionals.join(' ')}`);
  if (values.database === true && values.journal !== undefined) throw new UsageError('give --journal <file> or --database, not both');
  if (values.checkpoint !== undefined && values.key === undefined) throw new UsageError('--checkpoint needs --key, the public key it was signed with');
  let against: { note?: string; publicKeyPem: string; keyId: string } | undefined;
  if (values.key !== undefined) {
    const publicKeyPem = readPemKey(values.key);
    against = { publicKeyPem, keyId: keyIdFor(createPublicKey(publicKeyPem)) };
    if (values.checkpoint !== undefined) against.note = noteOf(readTextFile(values.checkpoint, 'checkpoint'));
  }
  const checked = values.database === true ? await verifyDatabase(env, against) : { report: await verifyJournalFile(values.journal ?? '', against) };
  if ('refusal' in checked) return { exitCode: 2, stdout: '', stderr: `verify: ${checked.refusal}\n` };
  const { report } = checked;
  return { exitCode: report.valid ? 0 : 1, stdout: `${JSON.stringify(report, null, 2)}\n`, stderr: '' };
}

/**
 * The check of the PostgreSQL database DATABASE_URL names, opened as it is (never migrated), or why
 * it was not made: the database cannot be reached or is not at this Interlock's schema.
 */
async function verifyDatabase(
  env: NodeJS.ProcessEnv,
  against: { note?: string; publicKeyPem: string; keyId: string } | undefined,
): Promise<{ report: JournalReport } | { refusal: string }> {
  const url = env.DATABASE_URL ?? '';
  if (url === '') throw new UsageError('--database checks the PostgreSQL database DATABASE_URL names, and it is not set; a SQLite journal is checked with --journal <file>');
  let opened: Awaited<ReturnType<typeof openPgToolStorage>>;
  try {
    opened = await openPgToolStorage({ url, tool: 'verify' });
  } catch (error) {
    if (!isStorageStartRefusal(error)) throw error;
    return { refusal: messageOf(error) };
  }
  try {
    return { report: await verifyStorage(opened.storage, opened.storage.location, against) };
  } finally {
    await opened.storage.close();
  }
}

/**
 * The signed note in a checkpoint file: the note itself, the JSON `GET /.well-known/interlock-checkpoint`
 * answers, or a file mirror (one JSON line a checkpoint; the last whole one).
 */
function noteOf(text: string): string {
  if (!text.trimStart().startsWith('{')) return text;
  for (const line of text.split('\n').reverse()) {
    try {
      const parsed: unknown = JSON.parse(line);
      if (typeof parsed === 'object' && parsed !== null && 'note' in parsed && typeof parsed.note === 'string') return parsed.note;
    } catch {
      // Not a whole JSON line: the text as a whole may be one JSON document.
    }
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null && 'note' in parsed && typeof parsed.note === 'string') return parsed.note;
  } catch {
    // Not JSON at all.
  }
  throw new UsageError('the checkpoint file holds no signed note');
}

/** The receipt path (null for --help) and the verification keys the arguments name. */
function readArguments(args: readonly string[]): { receiptPath: string | null; keys?: ReceiptKeys } {
  const parsed = asUsage(() =>
    parseArgs({ args: [...args], allowPositionals: true, strict: true, options: { key: { type: 'string' }, keys: { type: 'string' }, help: { type: 'boolean', short: 'h' } } }),
  );
  const { values, positionals } = parsed;
  if (values.help === true) return { receiptPath: null };
  if (positionals.length !== 1) throw new UsageError(`expected one receipt file, got ${positionals.length}`);
  if (values.key !== undefined && values.keys !== undefined) throw new UsageError('give --key or --keys, not both');
  const receiptPath = positionals[0] ?? '';
  if (values.key !== undefined) return { receiptPath, keys: readPemKey(values.key) };
  if (values.keys !== undefined) {
    try {
      return { receiptPath, keys: parsePublicKeySet(readJsonFile(values.keys, 'key set')) };
    } catch (error) {
      if (error instanceof UsageError) throw error;
      throw new UsageError(`${values.keys} is not a usable key set: ${messageOf(error)}`);
    }
  }
  return { receiptPath };
}

/** The PEM text of a public key file, read by Node first so a bad file is a usage error that says why. */
function readPemKey(path: string): string {
  const pem = readTextFile(path, 'key');
  try {
    // Any public key form Node reads (PKCS#1, a certificate's key) becomes the SPKI PEM the verifier takes.
    return createPublicKey(pem).export({ type: 'spki', format: 'pem' }).toString();
  } catch (error) {
    throw new UsageError(`${path} is not a PEM public key: ${messageOf(error)}`);
  }
}

function readJsonFile(path: string, what: string): unknown {
  const text = readTextFile(path, what);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${what} file ${path} is not JSON: ${messageOf(error)}`);
  }
}

function readTextFile(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${what} file ${path}: ${messageOf(error)}`);
  }
}

if (isMainModule(import.meta.url)) {
  endQuietlyWhenPipeCloses(process.stdout);
  const outcome = await runVerifyCli(process.argv.slice(2), process.env);
  process.stdout.write(outcome.stdout);
  process.stderr.write(outcome.stderr);
  process.exitCode = outcome.exitCode;
}
