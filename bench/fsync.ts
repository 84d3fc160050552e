import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { openDatabase } from '../db/open.ts';
import { globalHashOf } from '../server/journal/hash.ts';

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

/** A journal database in `dir` that takes rows 64 per commit, each call one durable commit; close() removes it. */
function rawRowWriter(dir: string, name: string, seal: boolean): { batch(): void; close(): void } {
  const file = path.join(dir, `raw-rows-${process.pid}-${name}.sqlite`);
  const opened = openDatabase(file);
  const insert = opened.sqlite.prepare('INSERT INTO entries (effect_id, kind, prev, hash, closes, ts_ms, body) VALUES (?, ?, ?, ?, ?, ?, ?)');
  const lastSeal = opened.sqlite.prepare<[], { global_hash: string }>('SELECT seq, global_hash FROM journal_seals ORDER BY seq DESC LIMIT 1');
  const insertSeal = opened.sqlite.prepare('INSERT INTO journal_seals (seq, global_hash) VALUES (?, ?)');
  const body = JSON.stringify({ filler: 'x'.repeat(700) });
  const hashOf = (n: number) => createHash('sha256').update(`${process.pid}:${name}:${n}`).digest('hex');
  let rows = 0;
  return {
    batch() {
      opened.sqlite.exec('BEGIN IMMEDIATE');
      // 16 effects of 4 rows each: the chains a batch of 64 submitters' writes extends.
      for (let e = 0; e < RAW_ROWS_PER_COMMIT / RAW_KINDS.length; e++) {
        const effectId = hashOf(rows).slice(0, 12);
        let prev: string | null = null;
        for (const kind of RAW_KINDS) {
          const hash = hashOf(rows++);
          const seq = Number(insert.run(effectId, kind, prev, hash, kind === 'COMMITTED' ? 1 : 0, Date.now(), body).lastInsertRowid);
          // The seal as the store writes it in the entry's transaction (db/journal-base.ts `sealAt`).
          if (seal) insertSeal.run(seq, globalHashOf(lastSeal.get()?.global_hash ?? null, seq, hash));
          prev = hash;
        }
      }
      opened.sqlite.exec('COMMIT');
    },
    close() {
      opened.close();
      for (const suffix of ['', '-wal', '-shm']) fs.rmSync(`${file}${suffix}`, { force: true });
    },
  };
}

/**
 * The storage's own bound on journal writes: rows shaped like a routine effect's entries (same
 * columns, a body of typical size, chains of four linked rows on random effect ids) inserted
 * straight through better-sqlite3 into the journal's schema, 64 per commit as the gate's batches
 * hold, with no gate, no sealing and no checks. Rows per second over `durationMs`.
 */
export function measureRawRowsPerS(dir: string, durationMs: number): number {
  const writer = rawRowWriter(dir, 'raw', false);
  try {
    let batches = 0;
    const startMs = performance.now();
    while (performance.now() - startMs < durationMs) {
      writer.batch();
      batches += 1;
    }
    return (batches * RAW_ROWS_PER_COMMIT) / ((performance.now() - startMs) / 1000);
  } finally {
    writer.close();
  }
}

/**
 * What the global chain adds to each journal write: the raw rows above into two journals, one
 * without and one with each row's seal (the newest seal read, globalHashOf, the journal_seals
 * insert, in the row's transaction), a commit to each in turn for `durationMs` in all, so both
 * see the same load on the machine. The sealed journal's rows per second, and the difference of
 * wall time per row in µs (the seal's share of each commit's WAL pages and fsync included).
 */
export function measureGlobalChainCost(dir: string, durationMs: number): { sealedRowsPerS: number; usPerEntry: number } {
  const plain = rawRowWriter(dir, 'plain', false);
  const sealed = rawRowWriter(dir, 'sealed', true);
  try {
    let plainMs = 0;
    let sealedMs = 0;
    let batches = 0;
    const startMs = performance.now();
    while (performance.now() - startMs < durationMs) {
      // Which goes first alternates, so neither always follows the other's fsync.
      for (const [writer, isSealed] of batches % 2 === 0 ? ([[plain, false], [sealed, true]] as const) : ([[sealed, true], [plain, false]] as const)) {
        const batchStartMs = performance.now();
        writer.batch();
        if (isSealed) sealedMs += performance.now() - batchStartMs;
        else plainMs += performance.now() - batchStartMs;
      }
      batches += 1;
    }
    const rows = batches * RAW_ROWS_PER_COMMIT;
    return { sealedRowsPerS: rows / (sealedMs / 1000), usPerEntry: ((sealedMs - plainMs) * 1000) / rows };
  } finally {
    plain.close();
    sealed.close();
  }
}
