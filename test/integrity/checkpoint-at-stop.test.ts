import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openStorage } from '../../db/sqlite-storage.ts';
import { AppClock } from '../../server/app/clock.ts';
import type { MirrorConfig } from '../../server/config/integrity.ts';
import { readCheckpoint } from '../../server/integrity/checkpoint.ts';
import { openMirror } from '../../server/integrity/mirrors.ts';
import { buildInterlock } from '../../server/app/interlock.ts';
import { startSandbox } from '../../server/sandbox/index.ts';
import { testConfig } from '../support/app-world.ts';
import { effectIdOf, fields } from '../support/db-journals.ts';
import { tamper } from '../support/tamper.ts';
import { startChecked } from '../support/checkpoints.ts';
import { JournalDamagedError } from '../../server/integrity/damage.ts';
import { loadOrCreateSigningKey } from '../../server/receipts/keys.ts';

// The entries written since the last checkpoint are covered by no signature: cut off the end
// while the server is stopped, they would leave a journal that agrees with every mirror, and a
// refund among them would look new when its request came again. A server that stops gracefully
// signs what it verified first, so a restart is held against all of it.

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function runOnce(dir: string, mirror: MirrorConfig, write: (append: (n: number) => Promise<unknown>) => Promise<void>): Promise<void> {
  const clock = new AppClock();
  const sandbox = await startSandbox({ clockMs: () => clock.wallMs() });
  const storage = await openStorage({ file: join(dir, 'interlock.sqlite') });
  const base = testConfig();
  const interlock = await buildInterlock({
    config: { ...base, integrity: { ...base.integrity, mirrors: [mirror], checkpointEveryEntries: 1_000, checkpointEveryMs: 3_600_000 } },
    clock,
    storage,
    dataDir: dir,
    stripe: sandbox.stripe(),
    sandbox: true,
    webhookSecrets: ['whsec_stop'],
    webDist: join(dir, 'no-web'),
    background: false,
  });
  try {
    await interlock.check();
    await interlock.start();
    await write((n) => interlock.services.views.journal.append('PROPOSED', effectIdOf(n), fields('PROPOSED')));
  } finally {
    await interlock.close();
    await sandbox.close();
    await storage.close();
  }
}

describe('a graceful stop signs a checkpoint of everything it verified', () => {
  it('the entries written since the last checkpoint are in the one signed at stop, so cutting them off is refused at the next start', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'interlock-stop-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const mirror: MirrorConfig = { kind: 'file', path: join(dir, '..', `${dir.split('/').at(-1)}-mirror.jsonl`) };
    cleanups.push(() => rmSync(mirror.kind === 'file' ? mirror.path : '', { force: true }));
    await runOnce(dir, mirror, async (append) => {
      for (let n = 1; n <= 3; n++) await append(n);
    });
    await runOnce(dir, mirror, async (append) => {
      for (let n = 4; n <= 5; n++) await append(n);
    });
    const key = loadOrCreateSigningKey(dir);
    const latest = readCheckpoint((await openMirror(mirror).latest()) ?? '', key);
    expect(latest.ok && latest.checkpoint.size).toBe(5);

    // The last two entries cut off with their seals and the checkpoints that name them.
    const file = join(dir, 'interlock.sqlite');
    tamper(file, (sqlite) => {
      sqlite.prepare('DELETE FROM entries WHERE seq > 3').run();
      sqlite.prepare('DELETE FROM journal_seals WHERE seq > 3').run();
      sqlite.prepare('DELETE FROM journal_checkpoints WHERE size > 3').run();
    });
    const refused = await startChecked(file, [mirror], {}, key).then(
      (started) => started.close(),
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(JournalDamagedError);
    expect((refused as JournalDamagedError).code).toBe('journal_behind_checkpoint');
  });
});
