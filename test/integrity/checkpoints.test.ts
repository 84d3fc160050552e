import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { openDatabase } from '../../db/open.ts';
import type { MirrorConfig } from '../../server/config/integrity.ts';
import { EMPTY_CHECKPOINT_HEAD, readCheckpoint, signCheckpoint } from '../../server/integrity/checkpoint.ts';
import { originOf } from '../../server/integrity/checkpoints.ts';
import { checkpointDamage } from '../../server/integrity/epoch.ts';
import { loadOrCreateSigningKey, type SigningKey } from '../../server/receipts/keys.ts';
import type { Views } from '../../server/views/views.ts';
import { cleanUpDatabases, effectIdOf, fakeClock, fields, makeTempDir, tempDbFile } from '../support/db-journals.ts';
import { runVerifyCli } from '../../server/receipts/verify-cli.ts';
import { freePort, runServerToExit, startServerProcess, writeTestConfig, compiledToolCommand, literally } from '../support/server-process.ts';
import { checkpointKey, startChecked, startRefusal } from '../support/checkpoints.ts';
import { tamper, writeJournal } from '../support/tamper.ts';

// Signed checkpoints of the global chain, kept in the store and copied to mirrors the server's
// user cannot rewrite: at start a journal behind one, or with another chain at its size, is refused.

