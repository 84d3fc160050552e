import { mkdirSync, readFileSync } from 'node:fs';
import axe from 'axe-core';
import { type APIRequestContext, type Browser, expect, type Page } from '@playwright/test';
import type { DecisionAnswer, ItemDetail, RefundAnswer, RefundRequestBody, SessionInfo } from '../shared/api.ts';
import { WORKER_INDEX, workerPorts } from './ports.ts';
import { PASSWORD, storedLogin } from './stored-logins.ts';

export { PASSWORD, PEOPLE, storedLogin } from './stored-logins.ts';

/** The demo agent token from interlock.yaml (local demo only, published there). */
export const AGENT_TOKEN = 'sk_agent_demo_support_bot';
/** The embedded Stripe sandbox's control routes, of this worker's server (e2e/ports.ts). */
export const SANDBOX_URL = `http://127.0.0.1:${workerPorts(WORKER_INDEX).sandboxPort}`;
/** The SLA of the default route in interlock.yaml (240 minutes), plus a second. */
export const PAST_SLA_MS = 240 * 60_000 + 1_000;
export const SCREENSHOT_DIR = 'test-results/screenshots';

/** A request id no other run or test uses, so journeys also work against a reused server. */
export function uniqueId(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
}

/** Who paid and with what, for a sandbox payment (the sandbox's defaults otherwise). */
export interface PaymentExtras {
  customer?: { name: string | null; email: string | null } | null;
  card?: { brand: string; last4: string };
}

/** A succeeded payment in the sandbox, returning its payment intent id. */
export async function createPayment(request: APIRequestContext, amountCents: number, extras: PaymentExtras = {}): Promise<string> {
  const response = await request.post(`${SANDBOX_URL}/_sandbox/payment-intents`, { data: { amountCents, ...extras } });
  expect(response.ok()).toBe(true);
  return ((await response.json()) as { id: string }).id;
}

/** A refund made by hand in Stripe, outside Interlock. */
export async function handRefund(request: APIRequestContext, paymentIntent: string, amountCents: number): Promise<void> {
  const response = await request.post(`${SANDBOX_URL}/_sandbox/hand-refunds`, { data: { paymentIntent, amountCents } });
  expect(response.ok()).toBe(true);
}

/** The customer disputes the payment with their bank (the sandbox tells Interlock by webhook). */
export async function openDispute(request: APIRequestContext, paymentIntent: string): Promise<void> {
  const response = await request.post(`${SANDBOX_URL}/_sandbox/disputes`, { data: { paymentIntent } });
  expect(response.ok(), await response.text()).toBe(true);
}

/** Every refund the sandbox holds for a payment. */
export async function ledger(request: APIRequestContext, paymentIntent: string): Promise<{ id: string; amount: number; status: string }[]> {
  const response = await request.get(`${SANDBOX_URL}/_sandbox/ledger?payment_intent=${paymentIntent}`);
  expect(response.ok()).toBe(true);
  return ((await response.json()) as { data: { id: string; amount: number; status: string }[] }).data;
}

/** An agent asks for a refund over the API, as an AI agent would. */
export async function askRefund(request: APIRequestContext, body: RefundRequestBody): Promise<RefundAnswer> {
  const response = await request.post('/v1/refunds', { data: body, headers: { authorization: `Bearer ${AGENT_TOKEN}` } });
  expect(response.status(), await response.text()).toBeLessThan(300);
  return (await response.json()) as RefundAnswer;
}

/** A fresh payment and an over-limit refund of it, waiting for ap-leads (ana and bea). */
export async function queuedRefund(request: APIRequestContext, amountCents = 8_000, paidCents = 10_000, prefix = 'req') {
  const paymentIntent = await createPayment(request, paidCents);
  const requestId = uniqueId(prefix);
  const answer = await askRefund(request, { request_id: requestId, payment_intent: paymentIntent, amount: amountCents, reason: 'Customer returned the order unopened' });
  expect(answer.status).toBe('QUEUED');
  return { paymentIntent, requestId, effectId: answer.effect_id };
}

