import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project's root folder. */
export const root = fileURLToPath(new URL('../../', import.meta.url));

/** The pages people read: README.md and every page under docs/, as paths from the root. */
export function documentationPages(): string[] {
  const found: string[] = ['README.md'];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) found.push(relative(root, path));
    }
  };
  walk(join(root, 'docs'));
  return found.sort();
}

/** One page's text, by its path from the root. */
export function readPage(path: string): string {
  return readFileSync(join(root, path), 'utf8');
}

/** The fenced blocks of one page in one language, in order. */
export function fencedBlocks(text: string, language: string): string[] {
  return [...text.matchAll(new RegExp(`^\`\`\`${language}\\n([\\s\\S]*?)^\`\`\``, 'gm'))].map((m) => m[1] ?? '');
}
