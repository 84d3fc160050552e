import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limits } from '../../shared/limits.ts';
import { ledgerCsvStream } from '../../server/ledger/csv-stream.ts';
import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

// The attack: any login that may read the ledger (finance, every approver) asks for the CSV many
// times at once. Each download is a worker thread with its own heap and its own connection to the
// journal file, held for as long as the client takes to read: twenty at once were twenty workers,
// memory without bound from one session.

const REQUESTS = 30;
const DOWNLOADS = 12;

let world: AppWorld;
beforeAll(async () => {
  world = await buildAppWorld();
  for (let i = 0; i < REQUESTS; i++) {
    const answer = await world.agent('POST', '/v1/refunds', { request_id: `csv-flood-${i}`, payment_intent: await world.payment(5_000), amount: 1_000 });
    expect(answer.statusCode).toBeLessThan(300);
  }
}, 60_000);
afterAll(async () => world.close());

describe('ledger CSV downloads asked for in a flood', () => {
  it('at most ledgerCsvExportsMax are made at once; past it 429 rate_limited with Retry-After, and the next after they end is made', async () => {
    // Two sessions: the bound is the server's, not one session's.
    const fin = await world.login('fin');
    const fin2 = await world.login('fin');
    // One first, so the export worker's code is ready and every request of the flood is alike.
    expect((await world.as(fin, 'GET', '/api/ledger.csv')).statusCode).toBe(200);
    const answers = await Promise.all(Array.from({ length: DOWNLOADS }, (_, i) => world.as(i % 2 === 0 ? fin : fin2, 'GET', '/api/ledger.csv')));
    const made = answers.filter((a) => a.statusCode === 200);
    expect(made.length).toBe(limits.ledgerCsvExportsMax);
    for (const answer of made) expect(answer.body.split('\r\n').length).toBe(REQUESTS + 2); // the header, a row each, the last line's end
    const refused = answers.filter((a) => a.statusCode !== 200);
    expect(refused.map((a) => [a.statusCode, a.json().error.code, a.headers['retry-after'] !== undefined])).toEqual(
      refused.map(() => [429, 'rate_limited', true]),
    );
    // Those ended: the next download is made.
    expect((await world.as(fin2, 'GET', '/api/ledger.csv')).statusCode).toBe(200);
  }, 60_000);

  it('a download nobody reads is stopped after ledgerCsvStallMs, its worker ended, so it cannot hold a slot for ever', async () => {
    const errors: unknown[] = [];
    const stream = ledgerCsvStream({
      file: world.services.storage.location,
      inboxName: world.services.config.inboxName,
      filter: {},
      displayNames: {},
      onError: (error) => errors.push(error),
      stallMs: 300,
    });
    const closed = new Promise((resolve) => stream.once('close', resolve));
    stream.on('error', () => {}); // said to onError, as the route logs it
    // The first chunk is made and waits in the stream; nobody takes it.
    await new Promise((resolve) => stream.once('readable', resolve));
    const startedMs = Date.now();
    await closed;
    expect(Date.now() - startedMs).toBeLessThan(5_000);
    expect(stream.destroyed).toBe(true);
    expect(String(errors[0])).toContain('read nothing of the ledger CSV');
    expect(limits.ledgerCsvStallMs).toBe(60_000);
  });
});
