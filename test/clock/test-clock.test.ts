import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AppClock } from '../../server/app/clock.ts';
import { ClockFileError, clockFile, TEST_CLOCK_FILE } from '../../server/app/clock-file.ts';

// A test-mode application clock moved by hand keeps its offset in the data folder, so a restart
// goes on from where it was instead of moving the application clock back behind the journal.

const dir = mkdtempSync(join(tmpdir(), 'interlock-test-clock-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const WALL_MS = 1_800_000_000_000;
const wall = () => WALL_MS;

describe('test clock', () => {
  it('test clock: a clock moved forward is where it was after a restart', () => {
    const path = join(dir, 'moved', TEST_CLOCK_FILE);
    mkdirSync(join(dir, 'moved'));
    const first = new AppClock(wall, clockFile(path));
    expect(first.nowMs()).toBe(WALL_MS);
    first.advance(4 * 3_600_000);
    first.advance(1_000);
    const restarted = new AppClock(wall, clockFile(path));
    expect(restarted.offsetMs).toBe(4 * 3_600_000 + 1_000);
    expect(restarted.nowMs()).toBe(WALL_MS + 4 * 3_600_000 + 1_000);
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ offset_ms: 4 * 3_600_000 + 1_000 });
  });

  it('test clock: with no file the clock starts at the wall clock', () => {
    expect(new AppClock(wall, clockFile(join(dir, 'none.json'))).nowMs()).toBe(WALL_MS);
  });

  it.each([['not json'], ['{"offset_ms": -1}'], ['{"offset_ms": 1.5}'], ['{}']])('test clock: a file holding %s stops the start, naming the file', (text) => {
    const path = join(dir, 'bad.json');
    writeFileSync(path, text);
    expect(() => new AppClock(wall, clockFile(path))).toThrow(ClockFileError);
    expect(() => new AppClock(wall, clockFile(path))).toThrow(/bad\.json holds no test clock offset/);
  });

  it('test clock: a move refused by the clock writes nothing', () => {
    const path = join(dir, 'refused.json');
    const clock = new AppClock(wall, clockFile(path));
    clock.advance(60_000);
    expect(() => clock.advance(-1)).toThrow(RangeError);
    expect(new AppClock(wall, clockFile(path)).offsetMs).toBe(60_000);
  });
});
