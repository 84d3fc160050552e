import { expect, type Page, test } from '@playwright/test';
import type { JsonObject } from '../shared/json.ts';
import { AGENT_TOKEN, askRefund, createPayment, expectAccessible, logIn, shoot, uniqueId } from './journey-helpers.ts';

// The verify page checks a receipt in the browser, with the verifier the server and the command
// line use (shared/receipts/verify.ts), against the published keys: no login, and no server call
// once the keys are read.

/** A refund under the policy limit that an agent asks for and that is sent at once; its receipt as the agent downloads it. */
async function sentRefundReceipt(page: Page): Promise<JsonObject> {
  const paymentIntent = await createPayment(page.request, 10_000);
  const answer = await askRefund(page.request, {
    request_id: uniqueId('verify'),
    payment_intent: paymentIntent,
    amount: 2_000,
    reason: 'Arrived damaged',
  });
  expect(answer.status).toBe('COMMITTED');
  const response = await page.request.get(`/v1/receipts/${answer.effect_id}`, { headers: { authorization: `Bearer ${AGENT_TOKEN}` } });
  expect(response.ok(), await response.text()).toBe(true);
  return (await response.json()) as JsonObject;
}

/** The same receipt with the amount its send carried changed, and nothing resealed. */
function withAmountChanged(receipt: JsonObject): { receipt: JsonObject; index: number } {
  const entries = structuredClone(receipt.entries) as JsonObject[];
  const index = entries.findIndex((entry) => entry.kind === 'DISPATCHED');
  expect(index).toBeGreaterThan(0);
  const effect = entries[index]!.effect as JsonObject;
  effect.amount = Number(effect.amount) * 10;
  return { receipt: { ...receipt, entries }, index };
}

test('verify: anyone checks a downloaded receipt in the browser, without logging in; an altered amount is refused as altered_entry', async ({ page }) => {
  test.setTimeout(90_000);
  const receipt = await sentRefundReceipt(page);
  // The server's verifications are shut: the page must not need them.
  await page.route('**/v1/receipts/**', (route) => route.abort());
  await page.route('**/api/items/**', (route) => route.abort());
  const calls: string[] = [];
  page.on('request', (request) => {
    if (request.resourceType() === 'fetch' || request.resourceType() === 'xhr') calls.push(new URL(request.url()).pathname);
  });

  await page.goto('/verify');
  await expect(page.getByRole('heading', { level: 1, name: 'Verify a receipt' })).toBeVisible();
  await expect(page.getByRole('link', { name: 'Log in', exact: true })).toBeVisible();
  await expect(page.getByText('Published key:')).toContainText(String(receipt.key_id));
  expect(calls).toContain('/.well-known/interlock-keys');
  calls.length = 0;

  // The file as downloaded, chosen in the file input.
  await page.getByLabel('Receipt file (JSON)').setInputFiles({
    name: `interlock-receipt-${String(receipt.effect_id)}.json`,
    mimeType: 'application/json',
    buffer: Buffer.from(JSON.stringify(receipt, null, 2)),
  });
  const verdict = page.getByTestId('verify-verdict');
  await expect(verdict).toHaveText(/This receipt is valid/);
  const claims = page.locator('.verify-claims');
  await expect(claims.locator('div', { hasText: 'Signature' })).toContainText('Valid');
  await expect(claims.locator('div', { hasText: 'Happened' })).toContainText('Yes');
  await expect(claims.locator('div', { hasText: 'At most once' })).toContainText('Yes');
  await expect(claims.locator('div', { hasText: 'Authorized when sent' })).toContainText('Yes');
  await expect(claims.locator('div', { hasText: 'Assumptions held' })).toContainText('Yes');
  await expect(claims.locator('div', { hasText: 'Approved by' })).toContainText('No person');
  await expect(claims.locator('div', { hasText: 'Confirmed by Stripe' })).toBeVisible();
  await expect(page.locator('.verify-problems')).toHaveCount(0);
  await expectAccessible(page, 'the verify page with a valid receipt');
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.screenshot({ path: 'web/screenshots/verify.png', fullPage: true, animations: 'disabled' });
  await shoot(page, 'verify-valid');

  // One amount changed in the pasted JSON: the entry's hash no longer holds.
  const tampered = withAmountChanged(receipt);
  await page.getByLabel('Or paste the receipt JSON').fill(JSON.stringify(tampered.receipt, null, 2));
  await page.getByRole('button', { name: 'Verify receipt' }).click();
  await expect(verdict).toHaveText(/This receipt does NOT verify/);
  const altered = page.locator(`.verify-problems li[data-code="altered_entry"]`);
  await expect(altered).toHaveCount(1);
  await expect(altered).toContainText(`Entry ${tampered.index} (DISPATCHED) was altered: its content no longer matches its hash.`);
  await expect(claims.locator('div', { hasText: 'Chain of entries' })).toContainText('Broken');
  await expectAccessible(page, 'the verify page with an altered receipt');
  await shoot(page, 'verify-altered');

  // Both checks ran here: not one request left the page after the keys were read.
  expect(calls).toEqual([]);
});

test('verify: text that is no JSON is said plainly, and an approver reaches the page from the header', async ({ page }) => {
  await logIn(page, 'ana');
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Verify' }).click();
  await expect(page).toHaveURL(/\/verify$/);
  await expect(page.getByRole('heading', { level: 1, name: 'Verify a receipt' })).toBeVisible();
  await page.getByLabel('Or paste the receipt JSON').fill('{"effect_id": ');
  await page.getByRole('button', { name: 'Verify receipt' }).click();
  await expect(page.getByRole('alert')).toContainText('This is not JSON, so it cannot be a receipt');
  await page.getByLabel('Or paste the receipt JSON').fill('{"entries": []}');
  await page.getByRole('button', { name: 'Verify receipt' }).click();
  await expect(page.getByTestId('verify-verdict')).toHaveText(/does NOT verify/);
  await expect(page.locator('.verify-problems li[data-code="malformed_receipt"]')).toContainText('The receipt has no string effect_id.');
  await shoot(page, 'verify-approver');
});
