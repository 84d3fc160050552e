import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

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
