import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { openDatabase } from '../db/open.ts';

/** One page per write, as SQLite appends a WAL frame. */
const WRITE_BYTES = 4_096;
/** The file cycles over this many pages, so it stays small. */
const PAGES = 64;

/**
 * The raw fsync rate of the disk under `dir`: write one page and fdatasync it, over and over,
 * for `durationMs`. This bounds how many durable commits per second anything on this disk can do.
 */
export function measureFsyncPerS(dir: string, durationMs: number): number {
  const file = path.join(dir, `fsync-probe-${process.pid}.bin`);
  const fd = fs.openSync(file, 'w');
  const page = Buffer.alloc(WRITE_BYTES, 0x5a);
  try {
    const startMs = performance.now();
    let syncs = 0;
    while (performance.now() - startMs < durationMs) {
      fs.writeSync(fd, page, 0, page.length, (syncs % PAGES) * WRITE_BYTES);
      fs.fdatasyncSync(fd);
      syncs += 1;
    }
    return syncs / ((performance.now() - startMs) / 1000);
  } finally {
    fs.closeSync(fd);
    fs.rmSync(file, { force: true });
  }
}

/** Rows per commit in the raw insert probe: what the gate's 64 submitters put in one batch. */
const RAW_ROWS_PER_COMMIT = 64;
/** The kinds of a routine effect's chain, in the order the gate writes them. */
const RAW_KINDS = ['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'] as const;

/**
 * The storage's own bound on journal writes: rows shaped like a routine effect's entries (same
 * columns, a body of typical size, chains of four linked rows on random effect ids) inserted
 * straight through better-sqlite3 into the journal's schema, 64 per commit as the gate's batches
 * hold, with no gate, no sealing and no checks. Rows per second over `durationMs`.
 */
export function measureRawRowsPerS(dir: string, durationMs: number): number {
  const opened = openDatabase(path.join(dir, `raw-rows-${process.pid}.sqlite`));
  try {
    const insert = opened.sqlite.prepare('INSERT INTO entries (effect_id, kind, prev, hash, closes, ts_ms, body) VALUES (?, ?, ?, ?, ?, ?, ?)');
    const body = JSON.stringify({ filler: 'x'.repeat(700) });
    const hashOf = (n: number) => createHash('sha256').update(`${process.pid}:${n}`).digest('hex');
    let rows = 0;
    const startMs = performance.now();
    while (performance.now() - startMs < durationMs) {
      opened.sqlite.exec('BEGIN IMMEDIATE');
      // 16 effects of 4 rows each: the chains a batch of 64 submitters' writes extends.
      for (let e = 0; e < RAW_ROWS_PER_COMMIT / RAW_KINDS.length; e++) {
        const effectId = hashOf(rows).slice(0, 12);
        let prev: string | null = null;
        for (const kind of RAW_KINDS) {
          const hash = hashOf(rows++);
          insert.run(effectId, kind, prev, hash, kind === 'COMMITTED' ? 1 : 0, Date.now(), body);
          prev = hash;
        }
      }
      opened.sqlite.exec('COMMIT');
    }
    return rows / ((performance.now() - startMs) / 1000);
  } finally {
    opened.close();
    for (const suffix of ['', '-wal', '-shm']) fs.rmSync(path.join(dir, `raw-rows-${process.pid}.sqlite${suffix}`), { force: true });
  }
}
