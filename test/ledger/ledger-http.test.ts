import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LEDGER_COLUMNS, LEDGER_CSV_COLUMNS, LEDGER_LATER_COLUMNS, type LedgerPage, type LedgerRow, type LedgerTotals } from '../../shared/ledger.ts';
import type { SignedReceipt } from '../../server/receipts/receipts.ts';
import { verifyReceipt } from '../../server/receipts/verify.ts';
import { AGENT_TOKEN } from '../support/app-world.ts';
import { buildLedgerWorld, FORMULA_AGENT, FORMULA_AGENT_TOKEN, type LedgerWorld, type Login, parseCsv } from './ledger-world.ts';

// The refund ledger over real HTTP: a listening server on a real SQLite journal, refunds sent
// through the Stripe sandbox with its signed webhooks coming back, people deciding through the
// API. Every row's fields, the filters, cursor paging while entries are appended, the CSV against
// the JSON, a formula in a cell, and who may read it.

const HOUR_MS = 3_600_000;
const RULES = ["amount within its currency's limit", 'no flag that needs a person', 'payment not disputed', 'amount fits what is left'];

let lw: LedgerWorld;
let fin: Login;
let ana: Login;
const ids: Record<string, string> = {};
const intents: Record<string, string> = {};
let firstHalf: { fromMs: number; toMs: number };
let secondHalfFromMs: number;
let decidedAt: { fromMs: number; toMs: number };

async function asked(name: string, paymentIntent: string, amount: number, token?: string): Promise<string> {
  const answer = await lw.ask(name, paymentIntent, amount, token);
  ids[name] = answer.effect_id;
  intents[name] = paymentIntent;
  return answer.status;
}

beforeAll(async () => {
  lw = await buildLedgerWorld();
  const clock = lw.world.clock;
  const payment = (cents: number) => lw.world.payment(cents);
  const startMs = clock.nowMs();
  expect(await asked('pol-1', await payment(10_000), 2_000)).toBe('COMMITTED');
  expect(await asked('big-1', await payment(10_000), 8_000)).toBe('QUEUED');
  expect(await asked('rej-1', await payment(10_000), 9_000)).toBe('QUEUED');
  firstHalf = { fromMs: startMs, toMs: clock.nowMs() + 1 };
  secondHalfFromMs = clock.advance(HOUR_MS);
  expect(await asked('jpy-1', await lw.paymentIn('jpy', 10_000), 3_000)).toBe('COMMITTED');
  expect(await asked('-2-3', await payment(10_000), 1_500, FORMULA_AGENT_TOKEN)).toBe('COMMITTED');
  expect(await asked('open-1', await payment(10_000), 7_000)).toBe('QUEUED');
  ana = await lw.login('ana');
  fin = await lw.login('fin');
  const beforeDecisions = clock.nowMs();
  expect(await lw.decide(ana, ids['big-1']!, 'approve')).toBe('COMMITTED');
  expect(await lw.decide(ana, ids['rej-1']!, 'reject', 'not eligible under the returns policy')).toBe('REJECTED');
  decidedAt = { fromMs: beforeDecisions, toMs: clock.nowMs() };
  await lw.world.sandbox.webhooksIdle();
});
afterAll(async () => lw?.close());

const names = (rows: readonly LedgerRow[]) => rows.map((row) => row.request_id);
const page = async (who: Login, query: string) => (await (await lw.get(who, `/api/ledger?${query}`)).json()) as LedgerPage;
const refundOf = (name: string) => lw.world.sandbox.refunds(intents[name]!)[0]!.id;

