import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BUILT_FILES, builtDataDir, checkBuiltData, copyBuiltData, keepBuiltData } from '../../bench/history-built.ts';
import { HistoryRefusal } from '../../bench/history-args.ts';

// The data folder kept with its tables built beside the journals, for `--after-kill-only`: kept
// once from a stopped server's folder (the database and its keys, nothing else), copied for each
// run and never written. Nothing here is timed.

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'history-built-'));
  dirs.push(dir);
  return dir;
}

/** A stopped server's data folder: the database, its keys, and what else a server leaves there. */
function dataFolder(): string {
  const dir = tempDir();
  for (const name of BUILT_FILES) fs.writeFileSync(path.join(dir, name), `${name} as the server wrote it`);
  fs.writeFileSync(path.join(dir, 'interlock.sqlite.before-views-2026.sqlite'), 'a copy before the tables');
  fs.writeFileSync(path.join(dir, 'interlock.pid'), '123');
  return dir;
}

const unlimited = () => Number.MAX_SAFE_INTEGER;

describe('the data folder kept with its tables built', () => {
  it('keeps the database and its keys once, beside the journals, and copies them without writing the kept one', () => {
    const journals = tempDir();
    const data = dataFolder();
    expect(keepBuiltData(data, journals, '1m', unlimited)).toMatch(/built-1m kept for --after-kill-only/);
    const kept = builtDataDir(journals, '1m');
    expect(fs.readdirSync(kept).sort()).toEqual([...BUILT_FILES].sort());
    // A second run keeps the first one's.
    fs.writeFileSync(path.join(data, 'interlock.sqlite'), 'a later database');
    expect(keepBuiltData(data, journals, '1m', unlimited)).toMatch(/kept from before/);
    expect(fs.readFileSync(path.join(kept, 'interlock.sqlite'), 'utf8')).toBe('interlock.sqlite as the server wrote it');

    const run = path.join(tempDir(), 'history-1m');
    copyBuiltData(journals, '1m', run);
    fs.appendFileSync(path.join(run, 'interlock.sqlite'), ' and entries appended after a kill');
    expect(fs.readFileSync(path.join(kept, 'interlock.sqlite'), 'utf8')).toBe('interlock.sqlite as the server wrote it');
    expect(fs.readdirSync(run).sort()).toEqual([...BUILT_FILES].sort());
  });

  it('refuses a kept folder missing, lacking a key, or whose database was not closed cleanly; keeps none without room', () => {
    const journals = tempDir();
    expect(() => checkBuiltData(journals, '10m')).toThrow(HistoryRefusal);
    const kept = builtDataDir(journals, '10m');
    fs.mkdirSync(kept);
    fs.writeFileSync(path.join(kept, 'interlock.sqlite'), 'db');
    expect(() => checkBuiltData(journals, '10m')).toThrow(/receipt-signing-key\.pem, receipt-signing-key\.pub\.pem missing/);
    for (const name of BUILT_FILES) fs.writeFileSync(path.join(kept, name), name);
    fs.writeFileSync(path.join(kept, 'interlock.sqlite-wal'), 'commits');
    expect(() => checkBuiltData(journals, '10m')).toThrow(/not closed cleanly/);
    expect(keepBuiltData(dataFolder(), journals, '100k', () => 0)).toMatch(/not kept: 0\.0 GB free/);
    expect(fs.existsSync(builtDataDir(journals, '100k'))).toBe(false);
  });
});
