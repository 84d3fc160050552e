import { createReadStream, createWriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import type { StoredCheckpoint } from '../../db/port/checkpoints.ts';
import type { JournalTail } from '../../db/port/journal-file.ts';
import type { TailEntry, TailTables } from '../../db/port/journal-tail.ts';
import type { GrantRow } from '../../db/schema.ts';
import { isJsonObject, type JsonObject } from '../../shared/json.ts';
import { BackupError } from './manifest.ts';

// The increment's one data file: gzipped NDJSON, the small tables on the first line
// (`{"tables": …}`), then one line per entry after the base (`{"entry": …}`) in seq order, each
// with its seal. Written as it is read, so memory holds one batch of the journal's tail.

/** Write the tail to `file` (made beforehand, owner only): the number of entries it carries. */
export async function writeIncrementFile(file: string, tail: JournalTail): Promise<number> {
  let carried = 0;
  async function* lines(): AsyncGenerator<string> {
    yield `${JSON.stringify({ tables: tail.tables })}\n`;
    for await (const batch of tail.entries) {
      carried += batch.length;
      yield batch.map((entry) => `${JSON.stringify({ entry })}\n`).join('');
    }
  }
  await pipeline(Readable.from(lines()), createGzip(), createWriteStream(file, { flags: 'r+' }));
  return carried;
}

/** What an increment file holds, read as a stream: the tables, then the entries in batches. */
export interface IncrementContents {
  tables: TailTables;
  entries: AsyncIterable<readonly TailEntry[]>;
}

/** Entries handed over at a time when reading an increment. */
const BATCH_ENTRIES = 1_000;

/** Read an increment file (whose sha256 was checked); a line of another shape is a BackupError naming it. */
export async function readIncrementFile(file: string): Promise<IncrementContents> {
  const lines = createInterface({ input: createReadStream(file).pipe(createGunzip()), crlfDelay: Number.POSITIVE_INFINITY })[Symbol.asyncIterator]();
  let tables: TailTables | null;
  try {
    const first = await lines.next();
    tables = first.done === true ? null : tablesOf(parseLine(file, 1, first.value).tables);
    if (tables === null) throw new BackupError(`${file} does not begin with the small tables an increment carries`);
  } catch (error) {
    await lines.return?.();
    throw error;
  }
  async function* entries(): AsyncGenerator<readonly TailEntry[]> {
    let batch: TailEntry[] = [];
    try {
      for (let number = 2; ; number++) {
        const next = await lines.next();
        if (next.done === true) break;
        const entry = entryOf(parseLine(file, number, next.value).entry);
        if (entry === null) throw new BackupError(`${file} line ${number} is not an entry of the journal as an increment carries it`);
        batch.push(entry);
        if (batch.length < BATCH_ENTRIES) continue;
        yield batch;
        batch = [];
      }
    } finally {
      // Stopped early (a refused entry), the file is closed all the same.
      await lines.return?.();
    }
    if (batch.length > 0) yield batch;
  }
  return { tables, entries: entries() };
}

function parseLine(file: string, number: number, line: string): JsonObject {
  try {
    const value: unknown = JSON.parse(line);
    if (isJsonObject(value)) return value;
  } catch {
    // Said below.
  }
  throw new BackupError(`${file} line ${number} is not a JSON object`);
}

const isText = (value: unknown): value is string => typeof value === 'string';
const isWhole = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value);
const isTextOrNull = (value: unknown): value is string | null => value === null || isText(value);
const isWholeOrNull = (value: unknown): value is number | null => value === null || isWhole(value);

function entryOf(value: unknown): TailEntry | null {
  if (!isJsonObject(value)) return null;
  const { seq, effectId, kind, prev, hash, closes, tsMs, body, reserves, globalHash } = value;
  if (!isWhole(seq) || !isText(effectId) || !isText(kind) || !isTextOrNull(prev) || !isText(hash) || !isWhole(closes) || !isWhole(tsMs)) return null;
  if (!isText(body) || !isTextOrNull(reserves) || !isText(globalHash)) return null;
  return { seq, effectId, kind, prev, hash, closes, tsMs, body, reserves, globalHash };
}

function tablesOf(value: unknown): TailTables | null {
  if (!isJsonObject(value) || !Array.isArray(value.meta) || !Array.isArray(value.checkpoints) || !Array.isArray(value.grants)) return null;
  const meta: TailTables['meta'] = [];
  for (const row of value.meta) {
    if (!isJsonObject(row) || !isText(row.name) || !isText(row.value)) return null;
    meta.push({ name: row.name, value: row.value });
  }
  const checkpoints: StoredCheckpoint[] = [];
  for (const row of value.checkpoints) {
    if (!isJsonObject(row) || !isWhole(row.id) || !isWhole(row.epoch) || !isWhole(row.size) || !isText(row.head) || !isText(row.note) || !isWhole(row.signedAtMs)) return null;
    checkpoints.push({ id: row.id, epoch: row.epoch, size: row.size, head: row.head, note: row.note, signedAtMs: row.signedAtMs });
  }
  const grants: GrantRow[] = [];
  for (const row of value.grants) {
    if (!isJsonObject(row) || !isText(row.leaseId) || !isWholeOrNull(row.maxCents) || !isWholeOrNull(row.expiresAtMs) || !isWhole(row.grantedAtMs) || !isWholeOrNull(row.revokedAtMs)) return null;
    grants.push({ leaseId: row.leaseId, maxCents: row.maxCents, expiresAtMs: row.expiresAtMs, grantedAtMs: row.grantedAtMs, revokedAtMs: row.revokedAtMs });
  }
  return { meta, checkpoints, grants };
}
