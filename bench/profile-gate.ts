// The gate workload alone, for a CPU profile: `node --cpu-prof --import tsx bench/profile-gate.ts <dir> <durationMs>`.
import { runGate } from './gate.ts';

const [dir, durationArg] = process.argv.slice(2);
if (dir === undefined || !(Number(durationArg) > 0)) throw new Error('usage: <dir> <durationMs>');
const run = await runGate(dir, { durationMs: Number(durationArg), submitters: 64, tag: 'profile' });
process.stdout.write(`${JSON.stringify(run)}\n`);