describe('GET /api/ledger: one row per request', () => {
  it('holds every request, newest first, with every field as the journal and Stripe have it', async () => {
    const rows = await lw.allPages(fin);
    expect(names(rows)).toEqual(['open-1', '-2-3', 'jpy-1', 'rej-1', 'big-1', 'pol-1']);
    const row = (name: string) => rows.find((r) => r.request_id === name)!;
    const base = (name: string) => ({ request_id: name, payment_intent: intents[name], effect_id: ids[name], receipt_url: `/api/ledger/${ids[name]}/receipt`, repair_of: null, amount_failed_minor: null, reject_reason: null, approved_by_logins: [], beneficiary: null });
    const inFirstHalf = expect.toSatisfy((ms: number) => ms >= firstHalf.fromMs && ms < firstHalf.toMs);
    const inSecondHalf = expect.toSatisfy((ms: number) => ms >= secondHalfFromMs);
    const whenDecided = expect.toSatisfy((ms: number) => ms >= decidedAt.fromMs && ms <= decidedAt.toMs);
    const policy = { decided_by_kind: 'policy', decided_by: 'policy', decided_by_login: null, policy_rules: RULES };
    const confirmed = { confirmation: 'succeeded', confirmed_via: 'webhook' };
    expect(row('pol-1')).toEqual({
      ...base('pol-1'), agent: 'support-bot', amount_asked_minor: 2_000, amount_sent_minor: 2_000, currency: 'usd', status: 'COMMITTED',
      ...policy, decided_at_ms: row('pol-1').requested_at_ms, refund_id: refundOf('pol-1'), ...confirmed, requested_at_ms: inFirstHalf, groups: [], outcome: 'refunded',
    });
    expect(row('big-1')).toEqual({
      ...base('big-1'), agent: 'support-bot', amount_asked_minor: 8_000, amount_sent_minor: 8_000, currency: 'usd', status: 'COMMITTED',
      decided_by_kind: 'person', decided_by: 'Ana Lopez', decided_by_login: 'ana', policy_rules: [], decided_at_ms: whenDecided,
      refund_id: refundOf('big-1'), ...confirmed, requested_at_ms: inFirstHalf, groups: ['ap-leads'], outcome: 'refunded', approved_by_logins: ['ana'],
    });
    expect(row('rej-1')).toEqual({
      ...base('rej-1'), agent: 'support-bot', amount_asked_minor: 9_000, amount_sent_minor: null, currency: 'usd', status: 'CLOSED',
      decided_by_kind: 'person', decided_by: 'Ana Lopez', decided_by_login: 'ana', policy_rules: [], decided_at_ms: whenDecided,
      refund_id: null, confirmation: 'not_sent', confirmed_via: null, requested_at_ms: inFirstHalf, groups: ['ap-leads'],
      // The agent is told CLOSED; finance reads that a person rejected it, and why.
      outcome: 'rejected', reject_reason: 'not eligible under the returns policy',
    });
    // A zero-decimal currency: 3,000 is ¥3,000, in the payment's own currency.
    expect(row('jpy-1')).toEqual({
      ...base('jpy-1'), agent: 'support-bot', amount_asked_minor: 3_000, amount_sent_minor: 3_000, currency: 'jpy', status: 'COMMITTED',
      ...policy, decided_at_ms: row('jpy-1').requested_at_ms, refund_id: refundOf('jpy-1'), ...confirmed, requested_at_ms: inSecondHalf, groups: [], outcome: 'refunded',
    });
    expect(row('-2-3')).toMatchObject({ agent: FORMULA_AGENT, status: 'COMMITTED', ...policy, refund_id: refundOf('-2-3'), ...confirmed });
    expect(row('open-1')).toEqual({
      ...base('open-1'), agent: 'support-bot', amount_asked_minor: 7_000, amount_sent_minor: null, currency: 'usd', status: 'QUEUED',
      decided_by_kind: null, decided_by: null, decided_by_login: null, policy_rules: [], decided_at_ms: null,
      refund_id: null, confirmation: 'not_sent', confirmed_via: null, requested_at_ms: inSecondHalf, groups: ['ap-leads'], outcome: 'open',
    });
  });

  it("says each request's status as the agent is told it, and links the receipt of its journal chain", async () => {
    for (const row of await lw.allPages(ana)) {
      const token = row.agent === FORMULA_AGENT ? FORMULA_AGENT_TOKEN : AGENT_TOKEN;
      const told = await fetch(`${lw.url}/v1/refunds/${encodeURIComponent(row.request_id)}`, { headers: { authorization: `Bearer ${token}` } });
      expect([row.request_id, ((await told.json()) as { status: string }).status]).toEqual([row.request_id, row.status]);
      for (const who of [fin, ana]) {
        const receipt = await lw.get(who, row.receipt_url);
        const signed = (await receipt.json()) as SignedReceipt;
        expect([row.request_id, receipt.status, signed.effect_id]).toEqual([row.request_id, 200, row.effect_id]);
        const report = await verifyReceipt(signed, new Map([[lw.world.services.signingKey.keyId, lw.world.services.signingKey.publicKeyPem]]));
        expect([row.request_id, report.valid, report.problems]).toEqual([row.request_id, true, []]);
      }
    }
  });

  it.each([
    ['status=COMMITTED', ['-2-3', 'jpy-1', 'big-1', 'pol-1']],
    ['status=QUEUED', ['open-1']],
    ['status=CLOSED', ['rej-1']],
    [`agent=${FORMULA_AGENT}`, ['-2-3']],
    ['agent=support-bot&currency=usd', ['open-1', 'rej-1', 'big-1', 'pol-1']],
    ['group=ap-leads', ['open-1', 'rej-1', 'big-1']],
    ['currency=jpy', ['jpy-1']],
    ['status=COMMITTED&currency=usd&from_ms=SECOND', ['-2-3']],
    ['to_ms=SECOND', ['rej-1', 'big-1', 'pol-1']],
    ['from_ms=SECOND&group=ap-leads', ['open-1']],
    ['agent=&group=&status=&currency=&from_ms=&to_ms=&outcome=', ['open-1', '-2-3', 'jpy-1', 'rej-1', 'big-1', 'pol-1']],
    ['outcome=rejected', ['rej-1']],
    ['outcome=refunded&currency=usd', ['-2-3', 'big-1', 'pol-1']],
    ['outcome=open', ['open-1']],
    ['outcome=repaired', []],
    ['status=CLOSED&outcome=repaired', []],
  ])('filters by %s', async (query, expected) => {
    const rows = await lw.allPages(fin, query.replaceAll('SECOND', String(secondHalfFromMs)), 2);
    expect(names(rows)).toEqual(expected);
  });

  it.each([
    ['cursor=garbage', 'cursor: not a cursor this ledger gave out; ask for the first page again without one'],
    [`cursor=${Buffer.from('ledger:v1:0').toString('base64url')}`, 'cursor: not a cursor this ledger gave out; ask for the first page again without one'],
    [`cursor=${Buffer.from('offset:20').toString('base64url')}`, 'cursor: not a cursor this ledger gave out; ask for the first page again without one'],
    ['limit=0', 'limit: rows per page, 1 to 200'],
    ['limit=201', 'limit: rows per page, 1 to 200'],
    ['limit=-1', 'limit: rows per page, 1 to 200'],
    ['status=SENT', 'status: not a status agents are told (COMMITTED, QUEUED, CLOSED, REFUSED:stale_premise, …)'],
    ['group=nope', 'group: not a group in the config'],
    ['currency=USD', 'currency: a currency as Stripe writes it: three lowercase letters (usd, jpy)'],
    ['outcome=CLOSED', 'outcome: how the request ended: one of open, refunded, failed_at_stripe, rejected, repaired, refused, ambiguous, closed'],
    ['from_ms=yesterday', null],
    ['page=2', 'page: unknown field'],
  ])('refuses %s with 400 validation_failed and a clear message', async (query, message) => {
    const answer = await lw.get(fin, `/api/ledger?${query}`);
    const body = (await answer.json()) as { error: { code: string; message: string } };
    expect([answer.status, body.error.code]).toEqual([400, 'validation_failed']);
    if (message !== null) expect(body.error.message).toBe(message);
    else expect(body.error.message.startsWith('from_ms')).toBe(true);
  });
});

