import { expect, type Page, test } from '@playwright/test';
import type { JsonObject } from '../shared/json.ts';
import { AGENT_TOKEN, askRefund, createPayment, decide, expectAccessible, logIn, queuedRefund, shoot, uniqueId } from './journey-helpers.ts';

// The verify page checks a receipt in the browser, with the verifier the server and the command
// line use (shared/receipts/verify.ts), against the published keys: no login, and no server call
// once the keys are read.

/** A refund under the policy limit that an agent asks for and that is sent at once; its receipt as the agent downloads it. */
async function sentRefundReceipt(page: Page): Promise<{ receipt: JsonObject; requestId: string; paymentIntent: string }> {
  const paymentIntent = await createPayment(page.request, 10_000);
  const requestId = uniqueId('verify');
  const answer = await askRefund(page.request, { request_id: requestId, payment_intent: paymentIntent, amount: 2_000, reason: 'Arrived damaged' });
  expect(answer.status).toBe('COMMITTED');
  return { receipt: await receiptOf(page, answer.effect_id), requestId, paymentIntent };
}

/** A request's receipt as its agent downloads it. */
async function receiptOf(page: Page, effectId: string): Promise<JsonObject> {
  const response = await page.request.get(`/v1/receipts/${effectId}`, { headers: { authorization: `Bearer ${AGENT_TOKEN}` } });
  expect(response.ok(), await response.text()).toBe(true);
  return (await response.json()) as JsonObject;
}

/** Choose a receipt file on the verify page, as downloaded. */
async function chooseReceipt(page: Page, receipt: JsonObject): Promise<void> {
  await page.getByLabel('Receipt file (JSON)').setInputFiles({
    name: `interlock-receipt-${String(receipt.effect_id)}.json`,
    mimeType: 'application/json',
    buffer: Buffer.from(JSON.stringify(receipt, null, 2)),
  });
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
  const { receipt, requestId, paymentIntent } = await sentRefundReceipt(page);
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
  await chooseReceipt(page, receipt);
  const verdict = page.getByTestId('verify-verdict');
  await expect(verdict).toHaveText(/This receipt is valid/);
  // What it proves, first: the refund, its amount and currency, the payment and the request.
  const proven = page.getByTestId('verify-proven');
  await expect(proven).toContainText(`A refund of $20.00 (USD) on payment ${paymentIntent} was sent to Stripe exactly once, for request ${requestId} of agent support-bot`);
  await expect(proven).toContainText('cleared under the rules with no person');
  const subject = page.locator('.verify-subject');
  await expect(subject.locator('div', { hasText: 'Request' })).toContainText(requestId);
  await expect(subject.locator('div', { hasText: 'Payment' })).toContainText(paymentIntent);
  await expect(subject.locator('div', { hasText: 'Amount sent' })).toContainText('$20.00 (USD)');
  const claims = page.locator('.verify-claims');
  await expect(claims.locator('div', { hasText: 'Signature' })).toContainText('Valid');
  await expect(claims.locator('div', { hasText: 'Happened' })).toContainText('Yes');
  await expect(claims.locator('div', { hasText: 'At most once' })).toContainText('Yes');
  await expect(claims.locator('div', { hasText: 'Authorized when sent' })).toContainText('Yes');
  await expect(claims.locator('div', { hasText: 'Assumptions held' })).toContainText('Yes');
  await expect(claims.locator('div', { hasText: 'Approved by' })).toContainText('No person');
  await expect(claims.locator('div', { hasText: 'Confirmed by Stripe' })).toBeVisible();
  await expect(page.locator('.verify-problems')).toHaveCount(0);
  // A valid receipt's page is scanned by the a11y sweep.
  await page.setViewportSize({ width: 1280, height: 900 });
  await shoot(page, 'verify-valid');

  // One amount changed in the pasted JSON: the entry's hash no longer holds.
  const tampered = withAmountChanged(receipt);
  await page.getByLabel('Or paste the receipt JSON').fill(JSON.stringify(tampered.receipt, null, 2));
  await page.getByRole('button', { name: 'Verify receipt' }).click();
  await expect(verdict).toHaveText(/This receipt does NOT verify/);
  const altered = page.locator(`.verify-problems li[data-code="altered_entry"]`);
  await expect(altered).toHaveCount(1);
  await expect(altered).toContainText(`Entry ${tampered.index} (DISPATCHED) was altered: its content no longer matches its hash.`);
  // A receipt fails as a whole: what is wrong comes first, nothing of it is green, and nothing is said to be proven.
  await expect(page.getByRole('heading', { name: 'What is wrong' })).toBeVisible();
  await expect(page.getByTestId('verify-proven')).toHaveCount(0);
  await expect(page.locator('.verify-report .badge-success')).toHaveCount(0);
  await expect(claims).toBeHidden();
  await page.getByText('What its entries claim, proven by nothing').click();
  await expect(claims.locator('div', { hasText: 'Chain of entries' })).toContainText('Broken');
  await expect(claims.locator('div', { hasText: 'Signature' })).toContainText('Matches the last entry');
  await expect(claims.locator('div', { hasText: 'Signature' })).not.toContainText('Valid');
  await expect(page.locator('.verify-report .badge-success')).toHaveCount(0);
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

test('verify: a receipt names its approver by login; a signed-in person sees their name beside it, here and on the item', async ({ page }) => {
  test.setTimeout(90_000);
  const { effectId } = await queuedRefund(page.request, 8_000, 10_000, 'verify-approved');
  await logIn(page, 'ana');
  const answer = await decide(page, effectId, 'approve');
  expect(answer.status).toBe('COMMITTED');
  const receipt = await receiptOf(page, effectId);

  await page.goto('/verify');
  await chooseReceipt(page, receipt);
  await expect(page.getByTestId('verify-verdict')).toHaveText(/This receipt is valid/);
  await expect(page.getByTestId('verify-proven')).toContainText('approved by Ana Lopez (ana)');
  await expect(page.locator('.verify-claims div', { hasText: 'Approved by' })).toContainText('Ana Lopez (ana)');

  await page.goto(`/items/${effectId}`);
  await expect(page.locator('.receipt-panel div', { hasText: 'Approved by' })).toContainText('Ana Lopez (ana)');

  // Offline, with no session, the page has only what the receipt records: the login.
  const outsider = await (await page.context().browser()!.newContext()).newPage();
  await outsider.goto('/verify');
  await chooseReceipt(outsider, receipt);
  await expect(outsider.getByTestId('verify-proven')).toContainText('approved by ana,');
  await expect(outsider.locator('.verify-proves')).toContainText('log in to see their names');
  await outsider.context().close();
});
