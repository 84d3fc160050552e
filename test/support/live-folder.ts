import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CONFIG_PATH } from '../../server/config/load.ts';
import { withOwnSecrets, writeReceiptKey } from './server-process.ts';

/**
 * A new folder holding what a live-mode start needs: a receipt key outside the data folder (mode
 * 0400) and a live config (the shipped one with secrets of its own and an https public_url), and
 * the environment naming them with the live key and webhook secret given. The caller removes `dir`.
 */
export function liveFolder(options: {
  liveKey: string;
  webhookSecrets: string;
  configEdit?: (text: string) => string;
}): { dir: string; env: Record<string, string> } {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-live-'));
  mkdirSync(join(dir, 'keys'));
  const key = writeReceiptKey(join(dir, 'keys', 'receipt.pem'));
  const config = join(dir, 'interlock.live.yaml');
  const live = withOwnSecrets(readFileSync(DEFAULT_CONFIG_PATH, 'utf8')).replace(/^stripe: \{ mode: sandbox \}$/m, 'stripe: { mode: live }');
  const edit = options.configEdit ?? ((text: string) => text);
  writeFileSync(config, edit(`${live}\npublic_url: "https://interlock.example.com"\n`));
  return {
    dir,
    env: {
      DATA_DIR: join(dir, 'data'),
      INTERLOCK_CONFIG: config,
      RECEIPT_KEY_PATH: key,
      STRIPE_LIVE_KEY: options.liveKey,
      STRIPE_LIVE_WEBHOOK_SECRETS: options.webhookSecrets,
    },
  };
}
