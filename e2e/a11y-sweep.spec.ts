import { mkdirSync } from 'node:fs';
import { expect, type Page, test } from '@playwright/test';
import type { JsonObject } from '../shared/json.ts';
import {
  AGENT_TOKEN,
  askRefund,
  awaitRepairOffered,
  createPayment,
  expectAccessible,
  fullPageShot,
  handRefund,
  logIn,
  personPage,
  queuedRefund,
  SCREENSHOT_DIR,
  uniqueId,
} from './journey-helpers.ts';

// One journey at a phone's width (390 px) over every screen of the app, each scanned with axe:
// nothing serious or critical anywhere. This is the one scan of each screen as it first shows (a
// scan checks markup, roles, names and contrast, the same at any width); the 1280 px journeys
// scan only the states they alone reach (dialogs, notices, filters, other people's views) and
// shoot the screens scanned here with shootSwept.

const PHONE = { width: 390, height: 844 };

/** The page scanned as it is now, and its picture: test-results/screenshots/sweep-NAME-390.png. */
async function sweep(page: Page, name: string): Promise<void> {
  await expectAccessible(page, `${name} at 390 px`);
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  await fullPageShot(page, `${SCREENSHOT_DIR}/sweep-${name}-390.png`);
}

test('a11y sweep: every screen at 390 px passes axe with nothing serious or critical', async ({ browser, request }) => {
  test.setTimeout(300_000);
  // Something on every screen: a routine refund sent (Done), a request waiting (the inbox), one
  // made stale by a refund by hand (chips and the repair), one rejected (Closed).
  const paymentIntent = await createPayment(request, 10_000);
  const sent = await askRefund(request, { request_id: uniqueId('sweep-sent'), payment_intent: paymentIntent, amount: 1_500, reason: 'Arrived damaged' });
  expect(sent.status).toBe('COMMITTED');
  const waiting = await queuedRefund(request, 8_000, 10_000, 'sweep-wait');
  const stale = await queuedRefund(request, 8_000, 10_000, 'sweep-stale');
  await handRefund(request, stale.paymentIntent, 3_000);
  const rejected = await queuedRefund(request, 7_500, 10_000, 'sweep-reject');

  // Logged out: the log-in page, the Verify page with a receipt checked, and the API reference.
  const visitor = await (await browser.newContext({ viewport: PHONE })).newPage();
  // The log-in page as it answers a wrong password (its alert as well as the form).
  await visitor.goto('/');
  await visitor.getByLabel('Name').fill('ops');
  await visitor.getByLabel('Password').fill('not-the-password');
  await visitor.getByRole('button', { name: 'Log in' }).click();
  await expect(visitor.getByRole('alert')).toHaveText('That name and password do not match. Check both and try again.');
  await sweep(visitor, 'login');
  const receipt = (await (await request.get(`/v1/receipts/${sent.effect_id}`, { headers: { authorization: `Bearer ${AGENT_TOKEN}` } })).json()) as JsonObject;
  await visitor.goto('/verify');
  await visitor.getByLabel('Or paste the receipt JSON').fill(JSON.stringify(receipt));
  await visitor.getByRole('button', { name: 'Verify receipt' }).click();
  await expect(visitor.getByTestId('verify-verdict')).toHaveText(/This receipt is valid/);
  await sweep(visitor, 'verify');
  await visitor.goto('/docs/');
  // Swagger UI draws the operations after reading the whole document: on a loaded machine that
  // took more than the 10 s default.
  await expect(visitor.locator('.opblock-summary-path').first()).toBeVisible({ timeout: 30_000 });
  await sweep(visitor, 'docs');
  await visitor.context().close();

  // An approver: the inbox as cards and compact, an item, Done and Closed.
  const ana = await (await browser.newContext({ viewport: PHONE })).newPage();
  // The stale item offered its repair: the inbox shows its chip, the item its repair first.
  await logIn(ana, 'ana');
  await awaitRepairOffered(ana, stale.effectId);
  await expect(ana.locator(`li.inbox-row[data-request-id="${waiting.requestId}"]`)).toBeVisible();
  await expect(ana.locator(`li.inbox-row[data-request-id="${stale.requestId}"] [data-trouble="stale"]`)).toBeVisible();
  await sweep(ana, 'inbox-cards');
  await ana.getByRole('button', { name: 'Compact', exact: true }).click();
  await expect(ana.getByRole('button', { name: 'Compact', exact: true })).toHaveAttribute('aria-pressed', 'true');
  await sweep(ana, 'inbox-compact');
  await ana.getByRole('button', { name: 'Cards', exact: true }).click();
  await ana.goto(`/items/${stale.effectId}`);
  await expect(ana.getByRole('heading', { name: 'Receipt' })).toBeVisible();
  await expect(ana.getByRole('button', { name: /Accept repair/ })).toBeVisible();
  await sweep(ana, 'item');
  const session = (await (await ana.request.get('/api/session')).json()) as { csrf_token: string };
  const detail = (await (await ana.request.get(`/api/items/${rejected.effectId}`)).json()) as { item: { escalation: string } };
  const decided = await ana.request.post(`/api/items/${rejected.effectId}/decisions`, {
    data: { action: 'reject', escalation: detail.item.escalation, reason: 'Duplicate of an earlier request' },
    headers: { 'x-csrf-token': session.csrf_token },
  });
  expect(decided.ok(), await decided.text()).toBe(true);
  await ana.goto('/done');
  await expect(ana.getByRole('heading', { name: 'Done', level: 1 })).toBeVisible();
  await sweep(ana, 'done');
  await ana.goto('/closed');
  await expect(ana.getByRole('heading', { name: 'Closed', level: 1 })).toBeVisible();
  await sweep(ana, 'closed');
  await ana.context().close();

  // Finance: the scoreboard, the ledger and a reconciliation with Stripe.
  const fin = await personPage(browser, 'fin');
  await fin.setViewportSize(PHONE);
  await fin.goto('/scoreboard');
  await expect(fin.getByRole('heading', { name: 'Scoreboard', level: 1 })).toBeVisible();
  await sweep(fin, 'scoreboard');
  await fin.goto('/ledger');
  await expect(fin.getByRole('heading', { name: 'Ledger', level: 1 })).toBeVisible();
  await sweep(fin, 'ledger');
  await fin.goto('/reconciliation');
  await fin.getByRole('button', { name: 'Compare with Stripe' }).click();
  // A run lists every payment at the Stripe budget's background share: on a busy machine it takes a while.
  await expect(fin.locator('.reconcile-run .badge', { hasText: 'Done' })).toBeVisible({ timeout: 90_000 });
  await sweep(fin, 'reconciliation');
  await fin.context().close();
});
