import { existsSync, statSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { documentationPages, readPage, root } from './pages.ts';

// Every relative link of the README and of docs/ leads somewhere in the project, and every
// `#anchor` to a heading that is there, as GitHub names headings.

/** The text people read, without fenced blocks and code spans, where a bracket is not a link. */
function prose(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, '').replace(/``[\s\S]*?``|`[^`\n]*`/g, '');
}

/** Every link and picture target of a page, in order. */
function linkTargets(text: string): string[] {
  return [...prose(text).matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, each space a hyphen. */
function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a page's headings; a repeated heading gets -1, -2, … as on GitHub. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, heading] of text.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const base = slug(heading!);
    const count = seen.get(base) ?? 0;
    anchors.add(count === 0 ? base : `${base}-${count}`);
    seen.set(base, count + 1);
  }
  return anchors;
}

/** What is wrong with one link of `page`, or null when it resolves. */
function brokenLink(page: string, target: string, read: (path: string) => string = readPage): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return null; // https:, mailto:: not the project's
  const [path = '', anchor] = target.split('#', 2) as [string, string | undefined];
  const file = path === '' ? join(root, page) : join(root, dirname(page), decodeURIComponent(path));
  const inProject = relative(root, file);
  if (inProject.startsWith(`..${sep}`) || inProject === '..') return `${target} leads out of the project`;
  if (!existsSync(file)) return `${target}: no such file`;
  if (anchor === undefined) return null;
  if (!file.endsWith('.md') || statSync(file).isDirectory()) return `${target}: an anchor into a file that is not a page`;
  return anchorsOf(read(relative(root, file))).has(anchor) ? null : `${target}: no heading with that anchor`;
}

describe('the links of the README and docs/', () => {
  const pages = documentationPages();

  it('finds the README, the index and the pages of every audience', () => {
    expect(pages).toContain('README.md');
    expect(pages).toContain('docs/README.md');
    for (const folder of ['agents', 'approvers', 'finance', 'operators', 'reference', 'internals']) {
      expect(pages.some((page) => page.startsWith(`docs/${folder}/`))).toBe(true);
    }
  });

  it.each(pages)('every relative link and anchor of %s resolves', (page) => {
    const text = readPage(page);
    const broken = linkTargets(text)
      .map((target) => brokenLink(page, target))
      .filter((problem) => problem !== null);
    expect(broken).toEqual([]);
  });

  it('the index links every page of docs/', () => {
    const linked = new Set(linkTargets(readPage('docs/README.md')).map((target) => join('docs', target.split('#')[0]!)));
    expect(pages.filter((page) => page.startsWith('docs/') && page !== 'docs/README.md' && !linked.has(page))).toEqual([]);
  });

  it('the README stays a five-minute read', () => {
    expect(readPage('README.md').split('\n').length).toBeLessThanOrEqual(200);
  });
});

describe('the link check itself', () => {
  const pages: Record<string, string> = {
    'docs/a.md': '# Page A\n\n## Two words, and `code`\n\n## Two words, and `code`\n\n```sh\n# not a heading\n```\n',
  };
  it('names headings as GitHub does, repeats numbered', () => {
    expect([...anchorsOf(pages['docs/a.md']!)]).toEqual(['page-a', 'two-words-and-code', 'two-words-and-code-1']);
  });

  it('refuses a missing file, a missing anchor and a way out of the project', () => {
    expect(brokenLink('docs/README.md', 'agents/nowhere.md')).toBe('agents/nowhere.md: no such file');
    expect(brokenLink('README.md', 'docs/README.md#no-such-heading')).toBe('docs/README.md#no-such-heading: no heading with that anchor');
    expect(brokenLink('README.md', '../shared/DESIGN.md')).toBe('../shared/DESIGN.md leads out of the project');
    expect(brokenLink('README.md', 'docs/README.md#agents-asking-for-refunds')).toBeNull();
    expect(brokenLink('README.md', 'https://example.com/x')).toBeNull();
  });

  it('reads links outside code only', () => {
    expect(linkTargets('[a](x.md) `[b](y.md)` ![c](z.png)\n```md\n[d](w.md)\n```\n')).toEqual(['x.md', 'z.png']);
  });
});
