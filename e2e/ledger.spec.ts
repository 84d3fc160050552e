import { expect, type Page, test } from '@playwright/test';
import type { LedgerPage, LedgerRow } from '../shared/ledger.ts';
import { askRefund, createPayment, expectAccessible, PASSWORD, shoot, uniqueId } from './journey-helpers.ts';

// Finance's ledger in the browser: the rows the API gives, a filter kept in the address bar, the
// CSV link for the same filter, and the page scanned with axe.

test.describe.configure({ timeout: 90_000 });

/** Every row of the JSON ledger for a query, following next_cursor. */
async function apiRows(page: Page, query: string): Promise<LedgerRow[]> {
  const rows: LedgerRow[] = [];
  let cursor: string | null = null;
  do {
    const response = await page.request.get(`/api/ledger?limit=200&${query}${cursor === null ? '' : `&cursor=${cursor}`}`);
    expect(response.ok(), await response.text()).toBe(true);
    const found = (await response.json()) as LedgerPage;
    rows.push(...found.rows);
    cursor = found.next_cursor;
  } while (cursor !== null);
  return rows;
}

test('finance reads the ledger, filters it by status in the address bar, and downloads the same rows as CSV', async ({ page }) => {
  const cleared = uniqueId('ledger-cleared');
  const queued = uniqueId('ledger-queued');
  expect((await askRefund(page.request, { request_id: cleared, payment_intent: await createPayment(page.request, 10_000), amount: 1_500 })).status).toBe('COMMITTED');
  expect((await askRefund(page.request, { request_id: queued, payment_intent: await createPayment(page.request, 10_000), amount: 8_000 })).status).toBe('QUEUED');
  expect((await page.request.post('/api/session', { data: { name: 'fin', password: PASSWORD } })).ok()).toBe(true);

  await page.goto('/scoreboard');
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Ledger' }).click();
  await expect(page.getByRole('heading', { name: 'Ledger', exact: true })).toBeVisible();
  const table = page.locator('.ledger-table');
  await expect(table.getByRole('rowheader', { name: new RegExp(cleared) })).toBeVisible();
  await expect(table.getByRole('row', { name: new RegExp(cleared) })).toContainText('Policy');

  await page.getByLabel('Status').selectOption('QUEUED');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await expect(page).toHaveURL(/\/ledger\?status=QUEUED$/);
  await expect(table.getByRole('rowheader', { name: new RegExp(queued) })).toBeVisible();
  await expect(table.getByRole('rowheader', { name: new RegExp(cleared) })).toHaveCount(0);
  await expectAccessible(page, 'the ledger');
  await shoot(page, 'ledger');

  const href = await page.getByRole('link', { name: 'Download CSV' }).getAttribute('href');
  expect(href).toBe('/api/ledger.csv?status=QUEUED');
  const csv = await page.request.get(href!);
  expect(csv.headers()['content-type']).toBe('text/csv; charset=utf-8');
  const requestIds = (await csv.text())
    .split('\r\n')
    .slice(1, -1)
    .map((line) => JSON.parse(line.slice(0, line.indexOf('",') + 1)) as string);
  expect(requestIds).toEqual((await apiRows(page, 'status=QUEUED')).map((row) => row.request_id));
  expect(requestIds).toContain(queued);

  // A reload keeps the filter: it lives in the address.
  await page.reload();
  await expect(page.getByLabel('Status')).toHaveValue('QUEUED');
  await expect(table.getByRole('rowheader', { name: new RegExp(queued) })).toBeVisible();
});