const servers: Server[] = [];
afterEach(async () => {
  cleanUpDatabases();
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

const key: SigningKey = checkpointKey;

function fileMirror(): MirrorConfig {
  return { kind: 'file', path: path.join(makeTempDir(), 'mirror', 'checkpoints.jsonl') };
}

/** A mirror served over HTTP as a real one would: PUT keeps the latest, GET answers it, 404 before any. */
async function urlMirror(token = 'mirror-token'): Promise<{ config: MirrorConfig; puts: string[]; authorizations: Array<string | undefined> }> {
  const puts: string[] = [];
  const authorizations: Array<string | undefined> = [];
  const server = createServer((request, response) => {
    authorizations.push(request.headers.authorization);
    if (request.headers.authorization !== `Bearer ${token}`) return void response.writeHead(401).end();
    if (request.method === 'GET') {
      const latest = puts.at(-1);
      return latest === undefined ? void response.writeHead(404).end() : void response.writeHead(200, { 'content-type': 'text/plain' }).end(latest);
    }
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    request.on('end', () => {
      puts.push(body);
      response.writeHead(204).end();
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { config: { kind: 'url', url: `http://127.0.0.1:${port}/checkpoint`, token }, puts, authorizations };
}

async function append(journal: SqliteJournal | Views['journal'], from: number, count: number): Promise<void> {
  for (let n = from; n < from + count; n++) await journal.append('PROPOSED', effectIdOf(n), fields('PROPOSED'));
}

describe('checkpoints of the global chain', () => {
  it('start-up signs one over what it verified; then one every N entries, not before', async () => {
    const file = await writeJournal(4);
    const started = await startChecked(file);
    try {
      expect((await started.store.all()).map((c) => c.size)).toEqual([12]);
      const first = (await started.store.latest());
      const read = readCheckpoint(first?.note ?? '', { publicKeyPem: key.publicKeyPem, keyId: key.keyId });
      expect(read.ok && read.checkpoint).toEqual({ origin: started.checkpointer.origin, size: 12, head: started.views.head?.globalHash });
      expect(started.checkpointer.origin).toMatch(/^interlock\/journal\/[0-9a-f]{16}\/epoch\/0$/);

      await append(started.journal, 20, 4);
      await started.views.current();
      expect(await started.checkpointer.sign()).toBeNull();
      await append(started.journal, 30, 1);
      await started.views.current();
      expect((await started.checkpointer.sign())?.size).toBe(17);
      // Not grown: nothing signed, even when asked on the timer.
      expect(await started.checkpointer.sign(true)).toBeNull();
      expect((await started.store.all()).map((c) => c.size)).toEqual([12, 17]);
    } finally {
      started.close();
    }
  });

  it('a brand-new journal\'s first start signs one too: no entries, the empty head; a restart with none signs no other', async () => {
    const mirror = fileMirror();
    const file = tempDbFile();
    const first = await startChecked(file, [mirror]);
    const origin = first.checkpointer.origin;
    try {
      expect(first.views.head).toBeNull();
      expect((await first.store.all()).map((c) => [c.size, c.head])).toEqual([[0, EMPTY_CHECKPOINT_HEAD]]);
      const read = readCheckpoint((await first.store.latest())?.note ?? '', { publicKeyPem: key.publicKeyPem, keyId: key.keyId });
      expect(read.ok && read.checkpoint).toEqual({ origin, size: 0, head: createHash('sha256').update('').digest('hex') });
      expect(fs.readFileSync(mirror.kind === 'file' ? mirror.path : '', 'utf8').trim().split('\n')).toHaveLength(1);
      // The tail since it is the whole journal: nothing to hold against yet, and nothing wrong.
      expect(await first.checkpointer.verifyTail(first.journal)).toBe(true);
    } finally {
      first.close();
    }
    const second = await startChecked(file, [mirror]);
    try {
      expect(second.checkpointer.origin).toBe(origin);
      expect((await second.store.all()).map((c) => c.size)).toEqual([0]);
      await append(second.journal, 1, 2);
      await second.views.current();
      expect(await second.checkpointer.verifyTail(second.journal)).toBe(true);
      expect((await second.checkpointer.sign(true))?.size).toBe(2);
    } finally {
      second.close();
    }
    expect(await startRefusal(file, [mirror])).toBeNull();
  });

  it('a checkpoint of no entries holds only with the empty head', async () => {
    const held = { journalId: 'ab'.repeat(8), size: 3, epochs: { current: 0, starts: [] }, globalHashAtSize: async () => null, seqAtSize: async () => null };
    const checkpoint = { origin: originOf('ab'.repeat(8), 0), size: 0, head: EMPTY_CHECKPOINT_HEAD };
    expect(await checkpointDamage(checkpoint, held, 'the store', 'journal.sqlite')).toBeNull();
    expect((await checkpointDamage({ ...checkpoint, head: 'cd'.repeat(32) }, held, 'the store', 'journal.sqlite'))?.code).toBe('journal_inconsistent_with_checkpoint');
  });

  it('the store keeps the id of its journal: a restart signs in the same origin, and one more only when the journal grew', async () => {
    const file = await writeJournal(2);
    const first = await startChecked(file);
    const origin = first.checkpointer.origin;
    first.close();
    const second = await startChecked(file);
    try {
      expect(second.checkpointer.origin).toBe(origin);
      expect((await second.store.all()).map((c) => c.size)).toEqual([6]);
    } finally {
      second.close();
    }
  });

  it('a file mirror is appended every checkpoint, one JSON line each, and read back at start', async () => {
    const mirror = fileMirror();
    const file = await writeJournal(2);
    const started = await startChecked(file, [mirror]);
    await append(started.journal, 20, 5);
    await started.views.current();
    await started.checkpointer.sign();
    started.close();
    const lines = fs.readFileSync(mirror.kind === 'file' ? mirror.path : '', 'utf8').trim().split('\n');
    expect(lines.map((line) => (JSON.parse(line) as { note: string }).note)).toEqual([expect.stringContaining('\n6\n'), expect.stringContaining('\n11\n')]);
    expect(started.logged.filter((l) => l.level === 'warn')).toEqual([]);
    expect(await startRefusal(file, [mirror])).toBeNull();
  });

  it('a URL mirror gets each checkpoint by PUT with its bearer token, and start-up reads it back with GET', async () => {
    const mirror = await urlMirror();
    const file = await writeJournal(2);
    const started = await startChecked(file, [mirror.config]);
    const note = (await started.store.latest())?.note;
    started.close();
    expect(mirror.puts).toEqual([note]);
    expect(new Set(mirror.authorizations)).toEqual(new Set(['Bearer mirror-token']));
    expect(await startRefusal(file, [mirror.config])).toBeNull();
  });

  it('the tail removed, its checkpoints too, is refused against a mirror that holds a later one', async () => {
    const mirror = fileMirror();
    const file = await writeJournal(4);
    (await startChecked(file, [mirror])).close();
    // Everything after the 8th entry goes, seals and checkpoints with it: the journal alone is whole.
    tamper(file, (sqlite) => {
      sqlite.prepare('DELETE FROM entries WHERE seq > 8').run();
      sqlite.prepare('DELETE FROM journal_seals WHERE seq > 8').run();
      sqlite.prepare('DELETE FROM journal_checkpoints').run();
    });
    expect(await startRefusal(file)).toBeNull();
    const refused = await startRefusal(file, [mirror]);
    expect(refused?.code).toBe('journal_behind_checkpoint');
    expect(refused?.message).toMatch(/checkpoint in the mirror .*covers 12 entries and the journal holds 8: entries were removed from its end.*restore the database from a backup/);
  });

  it('the tail removed is refused against the store’s own checkpoint when that is left', async () => {
    const file = await writeJournal(4);
    (await startChecked(file)).close();
    tamper(file, (sqlite) => {
      sqlite.prepare('DELETE FROM entries WHERE seq > 8').run();
      sqlite.prepare('DELETE FROM journal_seals WHERE seq > 8').run();
    });
    expect((await startRefusal(file))?.code).toBe('journal_behind_checkpoint');
  });

  it('a journal rewritten and rehashed without the key is refused: the checkpoint signed another chain', async () => {
    const mirror = await urlMirror();
    const file = await writeJournal(4);
    (await startChecked(file, [mirror.config])).close();
    // The attacker writes a journal of their own, every hash and seal valid, and gives it the
    // original's id and checkpoints; without the key they cannot sign one of their chain.
    const forged = path.join(makeTempDir(), 'forged.sqlite');
    const opened = openDatabase(forged);
    const journal = new SqliteJournal({ db: opened.db, ...fakeClock() });
    await append(journal, 1, 4);
    await append(journal, 50, 8);
    opened.sqlite.exec(`ATTACH DATABASE '${file}' AS original`);
    opened.sqlite.exec('INSERT INTO journal_meta SELECT * FROM original.journal_meta; INSERT INTO journal_checkpoints SELECT * FROM original.journal_checkpoints');
    opened.sqlite.exec('DETACH DATABASE original');
    opened.close();
    const refused = await startRefusal(forged);
    expect(refused?.code).toBe('journal_inconsistent_with_checkpoint');
    expect(refused?.message).toMatch(/global chain after 12 entries is not the one the newest checkpoint in the store signed: the journal was rewritten/);
    // Its checkpoints removed as well, the mirror still says.
    tamper(forged, (sqlite) => sqlite.prepare('DELETE FROM journal_checkpoints').run());
    expect((await startRefusal(forged, [mirror.config]))?.code).toBe('journal_inconsistent_with_checkpoint');
  });

  it('a checkpoint signed with another key is refused, not trusted', async () => {
    const file = await writeJournal(2);
    const started = await startChecked(file);
    const origin = started.checkpointer.origin;
    const head = started.views.head?.globalHash ?? '';
    started.close();
    const other = loadOrCreateSigningKey(makeTempDir());
    tamper(file, (sqlite) => {
      sqlite.prepare('INSERT INTO journal_checkpoints (epoch, size, head, note, signed_at_ms) VALUES (0, 6, ?, ?, 0)').run(head, signCheckpoint({ origin, size: 6, head }, other));
    });
    const refused = await startRefusal(file);
    expect(refused?.code).toBe('checkpoint_invalid');
    // The operator is told whose signature it bears, and the common cause first: servers on one journal with keys of their own.
    expect(refused?.message).toContain(`only by interlock-${other.keyId}`);
    expect(refused?.message).toMatch(/must sign with the same receipt key \(RECEIPT_KEY_PATH.*the checkpoint was forged; restore the database/);
  });

  it('a checkpoint of another journal in a mirror is refused', async () => {
    const mirror = fileMirror();
    (await startChecked(await writeJournal(2), [mirror])).close();
    expect((await startRefusal(await writeJournal(2), [mirror]))?.code).toBe('journal_inconsistent_with_checkpoint');
  });

  it('an unreachable mirror is a warning with an event a metric can count, not a refusal; the next checkpoint tries again', async () => {
    const gone = await urlMirror();
    const url = gone.config.kind === 'url' ? gone.config.url : '';
    await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
    const file = await writeJournal(2);
    const started = await startChecked(file, [gone.config]);
    const kept = (await started.store.all());
    started.close();
    const warnings = started.logged.filter((l) => l.level === 'warn').map((l) => l.fields.event);
    expect(warnings).toEqual(['checkpoint_mirror_unreachable', 'checkpoint_mirror_unreachable']);
    expect(started.logged.find((l) => l.level === 'warn')?.message).toContain(new URL(url).origin);
    expect(kept).toHaveLength(1);
  });

  it('a mirror that refuses the token counts as unreachable, and its token never reaches the log', async () => {
    const mirror = await urlMirror('right');
    const wrong: MirrorConfig = { ...mirror.config, kind: 'url', url: mirror.config.kind === 'url' ? mirror.config.url : '', token: 'wrong-secret' };
    const started = await startChecked(await writeJournal(2), [wrong]);
    started.close();
    expect(started.logged.map((l) => l.fields.event)).toContain('checkpoint_mirror_unreachable');
    expect(JSON.stringify(started.logged)).not.toContain('wrong-secret');
  });

  it('no mirror configured is a warning that says what is at risk', async () => {
    const started = await startChecked(await writeJournal(2));
    started.close();
    expect(started.logged.filter((l) => l.level === 'warn')).toEqual([expect.objectContaining({ fields: { event: 'checkpoint_no_mirror' }, message: expect.stringContaining('integrity.mirrors') })]);
  });

  it('the tail since the last checkpoint is verified again: a row changed while the server runs makes the views unavailable', async () => {
    const file = await writeJournal(2);
    const started = await startChecked(file);
    try {
      await append(started.journal, 20, 3);
      await started.views.current();
      expect(await started.checkpointer.verifyTail(started.journal)).toBe(true);
      expect(started.views.unavailable).toBeNull();
      // Changed behind the server's back, hash recomputed so the entry alone still holds.
      tamper(file, (sqlite) => {
        sqlite.prepare('UPDATE journal_seals SET global_hash = ? WHERE seq = (SELECT max(seq) FROM journal_seals)').run('0'.repeat(64));
      });
      expect(await started.checkpointer.verifyTail(started.journal)).toBe(false);
      expect(started.views.unavailable?.corrupt.seq).toBe(9);
    } finally {
      started.close();
    }
  });

  // Three processes one after another (a server, a refused start, the verify command): 20 s was
  // too short on a loaded 2-core machine.
  it('the server process signs to a file mirror; the tail cut, checkpoints and all, then stops it in one line, and npm run verify finds the same against the mirror', async () => {
    const file = await writeJournal(4);
    const dir = makeTempDir();
    const mirror = path.join(makeTempDir(), 'checkpoints.jsonl');
    const config = writeTestConfig(dir, { unpaced: true });
    fs.appendFileSync(config, `\nintegrity:\n  mirrors:\n    - file: ${mirror}\n`);
    const env = { DB_PATH: file, DATA_DIR: path.join(dir, 'data'), INTERLOCK_CONFIG: config, SANDBOX_PORT: '0' };
    const server = await startServerProcess({ ...env, PORT: String(await freePort()) });
    server.child.kill('SIGTERM');
    await server.exited;
    const lastLine = fs.readFileSync(mirror, 'utf8').trim().split('\n').at(-1) ?? '';
    // The journal's 12 entries and the CONFIG entry the start writes for a journal that names no config yet.
    expect((JSON.parse(lastLine) as { note: string }).note).toContain('\n13\n');

    tamper(file, (sqlite) => {
      sqlite.prepare('DELETE FROM entries WHERE seq > 8').run();
      sqlite.prepare('DELETE FROM journal_seals WHERE seq > 8').run();
      sqlite.prepare('DELETE FROM journal_checkpoints').run();
    });
    const { exit, stderr } = await runServerToExit({ ...env, PORT: '0' });
    expect(exit).toBe('2');
    expect(stderr.trim().split('\n')).toEqual([expect.stringMatching(new RegExp(`^Interlock did not start: .*covers 13 entries and the journal holds 8: entries were removed from its end.*${literally(compiledToolCommand('verify', '--journal'))}`))]);

    const verified = await runVerifyCli(['--journal', file, '--checkpoint', mirror, '--key', path.join(dir, 'data', 'receipt-signing-key.pub.pem')]);
    expect(verified.exitCode).toBe(1);
    expect(JSON.parse(verified.stdout)).toMatchObject({ valid: false, problem: { code: 'journal_behind_checkpoint' } });
  }, 60_000);
});
