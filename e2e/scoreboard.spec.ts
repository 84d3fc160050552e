import { readFileSync } from 'node:fs';
import { expect, type Page, test } from '@playwright/test';
import type { Scoreboard } from '../server/scoreboard/figures.ts';
import { askRefund, createPayment, decide, logIn, PASSWORD, queuedRefund, shoot, shootAndScan, shootSwept, signIn, uniqueId } from './journey-helpers.ts';

// Pages are shot at two widths and scanned, and some steps wait for a refresh: slower than a journey.
test.describe.configure({ mode: 'serial', timeout: 90_000 });

/** The figures refresh every 5 s: a change shows within one refresh and a read. */
const REFRESHED_WITHIN_MS = 8_000;

type Figures = Record<string, number | null>;

/** Every figure the page shows in a part of it (`data-figure` → raw `data-value`). */
async function figuresOn(page: Page, selector: string): Promise<Figures> {
  return page
    .locator(`${selector} [data-figure]`)
    .evaluateAll((elements) =>
      Object.fromEntries(elements.map((e) => [(e as HTMLElement).dataset.figure, (e as HTMLElement).dataset.value === '' ? null : Number((e as HTMLElement).dataset.value)])),
    );
}

/** The board's single-number figures, flattened the way the page and the CSV name them. */
function numbersOf(board: Scoreboard): Figures {
  const flat: Figures = {};
  for (const [key, value] of Object.entries(board)) {
    if (typeof value === 'number') flat[key] = value;
  }
  for (const [key, value] of Object.entries(board.time_to_decision)) flat[`time_to_decision.${key}`] = value;
  return flat;
}

/** The board as the API gives it to the page's person, for a query. */
async function apiBoard(page: Page, query = ''): Promise<Scoreboard> {
  const response = await page.request.get(query ? `/api/scoreboard?${query}` : '/api/scoreboard');
  expect(response.ok(), await response.text()).toBe(true);
  return ((await response.json()) as { board: Scoreboard }).board;
}

/** The query the page read its figures with, from its CSV link. */
async function pageQuery(page: Page): Promise<string> {
  const href = await page.getByRole('link', { name: 'Download CSV' }).getAttribute('href');
  return new URL(href ?? '', 'http://x').search.slice(1);
}

/** The page shows exactly the API's figures for the query it used (retried across one refresh). */
async function expectPageEqualsApi(page: Page): Promise<Scoreboard> {
  let board: Scoreboard | null = null;
  await expect(async () => {
    board = await apiBoard(page, await pageQuery(page));
    const numbers = numbersOf(board);
    expect(await figuresOn(page, '.figure-table')).toEqual(numbers);
    const headline = await figuresOn(page, '.figure-grid');
    expect(Object.keys(headline).length).toBeGreaterThan(10);
    for (const [key, value] of Object.entries(headline)) expect(value, key).toBe(numbers[key]);
  }).toPass({ timeout: REFRESHED_WITHIN_MS });
  return board!;
}

/** Every count of a chart's rows whose name starts with `row`. */
function chartRows(page: Page, title: string, row: string) {
  const chart = page.locator('figure', { has: page.getByRole('heading', { name: title }) });
  return chart.getByRole('row', { name: new RegExp(`^${row}`) }).locator('.bar-count');
}

/** At phone width nothing sticks out sideways: the page never scrolls left and right. */
async function expectNoSideScroll(page: Page): Promise<void> {
  await page.setViewportSize({ width: 390, height: 844 });
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  await page.setViewportSize({ width: 1280, height: 900 });
}

async function logInAsFinance(page: Page): Promise<void> {
  await signIn(page, 'fin');
}

