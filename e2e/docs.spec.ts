import { expect, test } from '@playwright/test';
import { expectAccessible, shoot } from './journey-helpers.ts';

// The agents' contract, read in a browser: the page at /docs renders the OpenAPI document the
// server validates with, under the same content security policy as the inbox.
test('the API docs page renders every route of the document, with no serious or critical axe violation', async ({ page }) => {
  // Swagger UI's page is long (about 6,800 px open): its scan and full-page shots take a while on a loaded machine.
  test.setTimeout(120_000);
  const blocked: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') blocked.push(message.text());
  });
  const document = await (await page.request.get('/openapi.json')).json();
  await page.goto('/docs/');
  await expect(page.getByRole('heading', { name: /Interlock/ })).toBeVisible();
  // Each operation of the document is a row on the page, by its path.
  const refunds = page.locator('.opblock-summary-path', { hasText: /^\/v1\/refunds$/ });
  await expect(refunds).toBeVisible();
  const paths = Object.keys(document.paths);
  for (const path of paths) await expect(page.locator(`.opblock-summary-path[data-path="${path}"]`).first()).toBeAttached();
  // Opening the refund operation shows its body schema and the error codes it answers.
  await refunds.click();
  await expect(page.getByText('conflicting_payload').first()).toBeVisible();
  // The page as it opens is scanned whole by the 390 px sweep (a11y-sweep.spec.ts); here, what
  // opening an operation adds (a scan of the whole page open costs about 20 s).
  await expectAccessible(page, 'the API docs with an operation open', '#operations-agents-createRefund');
  await shoot(page, 'api-docs');
  expect(blocked.filter((text) => /Content Security Policy|Refused to/.test(text))).toEqual([]);
});
