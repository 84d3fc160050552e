import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { BACKUP_EXIT_CODES, runBackupCli } from '../../server/backup/backup-cli.ts';

// The operators' table of environment variables names every variable the server reads: each
// variable server/config/env.ts reads (`read.raw('NAME')`, `read.port('NAME', …)`, …), and for each secret read by readSecret, its `NAME_FILE` too.

const source = readFileSync(new URL('../../server/config/env.ts', import.meta.url), 'utf8');
const page = readFileSync(new URL('../../docs/operators/environment.md', import.meta.url), 'utf8');

function variablesRead(): string[] {
  const raw = [...source.matchAll(/\b(?:raw|port|oneOf|wholeNumber|readWebhookSecrets)\((?:read, )?'([A-Z_]+)'/g)].map((m) => m[1]!);
  const secrets = [...source.matchAll(/readSecret\(read, '([A-Z_]+)'/g)].flatMap((m) => [m[1]!, `${m[1]!}_FILE`]);
  return [...new Set([...raw, ...secrets])].sort();
}

describe('the environment page', () => {
  it('has a row for every variable the server reads', () => {
    const names = variablesRead();
    expect(names).toContain('STRIPE_SECRET_KEY_FILE');
    expect(names.length).toBeGreaterThan(15);
    const rows = new Set([...page.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((m) => m[1]!));
    expect(names.filter((name) => !rows.has(name))).toEqual([]);
  });

  it('says the commands check the whole environment as a start does, as the backup command does', async () => {
    let err = '';
    const sink = new Writable({
      write: (chunk, _encoding, done) => {
        err += String(chunk);
        done();
      },
    });
    const code = await runBackupCli(['/nonexistent-backup-dir'], { PORT: 'abc' }, { stdout: sink, stderr: sink });
    expect([code, err.trim()]).toEqual([BACKUP_EXIT_CODES.refused, 'backup refused: PORT must be a whole number from 0 to 65535, not "abc"']);
    const prose = page.replace(/\s+/g, ' ');
    expect(prose).toContain('Each checks the whole environment as a start does');
    expect(prose).toContain('`npm run restore` reads the Stripe ones too');
  });
});
