import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { SIGNING_KEY_FILE } from '../server/receipts/keys.ts';
import { copyJournal } from './journal-gen.ts';
import { startSandboxProcess, startServerProcess } from './processes.ts';
import { CONFIG_PATH, type Plan, push, rebuildDataDir, type Samples, say } from './stages.ts';
import { repeat, sleep } from './stats.ts';

/** How often the server's resident memory is read while it streams the CSV. */
const RSS_SAMPLE_MS = 20;
/** Resident memory is read this many times, apart, before a download: the baseline is their largest. */
const BASELINE_SAMPLES = 10;
/** The finance login of the repository's config (interlock.yaml, a demo password). */
const FINANCE = { name: 'fin', password: 'interlock-demo' };
/** A 1M-entry start-up took about 30 s on a quiet machine (results/bench.md); a loaded one gets room. */
const READY_TIMEOUT_MS = 10 * 60_000;

/** A process's resident memory now, in MiB, read from outside it (/proc/<pid>/status VmRSS). */
export function rssMib(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) / 1024;
}

export async function login(url: string): Promise<string> {
  const answer = await fetch(`${url}/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(FINANCE) });
  if (answer.status !== 200) throw new Error(`finance could not log in: ${answer.status} ${await answer.text()}`);
  return (answer.headers.get('set-cookie') ?? '').split(';')[0]!;
}

/** One download of the whole ledger as CSV, read as fast as it comes, with the server's RSS sampled throughout. */
export async function downloadCsv(url: string, cookie: string, pid: number): Promise<{ seconds: number; rows: number; mib: number; baselineMib: number; peakMib: number }> {
  const baseline: number[] = [];
  for (let i = 0; i < BASELINE_SAMPLES; i++) {
    baseline.push(rssMib(pid));
    await sleep(RSS_SAMPLE_MS);
  }
  let peakMib = 0;
  const timer = setInterval(() => {
    peakMib = Math.max(peakMib, rssMib(pid));
  }, RSS_SAMPLE_MS);
  const startMs = performance.now();
  try {
    const answer = await fetch(`${url}/api/ledger.csv`, { headers: { cookie } });
    if (answer.status !== 200 || answer.body === null) throw new Error(`GET /api/ledger.csv answered ${answer.status}: ${await answer.text()}`);
    let bytes = 0;
    let lines = 0;
    for await (const chunk of answer.body) {
      bytes += chunk.byteLength;
      for (const byte of chunk) if (byte === 0x0a) lines += 1;
    }
    const seconds = (performance.now() - startMs) / 1000;
    peakMib = Math.max(peakMib, rssMib(pid));
    // The header is a line; every other line is a row (no field of a row holds a line break).
    return { seconds, rows: lines - 1, mib: bytes / 1024 / 1024, baselineMib: Math.max(...baseline), peakMib };
  } finally {
    clearInterval(timer);
  }
}

/**
 * The ledger CSV of the 1M-entry journal, from a real server process over a copy of it: how long
 * the download takes and how much the server's resident memory grows while it streams (target
 * <= 64 MiB: the rows are streamed from the store, never held). Each repetition downloads again
 * from the same server, after the one start-up.
 */
export async function ledgerStage(plan: Plan, dir: string, journals: { large: string }): Promise<Samples> {
  const samples: Samples = {};
  const dataDir = path.join(dir, 'ledger-data');
  fs.mkdirSync(dataDir, { recursive: true });
  copyJournal(journals.large, path.join(dataDir, 'interlock.sqlite'));
  // The start-ups of the rebuild stage signed checkpoints of the journal: their key goes with it.
  const key = path.join(rebuildDataDir(dir), SIGNING_KEY_FILE);
  if (fs.existsSync(key)) fs.copyFileSync(key, path.join(dataDir, SIGNING_KEY_FILE));
  const sandbox = await startSandboxProcess();
  try {
    const server = await startServerProcess({ dataDir, sandboxUrl: sandbox.url, configPath: CONFIG_PATH, readyTimeoutMs: READY_TIMEOUT_MS });
    try {
      const pid = server.child.pid!;
      const cookie = await login(server.url);
      await repeat(plan.reps, async (rep) => {
        const run = await downloadCsv(server.url, cookie, pid);
        const growthMib = run.peakMib - run.baselineMib;
        say(`ledger csv rep ${rep}: ${run.rows} rows, ${run.mib.toFixed(0)} MiB in ${run.seconds.toFixed(1)} s; server rss ${run.baselineMib.toFixed(0)} -> peak ${run.peakMib.toFixed(0)} MiB (+${growthMib.toFixed(1)})`);
        push(samples, {
          ledger_csv_s_1m: run.seconds,
          ledger_csv_rss_growth_mib_1m: growthMib,
          ledger_csv_rows_1m: run.rows,
          ledger_csv_mib_1m: run.mib,
          ledger_csv_server_rss_mib_1m: run.baselineMib,
        });
      });
    } finally {
      await server.stop();
    }
  } finally {
    await sandbox.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  return samples;
}
