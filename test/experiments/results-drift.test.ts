import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { allResultFiles } from '../../experiments/all.ts';
import { RESULTS_DIR } from '../../experiments/results-file.ts';

const files = await allResultFiles();

describe('results drift', () => {
  it.each(files.map((f) => [f.name, f.text]))('results/%s equals what npm run experiments produces', (name, text) => {
    expect(readFileSync(RESULTS_DIR + name, 'utf8')).toBe(text);
  });
});