test('finance logs in to the scoreboard; new requests count within seconds, with no reload; the page equals the API, and so does its CSV', async ({ page, request }) => {
  await page.goto('/');
  await page.getByLabel('Name').fill('fin');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await expect(page).toHaveURL(/\/scoreboard$/);
  await expect(page.getByRole('heading', { name: 'Scoreboard', level: 1 })).toBeVisible();
  await expect(page.locator('.figure-table [data-figure="requests"]')).toBeVisible();
  const before = await figuresOn(page, '.figure-table');

  let reloads = 0;
  page.on('framenavigated', (frame) => {
    if (frame === page.mainFrame()) reloads += 1;
  });
  const routine = await askRefund(request, { request_id: uniqueId('board-routine'), payment_intent: await createPayment(request, 10_000), amount: 2_000 });
  expect(routine.status).toBe('COMMITTED');
  await queuedRefund(request, 8_000, 10_000, 'board-over');

  await expect
    .poll(() => figuresOn(page, '.figure-grid'), { timeout: REFRESHED_WITHIN_MS })
    .toMatchObject({ requests: before.requests! + 2, cleared_no_person: before.cleared_no_person! + 1, open: before.open! + 1 });
  expect(reloads).toBe(0);
  await expect(page.locator('.board-freshness')).toContainText('Updated');

  const board = await expectPageEqualsApi(page);
  // By reason and the group each trip went to first: the rule failures' rows add up to the reason's count.
  const ruled = await chartRows(page, 'Escalations by reason and group', 'Needs judgment →').allTextContents();
  expect(ruled.reduce((sum, count) => sum + Number(count.replace(/,/g, '')), 0)).toBe(board.escalated_by_reason.needs_judgment);

  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download CSV' }).click()]);
  expect(download.suggestedFilename()).toBe('interlock-scoreboard.csv');
  const csv = readFileSync((await download.path())!, 'utf8');
  expect(csv).toContain(`"requests",${board.requests}`);
  expect(csv).toBe(await (await page.request.get(`/api/scoreboard.csv?${await pageQuery(page)}`)).text());

  // Scanned in finance.spec.ts (money in two currencies, breaches) and by the a11y sweep.
  await shootSwept(page, 'scoreboard');
  await expectNoSideScroll(page);
});

test('the period picker works from the keyboard, the address keeps it, and the figures are the API’s for that period', async ({ page }) => {
  await logInAsFinance(page);
  await page.goto('/scoreboard');
  await expect(page.locator('.figure-table [data-figure="requests"]')).toBeVisible();
  const allTime = page.getByRole('radio', { name: 'All time' });
  await expect(allTime).toBeChecked();
  await allTime.focus();
  await page.keyboard.press('ArrowRight');
  await expect(page.getByRole('radio', { name: '24 hours' })).toBeChecked();
  await expect(page).toHaveURL(/\/scoreboard\?range=24h$/);
  await expect.poll(() => pageQuery(page)).toMatch(/^from_ms=\d+$/);
  const day = await expectPageEqualsApi(page);
  expect(day.requests).toBeGreaterThanOrEqual(2);
  await expect(page.getByRole('heading', { name: 'Figures for the last 24 hours, all groups' })).toBeVisible();

  // After a reload the address still holds the period, and Tab reaches the picker, the group and the CSV in order.
  await page.reload();
  const day24 = page.getByRole('radio', { name: '24 hours' });
  await expect(day24).toBeChecked();
  for (let i = 0; i < 15 && !(await day24.evaluate((el) => el === document.activeElement)); i++) await page.keyboard.press('Tab');
  await expect(day24).toBeFocused();
  await page.keyboard.press('Tab');
  await expect(page.getByLabel('Group')).toBeFocused();
  await page.keyboard.press('Tab');
  await expect(page.getByRole('link', { name: 'Download CSV' })).toBeFocused();
});

test('an approver opens the scoreboard from the header, reads her own groups, picks one, and sees a new item counted at once', async ({ page, request }) => {
  await logIn(page, 'ana');
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Scoreboard' }).click();
  await expect(page.getByRole('heading', { name: 'Scoreboard', level: 1 })).toBeVisible();
  await expect(page.getByRole('link', { name: 'Scoreboard' })).toHaveAttribute('aria-current', 'page');
  // Her figures are those of her groups, and the picker offers no other group (the server refuses one).
  await expect(page.getByRole('heading', { name: 'Figures for all time, your groups (ap-leads)' })).toBeVisible();
  await expect(page.getByText('These figures count the requests routed to your groups (ap-leads) only')).toBeVisible();
  await expect(page.getByLabel('Group').locator('option')).toHaveText(['Your groups', 'ap-leads']);
  await expectPageEqualsApi(page);
  await page.getByLabel('Group').selectOption('ap-leads');
  await expect(page).toHaveURL(/\/scoreboard\?group=ap-leads$/);
  await expect.poll(() => pageQuery(page)).toBe('group=ap-leads');
  const before = await expectPageEqualsApi(page);
  expect(before.open).toBeGreaterThanOrEqual(1);

  // ana's live feed hears of the new item in her group: the page reads again at once, not on its timer.
  const { effectId } = await queuedRefund(request, 9_000, 10_000, 'board-ana');
  await expect.poll(() => figuresOn(page, '.figure-grid'), { timeout: 3_000 }).toMatchObject({ requests: before.requests + 1, open: before.open + 1 });

  // She approves it: one fewer open and a time to decision at once (her feed says the item left),
  // and one more sent after a person by the next refresh at the latest (the send lands after the decision).
  await decide(page, effectId, 'approve');
  await expect
    .poll(() => figuresOn(page, '.figure-grid'), { timeout: REFRESHED_WITHIN_MS })
    .toMatchObject({ open: before.open, sent_after_person: before.sent_after_person + 1, 'time_to_decision.n': before.time_to_decision.n + 1 });
  const after = await expectPageEqualsApi(page);
  expect(after.time_to_decision.median_ms).not.toBeNull();
  await shoot(page, 'scoreboard-approver-group');
  await expectNoSideScroll(page);
});