describe('cursor paging', () => {
  it('never skips or repeats a row while requests and decisions are appended between pages', async () => {
    const before = names(await lw.allPages(fin));
    const seen: string[] = [];
    let cursor: string | null = null;
    let late = 0;
    do {
      const found: LedgerPage = await page(fin, `limit=2${cursor === null ? '' : `&cursor=${cursor}`}`);
      seen.push(...names(found.rows));
      cursor = found.next_cursor;
      // Between pages: a new request that clears at once, another that waits for a person, and
      // new entries on a request already paged past (open-1 is rejected).
      late += 1;
      expect(await asked(`late-${late}`, await lw.world.payment(10_000), late % 2 === 1 ? 1_000 : 6_000)).toMatch(/^(COMMITTED|QUEUED)$/);
      if (late === 1) expect(await lw.decide(ana, ids['open-1']!, 'reject', 'duplicate of an earlier case')).toBe('REJECTED');
    } while (cursor !== null);
    expect(seen).toEqual(before);
    expect(new Set(seen).size).toBe(seen.length);
    // The appended requests are above where paging began: the first page shows them now.
    const first = await page(fin, 'limit=200');
    expect(names(first.rows).slice(0, late)).toEqual(Array.from({ length: late }, (_, i) => `late-${late - i}`));
    expect(first.rows.find((r) => r.request_id === 'open-1')?.status).toBe('CLOSED');
    expect(first.next_cursor).toBeNull();
  });

  it('a cursor keeps its place: the same cursor asked again gives the same rows', async () => {
    const first = await page(fin, 'limit=3');
    const again = [await page(fin, `limit=3&cursor=${first.next_cursor}`), await page(fin, `limit=3&cursor=${first.next_cursor}`)];
    expect(names(again[0]!.rows)).toEqual(names(again[1]!.rows));
    expect(names(again[0]!.rows)).not.toContain(first.rows[0]!.request_id);
  });
});

