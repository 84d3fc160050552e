import { afterEach, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../../db/journal-store.ts';
import { confirmEvent } from '../../server/confirm/record.ts';
import type { StripeEventLike } from '../../server/confirm/signature.ts';
import { signWebhook } from '../../server/confirm/signature.ts';
import { appendSteps, buildRefundEvent, buildWebhookApp, committedSteps, confirmedStatuses, deliver, EFFECT_ID, post, SECRET } from '../support/confirm-world.ts';
import { raceDeliveries } from '../support/confirm-race.ts';
import { cleanUpDatabases, fakeClock, openTempDatabase, tempDbFile } from '../support/db-journals.ts';

afterEach(cleanUpDatabases);

/** A SqliteJournal on a fresh temp file holding a committed refund for EFFECT_ID. */
async function committedOnFile(): Promise<{ file: string; journal: SqliteJournal }> {
  const file = tempDbFile();
  const journal = new SqliteJournal({ db: openTempDatabase(file).db, ...fakeClock() });
  await appendSteps(journal, EFFECT_ID, committedSteps());
  return { file, journal };
}

// seed: tests/test_confirmations.py Recording test_concurrent_deliveries_record_once
describe('8 concurrent deliveries of one event record exactly one CONFIRMED (SqliteJournal on a temp file)', () => {
  it('through the endpoint: 8 simultaneous POSTs answer 200, one CONFIRMED and seven DUPLICATE_IGNORED', async () => {
    const { journal } = await committedOnFile();
    const { app, confirmed } = await buildWebhookApp(journal);
    const { body, header } = deliver(buildRefundEvent());
    const responses = await Promise.all(Array.from({ length: 8 }, () => post(app, body, header)));
    expect(responses.map((r) => r.statusCode)).toEqual(Array(8).fill(200));
    const results = responses.map((r) => (r.json() as { result: string }).result).sort();
    expect(results).toEqual(['CONFIRMED', ...Array(7).fill('DUPLICATE_IGNORED')]);
    expect(await confirmedStatuses(journal)).toEqual(['pending']);
    expect(confirmed).toEqual([EFFECT_ID]);
  });

  it('8 connections to one file, recording at once, write one CONFIRMED', async () => {
    const { file, journal } = await committedOnFile();
    const journals = Array.from({ length: 8 }, () => new SqliteJournal({ db: openTempDatabase(file).db, ...fakeClock() }));
    const event = buildRefundEvent() as StripeEventLike;
    const results = await Promise.all(journals.map((each) => confirmEvent(each, event)));
    expect(results.sort()).toEqual(['CONFIRMED', ...Array(7).fill('DUPLICATE_IGNORED')]);
    expect(await confirmedStatuses(journal)).toEqual(['pending']);
  });

  // Each racer is a node process with its own connection: only SQLite's file lock (BEGIN IMMEDIATE)
  // stands between them. Four keep the suite quick on two cores; the eight above share one process.
  it('across OS processes: 4 processes, each verifying and recording the same delivery at once, write one CONFIRMED', async () => {
    const { file, journal } = await committedOnFile();
    const body = Buffer.from(JSON.stringify(buildRefundEvent(), null, 2), 'utf8');
    // Signed now: each process judges the timestamp on its own wall clock.
    const header = signWebhook(body, SECRET, Math.floor(Date.now() / 1000));
    const results = await raceDeliveries(file, SECRET, { body, header }, 4);
    expect(results.sort()).toEqual(['CONFIRMED', ...Array(3).fill('DUPLICATE_IGNORED')]);
    expect(await confirmedStatuses(journal)).toEqual(['pending']);
  }, 60_000);
});