/** Log in through the form, as a person would, and wait for the live inbox. */
export async function logInWithForm(page: Page, name: string, password = PASSWORD): Promise<void> {
  await page.goto('/');
  await page.getByLabel('Name').fill(name);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await expect(page.getByRole('heading', { name: 'Inbox', exact: true })).toBeVisible();
  await expect(page.locator('.live-indicator')).toContainText('Live');
}

/**
 * Put `name`'s session in the page's context: the login saved before the journeys started
 * (e2e/stored-logins.ts) when the server the page talks to knows it, else a login over the API.
 */
export async function signIn(page: Page, name: string): Promise<void> {
  const saved = storedLogin(name);
  if (saved !== null) {
    const { cookies } = JSON.parse(readFileSync(saved, 'utf8')) as { cookies: Parameters<ReturnType<Page['context']>['addCookies']>[0] };
    await page.context().addCookies(cookies);
    // Another server (restart.spec.ts runs its own) or a session that ended: log in instead.
    const session = await page.request.get('/api/session');
    if (session.ok() && ((await session.json()) as SessionInfo).name === name) return;
  }
  const response = await page.request.post('/api/session', { data: { name, password: PASSWORD } });
  expect(response.ok(), await response.text()).toBe(true);
}

/**
 * Log in as `name` without the form (the saved login, see signIn), then open the live inbox. The
 * form itself is covered in pages.spec.ts; this keeps the journeys fast.
 */
export async function logIn(page: Page, name: string): Promise<void> {
  await signIn(page, name);
  await page.goto('/');
  await expect(page.getByRole('heading', { name: 'Inbox', exact: true })).toBeVisible();
  await expect(page.locator('.live-indicator')).toContainText('Live');
}

/** A new browser context (its own cookies, from `name`'s saved login) with a page logged in as `name`. */
export async function personPage(browser: Browser, name: string): Promise<Page> {
  const saved = storedLogin(name);
  const context = await browser.newContext(saved === null ? {} : { storageState: saved });
  const page = await context.newPage();
  await logIn(page, name);
  return page;
}

/**
 * A new browser context with `name`'s session (the saved login, see signIn) and a page that has
 * opened nothing yet: for a person who acts over the API, or whose first page is not the inbox.
 */
export async function personSession(browser: Browser, name: string): Promise<Page> {
  const saved = storedLogin(name);
  const page = await (await browser.newContext(saved === null ? {} : { storageState: saved })).newPage();
  await signIn(page, name);
  return page;
}

/** The inbox row of a request. */
export function inboxRow(page: Page, requestId: string) {
  return page.locator(`li.inbox-row[data-request-id="${requestId}"]`);
}

/** Move the application clock as the page's person, with their CSRF token (test mode only). */
export async function advanceClock(page: Page, advanceMs: number): Promise<void> {
  const session = (await (await page.request.get('/api/session')).json()) as SessionInfo;
  const response = await page.request.post('/api/test/clock', { data: { advance_ms: advanceMs }, headers: { 'x-csrf-token': session.csrf_token } });
  expect(response.ok(), await response.text()).toBe(true);
}

/** The reason the API-side rejections of the journeys give (a rejection must say why). */
export const REJECT_REASON = 'Duplicate of an earlier request';

/** Decide an item over the API as the page's person, with the escalation it shows now; a rejection gives `reason`. */
export async function decide(page: Page, effectId: string, action: 'approve' | 'reject', reason = REJECT_REASON): Promise<DecisionAnswer> {
  const session = (await (await page.request.get('/api/session')).json()) as SessionInfo;
  const detail = (await (await page.request.get(`/api/items/${effectId}`)).json()) as ItemDetail;
  const response = await page.request.post(`/api/items/${effectId}/decisions`, {
    data: { action, escalation: detail.item?.escalation, ...(action === 'reject' ? { reason } : {}) },
    headers: { 'x-csrf-token': session.csrf_token },
  });
  expect(response.ok(), await response.text()).toBe(true);
  return (await response.json()) as DecisionAnswer;
}