/** A row's field as the CSV must carry it, written out here apart from the exporter. */
function expectedCell(value: LedgerRow[keyof LedgerRow]): string {
  if (value === null) return '';
  if (typeof value === 'number') return String(value);
  const text = Array.isArray(value) ? value.join('; ') : value;
  return /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
}

/** The columns made for a spreadsheet, written out here apart from the exporter: ISO-8601 UTC times, decimal amounts. */
function expectedExtraCells(row: LedgerRow): string[] {
  const iso = (ms: number | null) => (ms === null ? '' : new Date(ms).toISOString());
  const decimals = row.currency === 'jpy' ? 0 : 2;
  const decimal = (minor: number | null) => (minor === null ? '' : (minor / 10 ** decimals).toFixed(decimals));
  return [iso(row.requested_at_ms), iso(row.decided_at_ms), decimal(row.amount_asked_minor), decimal(row.amount_sent_minor), decimal(row.amount_failed_minor)];
}

describe('GET /api/ledger.csv', () => {
  it.each([
    ['', ''],
    ['status=COMMITTED&currency=usd', 'status=COMMITTED&currency=usd'],
    ['group=ap-leads&from_ms=SECOND', 'group=ap-leads&from_ms=SECOND'],
  ])('streams the same rows as the JSON pages, field for field (%s)', async (query) => {
    const filter = query.replaceAll('SECOND', String(secondHalfFromMs));
    const json = await lw.allPages(fin, filter, 2);
    const answer = await lw.get(fin, `/api/ledger.csv${filter ? `?${filter}` : ''}`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(answer.headers.get('content-disposition')).toBe('attachment; filename="interlock-ledger.csv"');
    const [header, ...records] = parseCsv(await answer.text());
    expect(header).toEqual([...LEDGER_CSV_COLUMNS]);
    // Amounts are named for the smallest currency unit, not for cents: the yen row holds whole yen.
    expect(header?.slice(3, 6)).toEqual(['amount_asked_minor', 'amount_sent_minor', 'currency']);
    // Every field of a row first, in order; the columns made for a spreadsheet after them.
    expect(records.map((record) => record.slice(0, LEDGER_COLUMNS.length))).toEqual(json.map((row) => LEDGER_COLUMNS.map((column) => expectedCell(row[column]))));
    expect(records.map((record) => record.slice(LEDGER_COLUMNS.length, LEDGER_COLUMNS.length + 5))).toEqual(json.map(expectedExtraCells));
    // A field added later comes after those, so every earlier column keeps its place.
    expect(records.map((record) => record.slice(LEDGER_COLUMNS.length + 5))).toEqual(json.map((row) => LEDGER_LATER_COLUMNS.map((column) => expectedCell(row[column]))));
    expect(records.length).toBeGreaterThan(0);
  });

  it('keeps a request id or an agent that starts like a formula as text, quoted', async () => {
    const text = await (await lw.get(fin, `/api/ledger.csv?agent=${FORMULA_AGENT}`)).text();
    const [, record] = parseCsv(text);
    expect(record?.slice(0, 2)).toEqual(["'-2-3", `'${FORMULA_AGENT}`]);
    expect(text).toContain(`\r\n"'-2-3","'${FORMULA_AGENT}",`);
    expect(text).not.toMatch(/(^|,)[=+\-@]/m);
  });

  it('says how each request ended and why a person rejected it, with times and amounts a spreadsheet reads', async () => {
    const [header, ...records] = parseCsv(await (await lw.get(fin, '/api/ledger.csv?outcome=rejected')).text());
    expect(records.every((record) => record[header!.indexOf('outcome')] === 'rejected')).toBe(true);
    const rejected = Object.fromEntries(header!.map((column, i) => [column, records.find((record) => record[0] === 'rej-1')![i]]));
    expect(rejected).toMatchObject({ request_id: 'rej-1', status: 'CLOSED', outcome: 'rejected', reject_reason: 'not eligible under the returns policy', amount_asked_minor: '9000', amount_asked: '90.00', amount_sent: '' });
    expect(rejected.decided_at).toBe(new Date(Number(rejected.decided_at_ms)).toISOString());
    const [yenHeader, ...yen] = parseCsv(await (await lw.get(fin, '/api/ledger.csv?currency=jpy')).text());
    const amounts = ['amount_asked', 'amount_sent', 'amount_failed'].map((column) => yen[0]![yenHeader!.indexOf(column)]);
    expect(amounts).toEqual(['3000', '3000', '']);
  });

  it('is the whole filter, never a page: a cursor or a limit is refused', async () => {
    for (const query of ['limit=2', 'cursor=abc']) {
      const answer = await lw.get(fin, `/api/ledger.csv?${query}`);
      expect([answer.status, ((await answer.json()) as { error: { code: string } }).error.code]).toEqual([400, 'validation_failed']);
    }
  });
});

describe('GET /api/ledger/totals', () => {
  const totals = async (who: Login, query = '') => {
    const answer = await lw.get(who, `/api/ledger/totals${query ? `?${query}` : ''}`);
    expect(answer.status).toBe(200);
    return (await answer.json()) as LedgerTotals;
  };

  it('adds up every row of the filter per currency, whatever the page, as the rows themselves sum', async () => {
    for (const query of ['', 'currency=usd', 'outcome=refunded', 'group=ap-leads', `from_ms=${secondHalfFromMs}`, 'outcome=rejected&currency=jpy']) {
      const rows = await lw.allPages(fin, query, 2);
      const found = await totals(fin, query);
      expect([query, found.count]).toEqual([query, rows.length]);
      for (const currency of new Set(rows.map((row) => row.currency ?? 'unknown'))) {
        const mine = rows.filter((row) => (row.currency ?? 'unknown') === currency);
        const sum = (minor: (row: LedgerRow) => number | null) => mine.reduce((total, row) => total + (minor(row) ?? 0), 0);
        expect(found.currencies[currency]).toMatchObject({ count: mine.length, asked_minor: sum((r) => r.amount_asked_minor), sent_minor: sum((r) => r.amount_sent_minor), failed_minor: sum((r) => r.amount_failed_minor) });
        for (const [outcome, total] of Object.entries(found.currencies[currency]!.by_outcome)) {
          const these = mine.filter((row) => row.outcome === outcome);
          expect([query, currency, outcome, total]).toEqual([query, currency, outcome, { count: these.length, asked_minor: these.reduce((t, r) => t + r.amount_asked_minor, 0) }]);
        }
      }
      expect(Object.keys(found.currencies).sort()).toEqual([...new Set(rows.map((row) => row.currency ?? 'unknown'))].sort());
    }
  });

  it('never adds dollars to yen, and keeps each outcome apart', async () => {
    const firstHour = await totals(fin, `to_ms=${secondHalfFromMs}`);
    expect(Object.keys(firstHour.currencies)).toEqual(['usd']);
    expect(firstHour.currencies.usd).toMatchObject({ count: 3, asked_minor: 19_000, sent_minor: 10_000, failed_minor: 0 });
    expect(firstHour.currencies.usd?.by_outcome.rejected).toEqual({ count: 1, asked_minor: 9_000 });
    expect(firstHour.currencies.usd?.by_outcome.refunded).toEqual({ count: 2, asked_minor: 10_000 });
    const yen = await totals(fin, 'currency=jpy');
    expect(Object.keys(yen.currencies)).toEqual(['jpy']);
    expect(yen.currencies.jpy).toMatchObject({ count: 1, asked_minor: 3_000, sent_minor: 3_000, failed_minor: 0 });
  });

  it("an approver's totals are of their own groups' requests only, as their rows are", async () => {
    const bea = await lw.login('bea');
    const rows = await lw.allPages(bea);
    expect((await totals(bea)).count).toBe(rows.length);
    expect(rows.every((row) => row.groups.includes('ap-leads'))).toBe(true);
    expect((await totals(bea)).count).toBeLessThan((await totals(fin)).count);
    const cy = await lw.login('cy');
    expect(await totals(cy)).toMatchObject({ count: 0, currencies: {} });
  });

  it('takes the filter only, and refuses what the ledger refuses', async () => {
    for (const query of ['limit=2', 'cursor=abc', 'outcome=CLOSED', 'group=nope']) {
      const answer = await lw.get(fin, `/api/ledger/totals?${query}`);
      expect([query, answer.status, ((await answer.json()) as { error: { code: string } }).error.code]).toEqual([query, 400, 'validation_failed']);
    }
  });
});

describe('who may read the ledger', () => {
  it.each(['/api/ledger', '/api/ledger.csv', '/api/ledger/totals'])('%s: finance and approvers read it; no session, a bad cookie or an agent token is 401', async (path) => {
    expect((await lw.get(fin, path)).status).toBe(200);
    expect((await lw.get(ana, path)).status).toBe(200);
    for (const [who, headers] of [
      [null, {}],
      [{ cookie: 'interlock_session=forged' }, {}],
      [null, { authorization: `Bearer ${AGENT_TOKEN}` }],
      [null, { authorization: `Bearer ${FORMULA_AGENT_TOKEN}` }],
    ] as const) {
      const answer = await lw.get(who, path, headers);
      const text = await answer.text();
      expect([answer.status, JSON.parse(text).error.code]).toEqual([401, 'unauthorized']);
      expect(text).not.toContain('pol-1');
    }
  });

  it('a session that logged out is refused', async () => {
    const bea = await lw.login('bea');
    expect((await lw.get(bea, '/api/ledger')).status).toBe(200);
    await lw.logout(bea);
    for (const path of ['/api/ledger', '/api/ledger.csv']) expect((await lw.get(bea, path)).status).toBe(401);
  });
});
