import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openStorage } from '../db/sqlite-storage.ts';
import { signCheckpoint } from '../server/integrity/checkpoint.ts';
import { originOf } from '../server/integrity/epoch.ts';
import { loadOrCreateSigningKey } from '../server/receipts/keys.ts';
import type { StartFrom } from '../server/views/start-position.ts';
import { Views } from '../server/views/views.ts';
import type { Entry } from '../shared/entries.ts';
import { refundChain } from '../test/support/ledger-journal.ts';

// Start-up from a position against start-up from seq 0, timed: `npx tsx bench/start-position.ts
// [entries] [behind]` writes a journal of that many entries (committed refunds of four entries,
// each a ledger row), replays it once from zero to write the derived tables, signs a checkpoint
// `behind` entries short of the head (1,000 by default: the most a crash leaves unsigned at the
// default `checkpoint_every_entries`), then starts views on it three times each way, alternating,
// and prints the median time of `replayAtStart`, the entries read and the tails held. A standalone
// measurement, not a stage of `npm run bench`.

const WRITE_CHUNK = 20_000;
const RUNS = 3;

async function main(): Promise<void> {
  const entries = Number(process.argv[2] ?? 100_000);
  const behind = Number(process.argv[3] ?? 1_000);
  if (!Number.isSafeInteger(entries) || entries < 8) throw new Error('give a number of entries, at least 8');
  if (!Number.isSafeInteger(behind) || behind < 0 || behind >= entries) throw new Error('give how far behind the head the checkpoint is, below the entries');
  const dir = mkdtempSync(join(tmpdir(), 'interlock-start-position-'));
  const file = join(dir, 'journal.sqlite');
  const key = loadOrCreateSigningKey(dir);
  try {
    const storage = await openStorage({ file });
    const journal = storage.journal({ wallClockMs: () => Date.now() });
    let pending: Entry[] = [];
    for (let n = 1; n * 4 <= entries; n++) {
      pending.push(...refundChain(n));
      if (pending.length >= WRITE_CHUNK) {
        await journal.appendSealed(pending);
        pending = [];
      }
    }
    if (pending.length > 0) await journal.appendSealed(pending);
    const size = (await journal.head())?.size ?? 0;
    const views = new Views({ journal, inboxName: 'inbox', nowMs: () => Date.now(), log: { fatal: () => {}, error: () => {} }, derived: storage.derived });
    if ((await views.replayAtStart()) !== null) throw new Error('the generated journal failed its replay');
    const at = size - behind;
    const head = (await storage.checkpoints.globalHashAtSize(at)) ?? '';
    const note = signCheckpoint({ origin: originOf(await storage.checkpoints.ensureJournalId(), 0), size: at, head }, key);
    await storage.checkpoints.add({ epoch: 0, size: at, head, note, signedAtMs: Date.now() });
    await storage.close();
    const timed: Record<StartFrom, number[]> = { zero: [], checkpoint: [] };
    const read: Record<StartFrom, string> = { zero: '', checkpoint: '' };
    for (let run = 0; run < RUNS; run++) {
      for (const startFrom of ['zero', 'checkpoint'] as const) {
        const opened = await openStorage({ file });
        const started = new Views({
          journal: opened.journal({ wallClockMs: () => Date.now() }),
          inboxName: 'inbox',
          nowMs: () => Date.now(),
          log: { fatal: () => {}, error: () => {} },
          derived: opened.derived,
          startFrom,
          checkpoints: { store: opened.checkpoints, key },
        });
        const began = performance.now();
        if ((await started.replayAtStart()) !== null) throw new Error(`the start from ${startFrom} failed its check`);
        timed[startFrom].push(performance.now() - began);
        read[startFrom] = `${started.followed.entriesRead} entries read, ${started.followed.tailsHeld} tails held`;
        await opened.close();
      }
    }
    const median = (ms: number[]) => [...ms].sort((a, b) => a - b)[Math.floor(ms.length / 2)] ?? 0;
    console.log(`journal: ${size} entries, checkpoint at ${at}, tables at ${size}`);
    for (const startFrom of ['zero', 'checkpoint'] as const) {
      console.log(`from ${startFrom}: median ${median(timed[startFrom]).toFixed(0)} ms of ${RUNS} (${timed[startFrom].map((ms) => ms.toFixed(0)).join(', ')}); ${read[startFrom]}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
