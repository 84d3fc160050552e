import { type BrowserContext, expect, type Page, test } from '@playwright/test';
import { inboxRow, logIn, personSession, queuedRefund, shootAndScan } from './journey-helpers.ts';

test.describe.configure({ timeout: 90_000 });

/** What the wrapped Notification saw: each one constructed, and each permission request. */
interface NotificationLog {
  asks: number;
  shown: { title: string; body: string; tag: string }[];
}

declare global {
  interface Window {
    __notifications: NotificationLog;
    __shownNotifications: Notification[];
    __pageHidden: boolean;
  }
}

/**
 * Before any page script: wrap window.Notification so the test sees every construction and every
 * permission request (the real ones still run), and let the test say whether the page is hidden.
 * `permission` overrides what the browser reports, for the denied case.
 */
async function watchNotifications(context: BrowserContext, permission?: NotificationPermission): Promise<void> {
  await context.addInitScript((forced) => {
    const Real = window.Notification;
    window.__notifications = { asks: 0, shown: [] };
    window.__shownNotifications = [];
    window.__pageHidden = false;
    class Watched extends Real {
      constructor(title: string, options: NotificationOptions = {}) {
        window.__notifications.shown.push({ title, body: options.body ?? '', tag: options.tag ?? '' });
        super(title, options);
        window.__shownNotifications.push(this);
      }
      static override get permission(): NotificationPermission {
        return forced ?? Real.permission;
      }
      static override requestPermission(): Promise<NotificationPermission> {
        window.__notifications.asks += 1;
        return forced ? Promise.resolve(forced) : Real.requestPermission();
      }
    }
    window.Notification = Watched;
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => (window.__pageHidden ? 'hidden' : 'visible') });
    Object.defineProperty(document, 'hidden', { configurable: true, get: () => window.__pageHidden });
  }, permission ?? null);
}

/** The page says it is hidden (a background tab) or visible, as a browser would. */
async function setHidden(page: Page, hidden: boolean): Promise<void> {
  await page.evaluate((value) => {
    window.__pageHidden = value;
    document.dispatchEvent(new Event('visibilitychange'));
  }, hidden);
}

const logOf = (page: Page) => page.evaluate(() => window.__notifications);

test('new items: permission is asked on click only, and a notification comes only while the tab is hidden', async ({ browser, baseURL, request }) => {
  const context = await browser.newContext();
  await context.grantPermissions(['notifications'], { origin: baseURL ?? '' });
  await watchNotifications(context);
  const page = await context.newPage();
  await logIn(page, 'ana');

  const button = page.getByRole('button', { name: 'Notify me of new items' });
  await expect(button).toHaveAttribute('aria-pressed', 'false');
  expect((await logOf(page)).asks, 'no permission request on load').toBe(0);
  await button.click();
  await expect(button).toHaveAttribute('aria-pressed', 'true');
  expect((await logOf(page)).asks, 'one permission request, on the click').toBe(1);
  await shootAndScan(page, 'inbox-notify-on');

  // Visible: the row arrives, no notification.
  const seen = await queuedRefund(request, 8_100, 10_000, 'notify-visible');
  await expect(inboxRow(page, seen.requestId)).toBeVisible();
  expect((await logOf(page)).shown).toEqual([]);

  // Hidden: a notification with the amount and why, tagged with the item.
  await setHidden(page, true);
  const away = await queuedRefund(request, 12_345, 20_000, 'notify-hidden');
  await expect.poll(async () => (await logOf(page)).shown).toEqual([
    { title: 'New refund to decide', body: expect.stringContaining('$123.45 · '), tag: away.effectId },
  ]);

  // Its click brings the person to the item.
  await page.evaluate(() => window.__shownNotifications[0]?.dispatchEvent(new Event('click')));
  await expect(page).toHaveURL(new RegExp(`/items/${away.effectId}$`));

  // The choice is remembered for this person: on after a reload, with no new request.
  await setHidden(page, false);
  await page.goto('/');
  await expect(button).toHaveAttribute('aria-pressed', 'true');
  expect((await logOf(page)).asks).toBe(0);
  // Turned off, nothing more even while hidden.
  await button.click();
  await expect(button).toHaveAttribute('aria-pressed', 'false');
  await setHidden(page, true);
  const off = await queuedRefund(request, 8_200, 10_000, 'notify-off');
  await expect(inboxRow(page, off.requestId)).toBeVisible();
  expect((await logOf(page)).shown).toEqual([]);
  await context.close();
});

test('notifications blocked by the browser are said plainly; without the API there is no button', async ({ browser }) => {
  const blocked = await browser.newContext();
  await watchNotifications(blocked, 'denied');
  const page = await blocked.newPage();
  await logIn(page, 'ana');
  await expect(page.getByRole('button', { name: 'Notifications are blocked by this browser' })).toBeVisible();
  await expect(page.getByText('allow notifications for this site in the browser’s settings')).toBeVisible();
  expect((await logOf(page)).asks).toBe(0);
  await shootAndScan(page, 'inbox-notify-blocked');
  await blocked.close();

  const none = await browser.newContext();
  await none.addInitScript(() => {
    // @ts-expect-error: a browser without the Notification API
    delete window.Notification;
  });
  const bare = await none.newPage();
  await logIn(bare, 'ana');
  await expect(bare.getByRole('button', { name: /Notif/ })).toHaveCount(0);
  await none.close();
});

test('the item page says who was told, over which channel, what for and whether it arrived', async ({ page, browser, request }) => {
  const { effectId } = await queuedRefund(request, 8_000, 10_000, 'told');
  await logIn(page, 'ana');
  await page.goto(`/items/${effectId}`);
  const told = page.getByRole('region', { name: 'Who was told' });
  await expect(told).toBeVisible();
  // e2e/interlock.e2e.yaml gives ana a webhook on 127.0.0.1, which the outbox refuses as a
  // loopback address: given up at once (or carried by a digest when earlier specs already sent ana
  // five in this window). Either way it is listed, in words.
  const message = told.getByRole('listitem').filter({ has: page.getByRole('heading', { name: 'Ana Lopez (you) · Webhook' }) });
  // Told after the outbox's next pass: seconds, though past 20 s on a loaded 2-core machine.
  await expect(async () => {
    await page.reload();
    await expect(message).toContainText(/Given up|In a digest/, { timeout: 1_000 });
  }).toPass({ timeout: 45_000 });
  await expect(message).toContainText('Escalated');
  await expect(message).toContainText('Level 1');
  if ((await message.getAttribute('data-status')) === 'given_up') await expect(message).toContainText('loopback');
  await told.scrollIntoViewIfNeeded();
  await shootAndScan(page, 'item-notifications');

  // Over $200.00 goes to controller (cy), where nobody has a channel: one quiet line.
  const large = await queuedRefund(request, 25_000, 30_000, 'told-none');
  const cy = await personSession(browser, 'cy');
  await cy.goto(`/items/${large.effectId}`);
  const none = cy.getByRole('region', { name: 'Who was told' });
  await expect(none).toHaveText('Who was toldNobody was notified: no channels are configured for this group.');
  await cy.context().close();
});