/** A board with nothing in it, as the API answers on a fresh journal. */
const EMPTY_BOARD: Scoreboard = {
  approved_on_facts_now: 0,
  requests: 0,
  cleared_no_person: 0,
  cleared_verified: 0,
  no_person_share: 0,
  sent_after_person: 0,
  rejected: 0,
  closed_by_repair: 0,
  repairs_accepted: 0,
  open: 0,
  escalated: 0,
  escalated_by_reason: {},
  stale_approvals_caught: 0,
  crash_to_person: 0,
  repairs_suggested: 0,
  sla_breaches: 0,
  sla_breaches_by_group: {},
  confirmed_by_target: 0,
  unconfirmed_sent: 0,
  time_to_decision: { n: 0, median_ms: null, p90_ms: null, max_ms: null },
  sla_breaches_missed_by_group: {},
  money: {},
};

const SCOREBOARD_API = /\/api\/scoreboard(\/series)?(\?.*)?$/;

test('designed states: loading, nothing yet, and unreadable', async ({ page }) => {
  await logInAsFinance(page);

  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  await page.route(SCOREBOARD_API, async (route) => {
    await held;
    await route.fallback();
  });
  await page.goto('/scoreboard');
  await expect(page.getByRole('status').filter({ hasText: 'Reading the figures…' })).toBeVisible();
  await shoot(page, 'scoreboard-loading');
  release();
  await page.unroute(SCOREBOARD_API);

  await page.route(SCOREBOARD_API, (route) => {
    const series = route.request().url().includes('/series');
    const body = series
      ? { volume: [], waits: [{ label: '≤ 5 min', count: 0 }], breaches_by_group: {}, escalated_by_reason: {}, from_ms: 0, to_ms: Date.now() }
      : { board: EMPTY_BOARD, now_ms: Date.now() };
    return route.fulfill({ json: body });
  });
  await page.reload();
  await expect(page.getByRole('heading', { name: 'No requests yet' })).toBeVisible();
  await shootAndScan(page, 'scoreboard-empty');
  await page.unroute(SCOREBOARD_API);

  await page.route(SCOREBOARD_API, (route) =>
    route.fulfill({ status: 500, json: { error: { code: 'internal_error', message: 'The server had a problem; it is logged.' } } }),
  );
  await page.reload();
  const error = page.getByRole('alert');
  await expect(error).toContainText('The scoreboard could not be read');
  await expect(error).toContainText('The server had a problem; it is logged.');
  await shoot(page, 'scoreboard-error');

  await page.unroute(SCOREBOARD_API);
  // The next automatic refresh (every 5 s) may read the figures first and take the alert, and its
  // button, away: a loaded run waited 90 s for the gone button. A click that fails while the button
  // is still there fails the journey.
  const tryAgain = error.getByRole('button', { name: 'Try again' });
  await tryAgain.click({ timeout: 5_000 }).catch(async (clickError: unknown) => {
    if ((await tryAgain.count()) > 0) throw clickError;
  });
  await expect(page.locator('.figure-grid [data-figure="requests"]')).toBeVisible();
});

test('a failed refresh keeps the last figures on screen and says so, until the server answers again', async ({ page }) => {
  await logInAsFinance(page);
  await page.goto('/scoreboard');
  await expect(page.locator('.figure-grid [data-figure="requests"]')).toBeVisible();
  await page.route(SCOREBOARD_API, (route) =>
    route.fulfill({ status: 500, json: { error: { code: 'internal_error', message: 'The server had a problem; it is logged.' } } }),
  );
  const notice = page.getByRole('status').filter({ hasText: 'The figures could not be refreshed' });
  await expect(notice).toBeVisible({ timeout: REFRESHED_WITHIN_MS });
  await expect(page.locator('.board-freshness')).toContainText('Not updated since');
  await expect(page.locator('.figure-grid [data-figure="requests"]')).toBeVisible();
  await shootAndScan(page, 'scoreboard-stale');
  // Once the server answers again, the next read clears the notice by itself.
  await page.unroute(SCOREBOARD_API);
  await expect(notice).toHaveCount(0, { timeout: REFRESHED_WITHIN_MS });
  await expect(page.locator('.board-freshness')).toContainText('Updated');
});
