import { spawn } from 'node:child_process';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { PgJournal } from '../../db/pg/journal.ts';
import { openPgPool } from '../../db/pg/pool.ts';
import { APP_ROLE, dropPgDatabase, freshPgDatabase, type PgDatabase, postgresCluster, postgresOrSkip } from '../support/postgres.ts';
import { PLANTED_SEQUENCE } from './planted-pg-journals.ts';
import { compiledScript } from '../support/compiled-entries.ts';

// Readers tail the journal by `seq > cursor`, with no gap logic: that is safe only if rows become
// visible in seq order. Slow writers in several processes (each row held under the lock a random
// while) append while a reader tails; the reader must see every entry, each once, in seq order.
// A store that takes seq from a sequence outside the lock lets a later seq commit first, and the
// reader steps past the earlier one for good: the same test must fail on it.

const available = postgresOrSkip('the PostgreSQL tail test (test/port/pg-journal-tail.test.ts)');
const writerScript = fileURLToPath(new URL('./support/pg-tail-writer.ts', import.meta.url));
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

const WRITERS = 3;
const LANES = 3;
const APPENDS_PER_LANE = 15;
const HOLD_MS_MAX = 8;

/** Start the writer processes, release them together, and tail the journal until they are done. */
async function tailWhileWriting(database: PgDatabase, store: 'slow' | 'planted'): Promise<{ written: string[]; seen: Array<{ seq: number; hash: string }>; steps: string[]; pagesWhileWriting: number }> {
  const children = Array.from({ length: WRITERS }, (_, writer) =>
    spawn(process.execPath, ['--enable-source-maps', compiledScript(writerScript), database.appUrl, String(writer + 1), String(LANES), String(APPENDS_PER_LANE), String(HOLD_MS_MAX), store], {
      cwd: repoRoot,
      stdio: ['pipe', 'pipe', 'inherit'],
    }),
  );
  const pool = openPgPool({ url: database.appUrl, max: 2 });
  try {
    const lines = children.map((child) => readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]());
    const next = async (i: number, step: string) => {
      const line = await lines[i]!.next();
      const message = line.done ? null : (JSON.parse(line.value) as { step: string; hashes?: string[] });
      if (message?.step !== step) throw new Error(`writer ${i + 1} said ${line.value}, expected "${step}"`);
      return message;
    };
    await Promise.all(children.map((_, i) => next(i, 'ready')));
    const reader = new PgJournal({ pool, wallClockMs: () => Date.now() });
    for (const child of children) child.stdin.write('go\n');
    const done = Promise.all(children.map((_, i) => next(i, 'done')));
    let finished = false;
    void done.finally(() => {
      finished = true;
    });
    const seen: Array<{ seq: number; hash: string }> = [];
    const steps: string[] = [];
    let cursor = 0;
    let pagesWhileWriting = 0;
    // A follower's loop: read what is after the cursor, move the cursor to the last seq read; once
    // the writers are done, until a read finds nothing more.
    for (;;) {
      const writing = !finished;
      const page = await reader.scan(cursor, 100);
      for (const { seq, entry } of page) {
        if (seq !== cursor + 1) steps.push(`${cursor} -> ${seq}`);
        seen.push({ seq, hash: entry.hash });
        cursor = seq;
      }
      if (writing && page.length > 0) pagesWhileWriting += 1;
      if (!writing && page.length === 0) break;
    }
    const written = (await done).flatMap((message) => message.hashes ?? []);
    return { written, seen, steps, pagesWhileWriting };
  } finally {
    await pool.end();
    for (const child of children) if (child.exitCode === null) child.kill();
  }
}

describe.skipIf(!available)('tailing the PostgreSQL journal while slow writers in several processes append', () => {
  const databases: PgDatabase[] = [];
  afterAll(async () => {
    for (const database of databases.splice(0)) await dropPgDatabase(database);
  });

  /** A fresh database, with the sequence the planted store takes seq from. */
  const freshDatabase = async () => {
    const database = await freshPgDatabase('journal_tail');
    databases.push(database);
    await (await postgresCluster()).psql(database.name, `CREATE SEQUENCE ${PLANTED_SEQUENCE}; GRANT USAGE ON SEQUENCE ${PLANTED_SEQUENCE} TO ${APP_ROLE}`);
    return database;
  };

  /** Every entry written is read once, in seq order, each seq one past the cursor: nothing skipped, nothing reordered. */
  const expectWholeTail = ({ written, seen, steps, pagesWhileWriting }: Awaited<ReturnType<typeof tailWhileWriting>>) => {
    expect(written).toHaveLength(WRITERS * LANES * APPENDS_PER_LANE);
    // The reader tailed while the writers wrote, a few entries a read: not one read at the end.
    expect(pagesWhileWriting).toBeGreaterThan(10);
    expect(steps, 'the reader stepped over seqs').toEqual([]);
    expect(seen.map((s) => s.hash).sort()).toEqual([...written].sort());
    expect(seen.map((s) => s.seq)).toEqual(seen.map((_, i) => i + 1));
  };

  it(`${WRITERS} processes × ${LANES} callers × ${APPENDS_PER_LANE} appends, each row held up to ${HOLD_MS_MAX} ms under the lock: the reader sees every entry, in seq order, none skipped`, async () => {
    expectWholeTail(await tailWhileWriting(await freshDatabase(), 'slow'));
  }, 60_000);

  // Not it.fails, which passes whatever throws: a planted store whose writers crash (or a reader
  // that reads too little) would pass it without showing the test catches the bug it exists for.
  it('a store that takes seq from a sequence outside the lock fails the check above: the reader steps past seqs committed late', async () => {
    const tail = await tailWhileWriting(await freshDatabase(), 'planted');
    // The writers themselves succeed, and the reader tailed them as they wrote.
    expect(tail.written).toHaveLength(WRITERS * LANES * APPENDS_PER_LANE);
    expect(tail.pagesWhileWriting).toBeGreaterThan(10);
    // What fails is the reader's tail, for that reason: it stepped over seqs, and never read what was there.
    expect(tail.steps).not.toEqual([]);
    expect(new Set(tail.seen.map((s) => s.hash)).size).toBeLessThan(tail.written.length);
    expect(() => expectWholeTail(tail)).toThrow(/the reader stepped over seqs/);
  }, 60_000);
});
