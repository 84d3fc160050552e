import { expect, test } from '@playwright/test';
import { ledger, logIn, queuedRefund } from './journey-helpers.ts';

// After a decision the next item opens; a key pressed while it loads is never lost and never
// applied to another item: the page says "Loading the next item…", `a` waits for the item and
// opens its confirmation once it is shown, Enter confirms nothing. At 1280 × 800.

test.use({ viewport: { width: 1280, height: 800 } });

test('keys pressed while the next item loads wait for it, or say why they did nothing', async ({ page, request }) => {
  // Two items alone in a list filtered by amount ($61.01 and $61.02).
  const first = await queuedRefund(request, 6_101, 10_000, 'loading-first');
  const second = await queuedRefund(request, 6_102, 10_000, 'loading-second');
  await logIn(page, 'ana');
  await page.goto('/?currency=usd&min=61.01&max=61.02');
  await expect(page.locator('li.inbox-row')).toHaveCount(2);
  const order = await page.locator('li.inbox-row').evaluateAll((rows) => rows.map((row) => (row as HTMLElement).dataset.effectId ?? ''));
  const [open, next] = order[0] === first.effectId ? [first, second] : [second, first];

  // The next item's page takes its time to load, as in a busy burst.
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  await page.route(`**/api/items/${next.effectId}`, async (route) => {
    await held;
    await route.continue();
  });
  await page.keyboard.press('j');
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(new RegExp(`/items/${open.effectId}\\?`));
  await expect(page.getByRole('button', { name: /^Approve/ })).toBeVisible();
  await page.keyboard.press('a');
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(new RegExp(`/items/${next.effectId}\\?`));
  const loading = page.getByRole('status').filter({ hasText: 'Loading the next item…' });
  await expect(loading).toBeVisible();

  // a and Enter while it loads: a waits for this item, Enter confirms nothing; both are said.
  await page.keyboard.press('a');
  await expect(loading).toContainText('“a” waits for this item: its confirmation opens once the item is shown.');
  await page.keyboard.press('Enter');
  await expect(loading).toContainText('Enter did nothing: the item is still loading');
  expect((await ledger(request, next.paymentIntent)).map((r) => r.amount)).toEqual([]);

  release();
  const dialog = page.getByRole('dialog');
  await expect(dialog).toContainText(next.requestId);
  await expect(dialog).toContainText(next.effectId === second.effectId ? '$61.02' : '$61.01');
  await page.keyboard.press('Escape');
  await expect(dialog).toHaveCount(0);
  expect((await ledger(request, next.paymentIntent)).map((r) => r.amount)).toEqual([]);
  expect((await ledger(request, open.paymentIntent)).map((r) => r.amount)).toEqual([open === first ? 6_101 : 6_102]);
});
