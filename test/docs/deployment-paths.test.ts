import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// The systemd units run as a user of their own, under ProtectSystem=strict, writing only the
// folders ReadWritePaths= names; systemd refuses to start a unit whose user or ReadWritePaths=
// folder is missing (216/GROUP, 217/USER, 226/NAMESPACE). The deployment guide, read in order,
// makes the user and every such folder, owned by that user, before the units are installed.

const root = new URL('../../', import.meta.url);
const guide = readFileSync(new URL('infra/README.md', root), 'utf8');
const units = ['interlock.service', 'interlock-backup.service'].map((name) => readFileSync(new URL(`infra/${name}`, root), 'utf8'));

describe("the deployment guide's first steps", () => {
  it("make the units' user and every folder they write, owned by that user", () => {
    const users = new Set(units.flatMap((unit) => [...unit.matchAll(/^User=(\S+)$/gm)].map((m) => m[1]!)));
    const folders = new Set(units.flatMap((unit) => [...unit.matchAll(/^ReadWritePaths=(.+)$/gm)].flatMap((m) => m[1]!.trim().split(/\s+/))));
    expect(users.size).toBeGreaterThan(0);
    expect(folders.size).toBeGreaterThan(0);
    const blocks = [...guide.matchAll(/```(?:sh|bash)\n([\s\S]*?)```/g)]
      .flatMap((m) => m[1]!.split('\n'))
      .map((line) => line.trim())
      .join('\n');
    for (const user of users) expect(blocks, `a command makes the user ${user}`).toMatch(new RegExp(`useradd [^\\n]*\\b${user}$`, 'm'));
    const made = blocks.split('\n').filter((line) => /^install -d /.test(line) && [...users].some((user) => line.includes(`-o ${user}`)));
    expect([...folders].filter((folder) => !made.some((line) => line.split(/\s+/).includes(folder)))).toEqual([]);
  });
});
