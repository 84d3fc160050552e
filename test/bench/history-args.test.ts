import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkRoomFor, FREE_BYTES_FOR_10M, HistoryRefusal, parseHistoryArgs } from '../../bench/history-args.ts';
import { ensureJournals } from '../../bench/history-journals.ts';

// The history stage's arguments and its refusal to start a 10M-entry journal on a disk that cannot
// hold it. Nothing here is timed.

function refusal(fn: () => unknown): HistoryRefusal {
  try {
    fn();
  } catch (error) {
    if (error instanceof HistoryRefusal) return error;
    throw error;
  }
  throw new Error('no refusal');
}

describe('history stage arguments', () => {
  it('measures every size unless told, in ascending order, and reuses no folder unless named', () => {
    expect(parseHistoryArgs(['--only', 'history'])).toEqual({ sizes: ['100k', '1m', '10m'], journals: null, afterKillOnly: false, toolsOnly: false });
    expect(parseHistoryArgs(['--only', 'history', '--sizes', '1m,100k', '--journals', '/j'])).toEqual({ sizes: ['100k', '1m'], journals: '/j', afterKillOnly: false, toolsOnly: false });
  });

  it('runs the after-kill starts alone only over a journals folder, where the built data folders are kept', () => {
    expect(parseHistoryArgs(['--only', 'history', '--after-kill-only', '--sizes', '10m', '--journals', '/j'])).toEqual({ sizes: ['10m'], journals: '/j', afterKillOnly: true, toolsOnly: false });
    const error = refusal(() => parseHistoryArgs(['--only', 'history', '--after-kill-only']));
    expect(error.code).toBe('no_built_data');
    expect(error.message).toMatch(/--after-kill-only takes --journals <dir>/);
  });

  it('runs the offline tools alone only over a journals folder, and one part alone at a time', () => {
    expect(parseHistoryArgs(['--only', 'history', '--tools-only', '--sizes', '10m', '--journals', '/j'])).toEqual({ sizes: ['10m'], journals: '/j', afterKillOnly: false, toolsOnly: true });
    const error = refusal(() => parseHistoryArgs(['--only', 'history', '--tools-only']));
    expect(error.code).toBe('no_built_data');
    expect(error.message).toMatch(/--tools-only takes --journals <dir>/);
    const both = refusal(() => parseHistoryArgs(['--only', 'history', '--tools-only', '--after-kill-only', '--journals', '/j']));
    expect(both.code).toBe('one_only');
  });

  it('refuses a size it does not know, or none, with a stable code', () => {
    for (const argv of [['--sizes', '100k,5m'], ['--sizes'], ['--sizes', '']]) {
      const error = refusal(() => parseHistoryArgs(argv));
      expect(error.code).toBe('bad_sizes');
      expect(error.message).toMatch(/--sizes takes a comma-separated list of 100k, 1m, 10m/);
    }
  });
});

describe('room for a 10M-entry journal', () => {
  it('refuses below 25 GB free, saying how much there is and what to do', () => {
    const error = refusal(() => checkRoomFor(10_000_000, '/journals', () => FREE_BYTES_FOR_10M - 1));
    expect(error.code).toBe('not_enough_space');
    expect(error.message).toMatch(/refused to generate a 10,000,000-entry journal in \/journals: 25\.0 GB free, 25 GB needed.*--sizes 100k,1m/);
  });

  it('lets a 10M journal through with 25 GB free, and smaller journals through whatever is free', () => {
    expect(() => checkRoomFor(10_000_000, '/journals', () => FREE_BYTES_FOR_10M)).not.toThrow();
    expect(() => checkRoomFor(1_000_000, '/journals', () => 0)).not.toThrow();
  });

  it('reads the free space of the folder it would write to', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'history-room-'));
    try {
      const stats = fs.statfsSync(dir);
      const free = stats.bavail * stats.bsize;
      if (free < FREE_BYTES_FOR_10M) expect(() => checkRoomFor(10_000_000, dir)).toThrow(HistoryRefusal);
      else expect(() => checkRoomFor(10_000_000, dir)).not.toThrow();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('generates nothing when refused, not even the smaller journals asked: the folder holds no journal, whole or partial', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'history-refused-'));
    try {
      fs.writeFileSync(path.join(dir, 'templates.json'), JSON.stringify({ routine: [], approved: [], rejected: [], open: [] }));
      // Sizes far above the disk's free space are judged as 10M journals are.
      await expect(ensureJournals(dir, ['100k', '10m'], { '100k': 1, '1m': 2, '10m': 10_000_000 }, () => 0)).rejects.toThrow(/refused to generate/);
      expect(fs.readdirSync(dir).sort()).toEqual(['templates.json']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