/** The agent's view of a request: `GET /v1/refunds/:request_id`. */
export async function agentView(request: APIRequestContext, requestId: string): Promise<RefundAnswer> {
  const response = await request.get(`/v1/refunds/${encodeURIComponent(requestId)}`, { headers: { authorization: `Bearer ${AGENT_TOKEN}` } });
  expect(response.status(), await response.text()).toBeLessThan(300);
  return (await response.json()) as RefundAnswer;
}

/**
 * The people and quick reasons `GET /api/directory` answers with the demo config (interlock.yaml
 * `reject_reasons`). e2e/interlock.e2e.yaml has no `reject_reasons` yet: see directoryWithReasons.
 */
export const E2E_DIRECTORY = {
  people: [
    { name: 'ana', display_name: 'Ana Lopez', role: 'approver' },
    { name: 'bea', display_name: 'Bea Novak', role: 'approver' },
    { name: 'cy', display_name: 'Cy Okafor', role: 'approver' },
    { name: 'fm', display_name: 'Farah Malik', role: 'approver' },
    { name: 'ops', display_name: 'Oscar Pell', role: 'approver' },
    { name: 'rita', display_name: 'Rita Sousa', role: 'approver' },
    { name: 'fin', display_name: 'Finance', role: 'finance' },
  ],
  reject_reasons: ['Outside the refund window', 'Already refunded another way', 'Suspected fraud: needs the risk team', 'The customer withdrew the request'],
};

/**
 * The server's directory, as the page reads it, with E2E_DIRECTORY's quick reasons added when the
 * server's config has none (and the whole of E2E_DIRECTORY if the route answers 404), so the
 * page's quick reasons are tested whatever the e2e config holds. Says which it served.
 */
export async function directoryWithReasons(page: Page): Promise<{ served: () => 'server' | 'server-with-reasons-added' | 'stand-in' | null }> {
  let served: 'server' | 'server-with-reasons-added' | 'stand-in' | null = null;
  await page.route('**/api/directory', async (route) => {
    const response = await route.fetch();
    if (response.status() === 404) {
      served = 'stand-in';
      await route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(E2E_DIRECTORY) });
      return;
    }
    const body = (await response.json()) as { people: unknown[]; reject_reasons: string[] };
    if (body.reject_reasons.length > 0) {
      served = 'server';
      await route.fulfill({ response });
      return;
    }
    served = 'server-with-reasons-added';
    await route.fulfill({ response, json: { ...body, reject_reasons: E2E_DIRECTORY.reject_reasons } });
  });
  return { served: () => served };
}

/**
 * Nothing on the page is wider than the viewport: no sideways scrolling. Measured against the
 * viewport asked for, not `innerWidth`: a mobile browser widens its layout viewport to fit
 * content that overflows, which would hide the very overflow looked for.
 */
export async function expectNoHorizontalOverflow(page: Page, what: string): Promise<void> {
  const width = page.viewportSize()?.width ?? 0;
  const measured = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth }));
  expect(measured.inner, `layout viewport widened on ${what}`).toBeLessThanOrEqual(width);
  expect(measured.scroll, `horizontal overflow on ${what}`).toBeLessThanOrEqual(width);
}

/** The WCAG levels every scan checks. */
const AXE_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];

/**
 * No serious or critical accessibility violation on the page as it is now (or in the part `include`
 * selects). axe-core runs in the page itself (`axe.run`), put there once per document. The app
 * draws no frames, so nothing needs the frame-by-frame run @axe-core/playwright makes by default
 * (a partial run in each frame, then a blank page of its own with axe injected again to join
 * them): a page and an injection more per scan, for the same findings.
 */
export async function expectAccessible(page: Page, what: string, include?: string): Promise<void> {
  if (!(await page.evaluate(() => typeof (window as unknown as { axe?: { run?: unknown } }).axe?.run === 'function'))) await page.evaluate(axe.source);
  const results = await page.evaluate(
    ({ include, tags }) =>
      (window as unknown as { axe: typeof axe }).axe.run(include === null ? document : { include: [include], exclude: [] }, { runOnly: { type: 'tag', values: tags } }),
    { include: include ?? null, tags: AXE_TAGS },
  );
  const bad = results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
  expect(bad, `accessibility of ${what}`).toEqual([]);
}

