import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { InterlockEnv } from '../config/env.ts';
import { resolveSigningKey, type SigningKeyEnv, signingKeyLocation } from '../receipts/key-file.ts';
import type { SigningKey } from '../receipts/keys.ts';
import type { BackupChain, ChainLink } from './chain.ts';
import { BackupError, sha256OfFile } from './manifest.ts';

// The files a restore puts back beside the journal: the receipt key and the config, from the
// newest backup of the chain that holds each.

/** The newest backup of the chain that holds a file of `role`, null for none. */
export function newestWith(chain: BackupChain, role: 'config' | 'key'): ChainLink | null {
  for (const link of [...chain.increments].reverse()) if (link.manifest.files[role] !== undefined) return link;
  return chain.full.manifest.files[role] === undefined ? null : chain.full;
}

/**
 * The receipt key the epoch is signed with: the one where the server will read it. The backup's
 * (when it holds one) is put there if none is; a different key there is refused, because the old
 * epoch's checkpoints and receipts verify with the backup's key only.
 */
export function placeKey(env: SigningKeyEnv, source: ChainLink | null): SigningKey {
  const { path } = signingKeyLocation(env);
  const inBackup = source?.manifest.files.key;
  if (source !== null && inBackup !== undefined) {
    if (!existsSync(path)) {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, readFileSync(join(source.dir, inBackup.name)), { mode: 0o600 });
    } else if (sha256OfFile(path) !== inBackup.sha256) {
      throw new BackupError(`${path} holds another receipt key than the backup's: the journal's checkpoints verify with the backup's key only; move it away or restore without the key`);
    }
  } else if (!existsSync(path)) {
    throw new BackupError(`there is no receipt key at ${path} and the backup holds none: the new epoch must be signed with the journal's key; put it back there (or take backups with --with-key)`);
  }
  return resolveSigningKey(env, { readOnly: true }).key;
}

/** The backup's config is written where the config is read when none is there; a config already there is kept. */
export function placeConfig(env: Pick<InterlockEnv, 'configPath'>, source: ChainLink | null, warnings: string[]): void {
  const inBackup = source?.manifest.files.config;
  if (source === null || inBackup === undefined) return;
  if (!existsSync(env.configPath)) {
    // Its owner's only, as the backup kept it: it holds the people's password and token hashes.
    writeFileSync(env.configPath, readFileSync(join(source.dir, inBackup.name)), { mode: 0o600 });
    return;
  }
  if (sha256OfFile(env.configPath) !== inBackup.sha256) {
    warnings.push(`${env.configPath} differs from the backup's config; it was kept (the backup's is ${join(source.dir, inBackup.name)})`);
  }
}

/**
 * What a restore may place (the receipt key, the config) that is not there yet: `undo` removes
 * what it placed, so a restore refused or failed after placing them leaves the data folder and the
 * config as it found them.
 */
export function placedByRestore(env: SigningKeyEnv & Pick<InterlockEnv, 'configPath'>): { undo: () => void } {
  const missing = [signingKeyLocation(env).path, env.configPath].filter((path) => !existsSync(path));
  return {
    undo: () => {
      for (const path of missing) rmSync(path, { force: true });
    },
  };
}
