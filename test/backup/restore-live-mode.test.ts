
import { existsSync, mkdirSync, rmSync, } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase } from '../../db/open.ts';
import { takeBackup } from '../../server/backup/backup.ts';
import { restoreBackup } from '../../server/backup/restore.ts';
import { parseEnv } from '../../server/config/env.ts';
import { startSandbox } from '../../server/sandbox/index.ts';
import { createStripeClient } from '../../server/stripe/client.ts';
import { EFFECT_METADATA_KEY } from '../../server/targets/stripe-refunds.ts';
import { liveFolder } from '../support/live-folder.ts';

// A restore in live mode asks Stripe live mode what was refunded since the backup point, with the
// live restricted key: a refund Interlock sent after the backup is journaled COMMITTED, so it is
// never sent again. Against the sandbox answering as live mode would.

const LIVE_KEY = 'rk_live_interlock_restore';
const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

describe('a restore in live mode', () => {
  it('reads the refunds made after the backup from Stripe live mode with the live key, and journals them committed', async () => {
    const sandbox = await startSandbox({ mode: 'live' });
    cleanup.push(() => sandbox.close());
    const folder = liveFolder({ liveKey: LIVE_KEY, webhookSecrets: 'whsec_live_interlock_restore' });
    cleanup.push(() => rmSync(folder.dir, { recursive: true, force: true }));
    const dir = folder.dir;
    const dataDir = join(dir, 'data');
    const env = parseEnv(folder.env);
    mkdirSync(dataDir);
    openDatabase(env.dbPath).close();
    const backupDir = join(dir, 'backup');
    await takeBackup({ env, dir: backupDir, withKey: false, wallMs: () => Date.now() - 60_000 });

    // Sent by Interlock after the backup point: Stripe live mode holds it under our effect id.
    const endpoint = { host: sandbox.host, port: sandbox.port, protocol: 'http' as const };
    const stripe = createStripeClient(LIVE_KEY, endpoint, { live: true });
    const payment = await sandbox.createPaymentIntent(10_000);
    const effectId = 'abcdef012345';
    const refund = await stripe.refunds.create({ payment_intent: payment.id, amount: 2_000, metadata: { [EFFECT_METADATA_KEY]: effectId } });

    const result = await restoreBackup({ env, dir: backupDir, replace: true, stripeEndpoint: endpoint });
    expect(result.findings.refunds_not_in_backup.map((r) => r.refund)).toEqual([refund.id]);
    // No sandbox of its own was made in the data folder: live mode's Stripe is the only one asked.
    expect(existsSync(join(dataDir, 'sandbox.sqlite'))).toBe(false);
    const database = openDatabase(env.dbPath);
    try {
      const chain = await new SqliteJournal({ db: database.db, wallClockMs: Date.now }).entries(effectId);
      expect(chain.map((entry) => entry.kind)).toEqual(['COMMITTED']);
    } finally {
      database.close();
    }
  }, 20_000);
});
