import fs from 'node:fs';
import path from 'node:path';
import type { ProfileSummary } from './report.ts';
import { REPO_ROOT } from './processes.ts';

/** Functions listed per profile. */
const TOP_FUNCTIONS = 12;

/** The parts of a V8 .cpuprofile the summary reads. */
interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
}

/**
 * Areas of the code, each found by the functions that enter it; a sample counts for an area when
 * one of these is anywhere on its stack (so areas overlap: hashing happens inside journal writes).
 */
const AREAS: { area: string; enters: RegExp }[] = [
  { area: 'journal writes: group-commit batches (SQLite, savepoints, COMMIT + fsync)', enters: /^flush db\/group-commit/ },
  { area: 'journal reads: entries/scan/inFlight (SQLite SELECT, row checks)', enters: /^snapshot db\/journal-store/ },
  { area: 'entry hashing: seal and verify (canonical JSON + SHA-256)', enters: /^hashEntry server\/gate\/hash/ },
  { area: 'Stripe SDK requests to the sandbox', enters: /^_makeRequest stripe\// },
  { area: 'Error stack traces mapped through source maps', enters: /^prepareStackTraceCallback / },
  { area: 'webhook receipt (signature, confirmations)', enters: /webhook-plugin\.ts/ },
  { area: 'views: InboxProjection, ScoreboardProjection, live hub', enters: /^(apply|note|settle|publishItem) server\/(inbox|scoreboard|live)\// },
  { area: 'inbox sweeps (refresh, executeApproved, tick)', enters: /^sweep server\/inbox\/core/ },
  { area: 'MemoryPayments target', enters: /server\/targets\/memory-payments/ },
  { area: 'garbage collection', enters: /^\(garbage collector\) / },
  { area: 'idle (waiting for I/O or timers)', enters: /^\(idle\) / },
];

function whereOf(url: string, line: number): string {
  if (url === '') return 'V8';
  const file = url.replace(/^file:\/\//, '');
  const shown = file.startsWith(REPO_ROOT) ? path.relative(REPO_ROOT, file) : file;
  return `${shown.replace(/^node_modules\//, '')}:${line + 1}`;
}

/** The heaviest functions of a profile by self time (time sampled with that function on top). */
export function summarizeProfile(file: string, name: string, workload: string): ProfileSummary {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<string, { fn: string; where: string; us: number }>();
  let totalUs = 0;
  profile.samples.forEach((id, i) => {
    const deltaUs = Math.max(0, profile.timeDeltas[i] ?? 0);
    totalUs += deltaUs;
    const frame = nodes.get(id)?.callFrame;
    if (!frame) return;
    const fn = frame.functionName || '(anonymous)';
    const where = whereOf(frame.url, frame.lineNumber);
    const key = `${fn} ${where}`;
    const slot = selfUs.get(key) ?? { fn, where, us: 0 };
    slot.us += deltaUs;
    selfUs.set(key, slot);
  });
  const areaUs = inclusiveByArea(profile);
  const areas = AREAS.map(({ area }, i) => ({ area, ms: areaUs[i]! / 1000, pct: totalUs === 0 ? 0 : (100 * areaUs[i]!) / totalUs })).filter((a) => a.ms > 0);
  const top = [...selfUs.values()]
    .sort((a, b) => b.us - a.us)
    .slice(0, TOP_FUNCTIONS)
    .map((slot) => ({ fn: slot.fn, where: slot.where, self_ms: slot.us / 1000, self_pct: totalUs === 0 ? 0 : (100 * slot.us) / totalUs }));
  return { name, workload, sampled_ms: totalUs / 1000, areas, top };
}

/** For each area, the time of the samples with a function of that area anywhere on the stack. */
function inclusiveByArea(profile: CpuProfile): number[] {
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const labels = new Map(profile.nodes.map((node) => [node.id, `${node.callFrame.functionName || '(anonymous)'} ${whereOf(node.callFrame.url, node.callFrame.lineNumber)}`]));
  // Which areas each node's stack (the node and its ancestors) is in, computed once per node.
  const memo = new Map<number, boolean[]>();
  const areasOf = (id: number): boolean[] => {
    const known = memo.get(id);
    if (known) return known;
    const up = parent.get(id);
    const inherited = up === undefined ? AREAS.map(() => false) : areasOf(up);
    const label = labels.get(id) ?? '';
    const mine = AREAS.map(({ enters }, i) => inherited[i]! || enters.test(label));
    memo.set(id, mine);
    return mine;
  };
  const totals = AREAS.map(() => 0);
  profile.samples.forEach((id, i) => {
    const deltaUs = Math.max(0, profile.timeDeltas[i] ?? 0);
    areasOf(id).forEach((inside, a) => {
      if (inside) totals[a]! += deltaUs;
    });
  });
  return totals;
}

/**
 * The main thread's profile in `dir`. Node names them `CPU.<date>.<time>.<pid>.<thread>.<n>`;
 * tsx's loader runs on a thread of its own, which writes a second, small profile.
 */
export function profileIn(dir: string): string {
  const main = fs.readdirSync(dir).filter((f) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(f));
  if (main.length !== 1) throw new Error(`expected one main-thread .cpuprofile in ${dir}, found ${main.length}`);
  return path.join(dir, main[0]!);
}
