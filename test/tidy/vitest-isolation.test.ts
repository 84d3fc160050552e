import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { OWN_PROCESS } from '../../vitest.config.ts';

// Most test files share a worker process with the files before it. A file that replaces a module
// with vi.mock would replace it for them too, so it must run in a process of its own.

const root = fileURLToPath(new URL('../../', import.meta.url));

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.ts') ? [relative(root, path)] : [];
  });
}

describe('vitest isolation', () => {
  it('every test file that replaces a module runs in a process of its own', () => {
    const mocking = testFiles(join(root, 'test')).filter((file) => /\bvi\.(mock|doMock)\(/.test(readFileSync(join(root, file), 'utf8')));
    expect(mocking.length).toBeGreaterThan(0);
    expect(mocking.filter((file) => !OWN_PROCESS.includes(file))).toEqual([]);
  });

  it('every file named to run in its own process exists', () => {
    const files = new Set(testFiles(join(root, 'test')));
    expect(OWN_PROCESS.filter((file) => !files.has(file))).toEqual([]);
  });
});
