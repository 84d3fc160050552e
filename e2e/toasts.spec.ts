import { expect, type Locator, type Page, test } from '@playwright/test';
import { awaitRepairOffered, handRefund, logIn, queuedRefund } from './journey-helpers.ts';

// Toasts confirm what a person did once the page moved on, and tell of what others did. A
// person's own repair is never announced back to them as a new item, and a toast never covers
// the item's buttons.

/** Every toast text shown from now on, even one that came and went between two looks. */
async function recordToasts(page: Page): Promise<() => Promise<string[]>> {
  await page.evaluate(() => {
    const seen: string[] = [];
    (window as unknown as { seenToasts: string[] }).seenToasts = seen;
    const look = () => {
      for (const toast of document.querySelectorAll('.toast-text')) if (!seen.includes(toast.textContent ?? '')) seen.push(toast.textContent ?? '');
    };
    new MutationObserver(look).observe(document.body, { childList: true, subtree: true, characterData: true });
  });
  return () => page.evaluate(() => (window as unknown as { seenToasts: string[] }).seenToasts);
}

/** True when two boxes on screen overlap. */
async function overlaps(a: Locator, b: Locator): Promise<boolean> {
  const [x, y] = [await a.boundingBox(), await b.boundingBox()];
  if (x === null || y === null) return false;
  return x.x < y.x + y.width && y.x < x.x + x.width && x.y < y.y + y.height && y.y < x.y + x.height;
}

test('toasts: a repair the person sends is not announced back to them, and no toast covers the item’s buttons', async ({ page, request }) => {
  test.setTimeout(90_000);
  // $80.00 asked of $100.00, $30.00 refunded by hand: the repair is $70.00.
  const { paymentIntent, effectId, requestId } = await queuedRefund(request, 8_000, 10_000, 'toast');
  await handRefund(request, paymentIntent, 3_000);
  await logIn(page, 'ana');
  await awaitRepairOffered(page, effectId);
  await page.goto(`/items/${effectId}`);
  const seen = await recordToasts(page);
  await page.getByRole('button', { name: 'Accept repair: Refund $70.00, what is left of $100.00' }).click();
  await page.getByRole('dialog', { name: 'Refund $70.00 instead of $80.00?' }).getByRole('button', { name: 'Accept: refund $70.00' }).click();
  const sent = page.locator('.toast').filter({ hasText: `asked in ${requestId}, which is closed and never sent` });
  await expect(sent).toBeVisible();
  // Long enough for the repair's own arrival on the live feed.
  await page.waitForTimeout(1_500);
  const texts = await seen();
  expect(texts.filter((text) => text.includes(`${requestId}:repair`) && text.startsWith('New:'))).toEqual([]);
  expect(texts.filter((text) => /new items in your inbox/.test(text))).toEqual([]);

  // The toast's link opens the repaired item; the toast stays while the pointer is on it.
  await sent.getByRole('link', { name: 'View it' }).click();
  await expect(page).toHaveURL(new RegExp(`/items/${effectId}`));
  await expect(sent).toBeVisible();
  const download = page.getByRole('link', { name: 'Download signed receipt (JSON)' });
  for (const where of ['top', 'bottom'] as const) {
    await page.evaluate((to) => window.scrollTo(0, to === 'top' ? 0 : document.documentElement.scrollHeight), where);
    for (const control of await page.locator('.item-side').getByRole('link').or(page.locator('.item-side').getByRole('button')).all()) {
      expect(await overlaps(sent, control), `a toast covers ${await control.textContent()} (page scrolled to the ${where})`).toBe(false);
    }
  }
  await download.focus();
  expect(await overlaps(sent, download)).toBe(false);
  await page.screenshot({ path: 'test-results/screenshots/toast-over-item-1280.png', animations: 'disabled' });
});
