// `tsx bench/gate-once.ts [seconds] [submitters]`: one run of the gate figure, printed as JSON.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runGate } from './gate.ts';

const seconds = Number(process.argv[2] ?? 3);
const submitters = Number(process.argv[3] ?? 64);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'interlock-gate-'));
try {
  const run = await runGate(dir, { durationMs: seconds * 1000, submitters, tag: 'once' });
  process.stdout.write(`${JSON.stringify(run)}\n`);
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
