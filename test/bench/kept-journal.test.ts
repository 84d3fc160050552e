import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../db/open.ts';
import { generateJournal } from '../../bench/journal-gen.ts';
import { SMALL_TEMPLATES } from '../support/bench-templates.ts';
import { ensureJournals, journalFile } from '../../bench/history-journals.ts';

// The history stage measures copies of the journals kept in the `--journals` folder. A journal kept
// from before waiting items were bounded has its oldest waiting items decided once, in place; from
// then on the kept journal is only read (docs/internals/performance.md).

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});


const entriesIn = (file: string): number => {
  const opened = openDatabase(file);
  try {
    return opened.sqlite.prepare('SELECT count(*) FROM entries').pluck().get() as number;
  } finally {
    opened.close();
  }
};

describe('a journal kept in the --journals folder', () => {
  it('from before the bound is settled once, then only read', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'interlock-journals-'));
    dirs.push(dir);
    fs.writeFileSync(path.join(dir, 'templates.json'), JSON.stringify(SMALL_TEMPLATES));
    // Kept from a run before waiting items were bounded: about 1,350 of its items wait for a person.
    const file = journalFile(dir, '100k');
    await generateJournal(file, SMALL_TEMPLATES, 60_000, 0, 1_000_000);
    const before = entriesIn(file);
    const sizes = { '100k': 60_000, '1m': 1_000_000, '10m': 10_000_000 };

    const journals = await ensureJournals(dir, ['100k'], sizes);
    expect(journals.files['100k']).toBe(file);
    const settled = entriesIn(file);
    expect(settled - before).toBeGreaterThan(300);
    expect(waitingIn(file)).toBe(1_000);
    const bytes = fs.readFileSync(file);
    await ensureJournals(dir, ['100k'], sizes);
    expect(fs.readFileSync(file).equals(bytes)).toBe(true);
  }, 120_000);
});

/** Chains whose last entry is their escalation: items waiting for a person. */
function waitingIn(file: string): number {
  const opened = openDatabase(file);
  try {
    return opened.sqlite
      .prepare(`SELECT count(*) FROM entries e WHERE e.kind = 'ESCALATED' AND e.seq = (SELECT max(n.seq) FROM entries n WHERE n.effect_id = e.effect_id)`)
      .pluck()
      .get() as number;
  } finally {
    opened.close();
  }
}
