import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// The shipped interlock.yaml is the first thing an operator edits: where its comments send them
// for more, that page is there. The README is a short page now, with no "Integrity" or "Going
// live" section, so a comment naming a README section sends them nowhere.

const root = new URL('../../', import.meta.url);
const config = readFileSync(new URL('interlock.yaml', root), 'utf8');
const comments = config.split('\n').filter((line) => line.trimStart().startsWith('#')).join('\n');

describe("the shipped config's comments", () => {
  it('name no README section, only pages that exist', () => {
    expect(comments.match(/README(, |'s )"[^"]+"/g) ?? []).toEqual([]);
    const pages = [...comments.matchAll(/docs\/[a-z-]+\/[a-z-]+\.md/g)].map((m) => m[0]);
    expect(pages.length).toBeGreaterThan(0);
    expect(pages.filter((page) => !existsSync(new URL(page, root)))).toEqual([]);
  });
});
