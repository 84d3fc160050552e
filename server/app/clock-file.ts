import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import type { ClockOffsetStore } from './clock.ts';

// In test mode the application clock can be moved forward by hand (POST /api/test/clock). The
// offset lives in a small file in the data folder, so a restart keeps the clock where the journal
// last saw it: deadlines, approval ages and the live feed's time do not jump back by hours.

/** The file in the data folder a test-mode clock keeps its offset in. */
export const TEST_CLOCK_FILE = 'test-clock.json';

/** A file that is no clock offset: the start stops rather than move the clock back. */
export class ClockFileError extends Error {}

/** The offset kept in `path`, read at start and written (to a temporary file, synced, renamed) before each move counts. */
export function clockFile(path: string): ClockOffsetStore {
  return {
    read() {
      if (!existsSync(path)) return 0;
      let offsetMs: unknown;
      try {
        const kept: unknown = JSON.parse(readFileSync(path, 'utf8'));
        offsetMs = typeof kept === 'object' && kept !== null && 'offset_ms' in kept ? kept.offset_ms : undefined;
      } catch {
        offsetMs = undefined;
      }
      if (typeof offsetMs !== 'number' || !Number.isSafeInteger(offsetMs) || offsetMs < 0) {
        throw new ClockFileError(`${path} holds no test clock offset ({"offset_ms": <ms, 0 or more>}); delete it to start the test clock at the wall clock`);
      }
      return offsetMs;
    },
    write(offsetMs) {
      const temporary = `${path}.tmp`;
      const fd = openSync(temporary, 'w', 0o600);
      try {
        writeSync(fd, `${JSON.stringify({ offset_ms: offsetMs })}\n`);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(temporary, path);
    },
  };
}
