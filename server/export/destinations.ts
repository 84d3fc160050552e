import { createHash, randomUUID } from 'node:crypto';
import {
  appendFileSync,
  closeSync,
  copyFileSync,
  createReadStream,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Writable } from 'node:stream';
import { exportLimits } from './limits.ts';
import { type OtlpSpan, postSpans } from './otlp.ts';

/** One exported record in a format: its id, its line, and for OTLP its span. */
export interface ExportUnit {
  id: string;
  line: string;
  span?: OtlpSpan;
}

/** Where an export goes. `write` may skip a unit the destination already holds; it answers whether it wrote it. */
export interface Destination {
  write(unit: ExportUnit): Promise<boolean>;
  /** Make everything written durable and visible. */
  finish(): Promise<void>;
  /** Leave the destination as it was before the export (what was already sent stays sent). */
  abort(): void;
}

/** Another export holds the destination: this one wrote and sent nothing. */
export class DestinationBusyError extends Error {}

/**
 * Hold a destination for this process alone until the answer is called: a lock file created
 * exclusively, holding our pid. Two exports at once would each read what the destination holds
 * before the other wrote, and both send it (an endpoint) or one rename drop the other's records
 * (a file). A lock whose process is gone (a crash) is taken over.
 */
function lockDestination(lockPath: string, what: string): () => void {
  // Twice at most: a stale lock is removed once, and a second EEXIST is a live export that just started.
  for (let attempt = 1; ; attempt++) {
    try {
      const fd = openSync(lockPath, 'wx', 0o644);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      break;
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error;
      const holder = attempt === 1 ? Number.parseInt(readFileSync(lockPath, 'utf8'), 10) : Number.NaN;
      if (attempt > 1 || (Number.isSafeInteger(holder) && holder > 0 && processAlive(holder))) {
        throw new DestinationBusyError(`another export to this destination is running (${lockPath}); ${what} was left as it was`);
      }
      unlinkSync(lockPath);
    }
  }
  let held = true;
  return () => {
    if (held && existsSync(lockPath)) unlinkSync(lockPath);
    held = false;
  };
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return errorCode(error) === 'EPERM';
  }
}

function errorCode(error: unknown): unknown {
  return error instanceof Error && 'code' in error ? error.code : undefined;
}

/** Standard output: every unit, with backpressure; there is nothing to skip in a stream. */
export function streamDestination(stream: Writable): Destination {
  return {
    async write(unit) {
      if (!stream.write(`${unit.line}\n`)) await new Promise<void>((resolve) => stream.once('drain', resolve));
      return true;
    },
    async finish() {},
    abort() {},
  };
}

/**
 * A file, appended to without ever holding half an export: the file is copied to a temporary
 * file beside it, new lines are appended there, and the temporary file is renamed over the file
 * only once everything is written and synced. A record whose id is already in the file is
 * skipped, so exporting overlapping periods to one file writes each receipt version once.
 */
export async function fileDestination(path: string, idsOf: (line: string) => string[]): Promise<Destination> {
  const unlock = lockDestination(join(dirname(path), `.${basename(path)}.lock`), path);
  const known = new Set<string>();
  const existed = existsSync(path);
  const temporary = join(dirname(path), `.${basename(path)}.${randomUUID()}.tmp`);
  let fd: number;
  try {
    if (existed) {
      const lines = createInterface({ input: createReadStream(path, 'utf8'), crlfDelay: Number.POSITIVE_INFINITY });
      for await (const line of lines) for (const id of idsOf(line)) known.add(id);
    }
    if (existed) copyFileSync(path, temporary);
    fd = openSync(temporary, existed ? 'a' : 'wx', 0o644);
  } catch (error) {
    unlock();
    throw error;
  }
  let closed = false;
  let wrote = 0;
  const close = () => {
    if (!closed) closeSync(fd);
    closed = true;
  };
  return {
    async write(unit) {
      if (known.has(unit.id)) return false;
      known.add(unit.id);
      writeSync(fd, `${unit.line}\n`);
      wrote += 1;
      return true;
    },
    async finish() {
      try {
        fsyncSync(fd);
        close();
        // Nothing new: the file is left as it was, byte for byte and untouched.
        if (existed && wrote === 0) unlinkSync(temporary);
        else renameSync(temporary, path);
      } finally {
        // Only once the file is whole: the next export reads what this one wrote.
        unlock();
      }
    },
    abort() {
      close();
      if (existsSync(temporary)) unlinkSync(temporary);
      unlock();
    },
  };
}

/** Where the ids sent to one OTLP endpoint are kept: a file per endpoint URL in the data folder. */
export function sentRecordPath(dataDir: string, endpoint: URL): string {
  return join(dataDir, 'exports', `otlp-${createHash('sha256').update(endpoint.href).digest('hex').slice(0, 16)}.sent`);
}

/**
 * An OTLP/HTTP endpoint. Spans go in batches; after a batch is accepted its record ids are
 * appended (and synced) to the local record of what this endpoint holds, and a later export
 * skips them. A crash between the receiver's answer and that append can send a batch twice;
 * the span ids are deterministic, so the receiver sees the same span again and can drop it.
 */
export async function otlpDestination(endpoint: URL, recordPath: string): Promise<Destination> {
  mkdirSync(dirname(recordPath), { recursive: true });
  const unlock = lockDestination(`${recordPath}.lock`, `${endpoint.origin}${endpoint.pathname}`);
  const sent = new Set<string>();
  try {
    if (existsSync(recordPath)) {
      const lines = createInterface({ input: createReadStream(recordPath, 'utf8'), crlfDelay: Number.POSITIVE_INFINITY });
      for await (const line of lines) if (line !== '') sent.add(line);
    }
  } catch (error) {
    unlock();
    throw error;
  }
  let batch: ExportUnit[] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    const spans = batch.map((unit) => unit.span).filter((span) => span !== undefined);
    await postSpans(endpoint, spans);
    mkdirSync(dirname(recordPath), { recursive: true });
    const fd = openSync(recordPath, 'a', 0o644);
    try {
      appendFileSync(fd, batch.map((unit) => `${unit.id}\n`).join(''));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    for (const unit of batch) sent.add(unit.id);
    batch = [];
  };
  return {
    async write(unit) {
      if (sent.has(unit.id) || batch.some((queued) => queued.id === unit.id)) return false;
      batch.push(unit);
      if (batch.length >= exportLimits.otlpSpansPerRequestMax) await flush();
      return true;
    },
    async finish() {
      try {
        await flush();
      } finally {
        unlock();
      }
    },
    abort: unlock,
  };
}