/**
 * The widths `shoot` draws: 1280 always; 390 as well with `E2E_SHOTS=all`, to look at every state
 * on a phone (the a11y sweep draws and scans each screen at 390 px in every run).
 */
const SHOT_SIZES = process.env.E2E_SHOTS === 'all'
  ? ([
      [1280, 900],
      [390, 844],
    ] as const)
  : ([[1280, 900]] as const);

/**
 * The tallest picture a full-page shot draws: three screens. Late in a run the inbox holds every
 * earlier journey's open items, many thousands of pixels that cost seconds to draw and encode and
 * that nobody looks at.
 */
const SHOT_HEIGHT_MAX = 2_700;

/** A picture of the whole page from the top, down to SHOT_HEIGHT_MAX. */
export async function fullPageShot(page: Page, path: string): Promise<void> {
  const width = page.viewportSize()?.width ?? 1280;
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  const clip = height > SHOT_HEIGHT_MAX ? { x: 0, y: 0, width, height: SHOT_HEIGHT_MAX } : undefined;
  await page.screenshot({ path, fullPage: true, animations: 'disabled', ...(clip === undefined ? {} : { clip }) });
}

/** Screenshots of the page at 1280 (and 390) pixels wide: test-results/screenshots/NAME-WIDTH.png. */
export async function shoot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const original = page.viewportSize();
  // A modal's backdrop covers the viewport only: a dialog is shot as the person sees it.
  const fullPage = (await page.locator('dialog[open]').count()) === 0;
  // From the top: a sticky header would otherwise be drawn where the page was scrolled to.
  if (fullPage) await page.evaluate(() => window.scrollTo(0, 0));
  for (const [width, height] of SHOT_SIZES) {
    await page.setViewportSize({ width, height });
    const path = `${SCREENSHOT_DIR}/${name}-${width}.png`;
    await (fullPage ? fullPageShot(page, path) : page.screenshot({ path, animations: 'disabled' }));
  }
  if (original) await page.setViewportSize(original);
}

/**
 * The screenshots, and one accessibility scan at 1280 (what axe checks does not depend on the
 * width). A scan costs a second or two, so each kind of page is scanned once, in the state that
 * shows the most of it; a state that adds one part to a screen scanned elsewhere (a dialog, a
 * banner) scans that part alone (`include`, a selector).
 */
export async function shootAndScan(page: Page, name: string, include?: string): Promise<void> {
  await page.setViewportSize({ width: 1280, height: 900 });
  await expectAccessible(page, name, include);
  await shoot(page, name);
}

/**
 * The screenshots of a screen the a11y sweep (a11y-sweep.spec.ts) scans in the same state, at
 * 1280 pixels as shootAndScan leaves the page: the screen is scanned once, there.
 */
export async function shootSwept(page: Page, name: string): Promise<void> {
  await page.setViewportSize({ width: 1280, height: 900 });
  await shoot(page, name);
}

/**
 * How long a row may take to show a payment's new facts: the server reads Stripe for the display
 * cache at most 2 reads a second across every open item, webhook-named items first, so on the
 * e2e server (every earlier journey's items still open) a read can wait its turn for seconds.
 */
export const STALE_CHIP_MS = 30_000;

/**
 * Wait until the inbox has shown an item again on the payment's new facts, with the repair that
 * fits: the display cache's read of the webhook finds the payment moved, and the inbox re-shows
 * the item on facts it reads itself, in the cache's next turn (hence the same allowance as a chip).
 */
export async function awaitRepairOffered(page: Page, effectId: string): Promise<void> {
  await expect
    .poll(async () => ((await (await page.request.get(`/api/items/${effectId}`)).json()) as ItemDetail).item?.repairs.length ?? 0, {
      timeout: STALE_CHIP_MS,
    })
    .toBeGreaterThan(0);
}
