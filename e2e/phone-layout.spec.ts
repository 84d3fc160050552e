import { expect, type Page, test } from '@playwright/test';
import { logIn, queuedRefund, SCREENSHOT_DIR } from './journey-helpers.ts';

// The phone, at 390 × 844: the compact inbox shows at least 11 items in the first screen, and an
// item whose facts did not change puts the decision in the first screen and the payment before
// the facts, which fold into one line that says nothing changed.

const PHONE = { width: 390, height: 844 };
test.use({ viewport: PHONE, isMobile: true, hasTouch: true });

/** The top of an element on the page, in CSS pixels from the page's top. */
async function topOf(page: Page, selector: string): Promise<number> {
  return page.locator(selector).first().evaluate((el) => Math.round(el.getBoundingClientRect().top + window.scrollY));
}

test('at 390 px: 11 compact rows in view, the decision in the first screen and the payment before the folded facts', async ({ page, request }) => {
  const items = [];
  for (let i = 0; i < 12; i++) items.push(await queuedRefund(request, 7_401 + i, 10_000, `phone-${i}`));

  await logIn(page, 'ana');
  await page.getByRole('button', { name: 'Compact' }).click();
  await expect(page.locator('li.compact-row').nth(11)).toBeVisible();
  await page.evaluate(() => window.scrollTo(0, 0));
  const inView = await page.locator('li.compact-row').evaluateAll((rows, height) => rows.filter((row) => row.getBoundingClientRect().bottom <= height).length, PHONE.height);
  console.log(`compact rows in view at 390 × 844: ${inView}`);
  await page.screenshot({ path: `${SCREENSHOT_DIR}/phone-compact-390.png`, animations: 'disabled' });

  // An item nothing changed under: the decision, then the payment, then the facts folded.
  await page.goto(`/items/${items[0]?.effectId}`);
  await expect(page.locator('.decision-panel')).toBeVisible();
  await expect(page.locator('.payment-panel')).toBeVisible();
  const decisionY = await topOf(page, '.decision-panel');
  const approveBottom = await page.getByRole('button', { name: /^Approve/ }).evaluate((el) => Math.round(el.getBoundingClientRect().bottom + window.scrollY));
  const paymentY = await topOf(page, '.payment-panel');
  const factsY = await topOf(page, '.facts-panel');
  console.log(`item at 390 × 844: decision ${decisionY} px (approve button ends ${approveBottom}), payment ${paymentY} px, facts ${factsY} px`);
  await page.screenshot({ path: `${SCREENSHOT_DIR}/phone-item-390.png`, fullPage: true, animations: 'disabled' });

  expect(inView, 'compact rows wholly in the first screen').toBeGreaterThanOrEqual(11);
  expect(approveBottom, 'the approve button ends within the first screen').toBeLessThanOrEqual(PHONE.height);
  expect(paymentY, 'the payment comes before the facts').toBeLessThan(factsY);
  expect(paymentY, 'the payment starts within a screen and a half').toBeLessThanOrEqual(PHONE.height * 1.5);
  const facts = page.locator('.facts-panel details');
  await expect(facts.locator('summary')).toHaveText('Facts: nothing changed since the request');
  await expect(facts).not.toHaveAttribute('open', '');
  await facts.locator('summary').click();
  await expect(page.locator('tr[data-fact="left_to_refund"]')).toBeVisible();
});
