import { mkdirSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { type Browser, type BrowserContextOptions, type Page } from 'playwright-core';
import { findUserByEmail, requestApiKey } from '../../src/commands/back-office.ts';
import { requestAccessChange } from '../../src/commands/user-admin.ts';
import { approveWebhookEndpoint, requestWebhookEndpoint } from '../../src/commands/webhooks.ts';
import { startTestSystem, waitFor, type TestParty, type TestSystem } from '../support/system.ts';
import { axeViolations, expectAccessible } from './axe.ts';
import {
  ARTIFACTS,
  SAVE_ARTIFACTS,
  browserSuite,
  closeContexts,
  DOCS,
  launchChromium,
  logIn,
  UPDATE_DOCS,
} from './browser.ts';
import {
  CHECKER_PASSWORD,
  createCashIn,
  extraUser,
  fund,
  MAKER_PASSWORD,
  OTHER_PASSWORD,
  waitForStatus,
} from './console-client.ts';

/**
 * Every console page, in every state a user meets, at desktop width and on a 390 px phone, in chromium: axe
 * finds no serious or critical violation and no page scrolls sideways; a checker approves from the phone; the
 * navigation's count follows an operation that arrives; the menu folds and works from the keyboard; times are
 * the browser's own; a reason typed before the session ended survives the login. With UPDATE_DOCS_SCREENSHOTS=1
 * the 390 px pictures (and the Parties page) go to docs/console/.
 */
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

const { suite, title } = browserSuite('every console page, desktop and phone');

let sys: TestSystem;
let browser: Browser;
let dist: TestParty;
let phone: string;
let adminEmail: string;
let secondAdminEmail: string;
let endpointID: string;
let ownKeyID: string;

const loginAs = (
  email: string,
  password: string,
  viewport = DESKTOP,
  extra: BrowserContextOptions = {},
): Promise<Page> => logIn(browser, sys.baseUrl, email, password, { viewport, ...extra });

/** Checks the page at both widths; the phone's picture goes to the docs as `<doc>-390.png`. */
async function checkBothWidths(
  page: Page,
  label: string,
  doc?: string,
  options: { desktopDoc?: boolean } = {},
): Promise<void> {
  await page.setViewportSize(DESKTOP);
  await expectAccessible(page, label);
  if (doc && options.desktopDoc && UPDATE_DOCS)
    await page.screenshot({ path: new URL(`${doc}.png`, DOCS).pathname, fullPage: true });
  await page.setViewportSize(PHONE);
  await expectAccessible(page, label);
  const name = `${doc ?? label.replace(/\W+/g, '-')}-390`;
  if (SAVE_ARTIFACTS) await page.screenshot({ path: new URL(`${name}.png`, ARTIFACTS).pathname, fullPage: true });
  if (doc && UPDATE_DOCS) await page.screenshot({ path: new URL(`${name}.png`, DOCS).pathname, fullPage: true });
  await page.setViewportSize(DESKTOP);
}

async function visit(
  page: Page,
  path: string,
  label: string,
  doc?: string,
  options: { desktopDoc?: boolean } = {},
): Promise<void> {
  const response = await page.goto(path);
  expect(response?.status(), `${label}: ${path}`).toBeLessThan(500);
  await checkBothWidths(page, label, doc, options);
}

suite(title, { timeout: 180_000 }, () => {
  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    mkdirSync(DOCS, { recursive: true });
    browser = await launchChromium();
    sys = await startTestSystem({ CONSOLE_WAITING_POLL_MS: '1000' });
    dist = await sys.party('distributor', { name: 'Demo Agents Ltd', shortCode: '1001' });
    await sys.party('merchant', { name: 'Corner Shop', shortCode: '2001' });
    adminEmail = await extraUser(sys.backOffice, null, [], 'admin', 'admin@test.example');
    secondAdminEmail = await extraUser(sys.backOffice, null, [], 'admin', 'admin2@test.example');
    phone = await sys.individual('+2348123456781', 'Ada Obi');
    await fund(sys, dist.ref, '1250000');
    const maker = await findUserByEmail(sys.backOffice, dist.makerEmail);
    const checker = await findUserByEmail(sys.backOffice, dist.checkerEmail);
    ({ keyID: ownKeyID } = await requestApiKey(
      sys.backOffice,
      maker,
      { label: 'Till 7', permissions: 'read-balance,perform-operations', maxTransactionAmount: '5000' },
      'seed',
    ));
    const webhookDeps = { ...sys.backOffice, secretsKey: Buffer.alloc(32, 1), allowInsecureLocalhost: false };
    ({ endpointID } = await requestWebhookEndpoint(
      webhookDeps,
      maker,
      { url: 'https://erp.demo-agents.example/wallet-ops/events', eventTypes: 'operation.completed,operation.failed' },
      'seed',
    ));
    await approveWebhookEndpoint(webhookDeps, checker, endpointID, 'seed');
    await requestWebhookEndpoint(
      webhookDeps,
      maker,
      { url: 'https://erp.demo-agents.example/second', eventTypes: 'payment.received' },
      'seed',
    );
    const { apiKey } = await dist.key({ label: 'ERP integration' });
    for (const [amount, memo] of [
      ['250.00', 'Invoice 1042'],
      ['1999.99', 'Invoice 1043'],
      ['75000.00', 'Branch float'],
    ] as const) {
      await waitForStatus(sys, await createCashIn(sys, dist.ref.id, apiKey, phone, amount, memo), 'pending');
    }
    const admin = await findUserByEmail(sys.backOffice, adminEmail);
    await requestAccessChange(
      sys.backOffice,
      admin,
      { kind: 'add-user', party: dist.ref, email: 'cashier@demo-agents.example', roles: ['maker'] },
      'New cashier at branch 3',
      { actor: `user:${admin.userID}`, correlationId: 'seed' },
    );
    await waitFor(() => sys.system.directory.get(ownKeyID) !== undefined);
  });

  afterEach(() => closeContexts(browser));

  afterAll(async () => {
    await browser?.close();
    await sys?.close();
  });

  it('when a page has an image without a text alternative, then the accessibility check names the rule and the element', async () => {
    const page = await (await browser.newContext()).newPage();
    await page.setContent(
      '<!doctype html><html lang="en"><title>t</title><main><img src="data:," id="no-alt"></main></html>',
    );
    const violations = await axeViolations(page);
    expect(violations.map((v) => [v.id, v.impact, v.nodes.map((n) => n.target.join(' '))])).toEqual([
      ['image-alt', 'critical', ['#no-alt']],
    ]);
  });

  it('when every page a party user meets is checked at 1280 and 390 px, then axe finds nothing serious and nothing scrolls sideways', async () => {
    const login = await (await browser.newContext({ viewport: DESKTOP, baseURL: sys.baseUrl })).newPage();
    await visit(login, '/console/login', 'login', 'login');
    await login.getByLabel('Email').fill(dist.checkerEmail);
    await login.getByLabel('Password').fill('wrong password 1');
    await login.getByRole('button', { name: 'Log in' }).click();
    await login.locator('#login-error').waitFor();
    await checkBothWidths(login, 'login with an error');

    const checker = await loginAs(dist.checkerEmail, CHECKER_PASSWORD);
    await visit(checker, '/console/', 'dashboard', 'dashboard');
    await visit(checker, '/console/operations', 'operations pending (checker)', 'operations-pending');
    const first = await checker.locator('tr[data-operation-id]').first().getAttribute('data-operation-id');
    await visit(checker, `/console/operations/${first}/reject`, 'reject an operation', 'operation-reject');
    await checker.getByLabel('Reason').fill('   '); // passes the browser's `required`, not the server's rule
    await checker.getByRole('button', { name: 'Reject operation' }).click();
    await checker.locator('.field-error').waitFor();
    await checkBothWidths(checker, 'reject an operation, no reason');
    await visit(checker, '/console/operations/history', 'operation history', 'operations-history');
    await visit(
      checker,
      '/console/operations/history?status=pending&min=1000&order=oldest',
      'operation history, filtered',
    );
    await visit(checker, `/console/operations/${first}`, 'one operation with its timeline');
    await visit(checker, `/console/keys/${ownKeyID}`, 'one key with its timeline');
    // Approving above CONSOLE_CONFIRM_ABOVE asks once more: the confirmation page (left unanswered)
    await checker.goto('/console/operations');
    await checker
      .locator('tr[data-operation-id]', { hasText: '75,000.00' })
      .getByRole('button', { name: 'Approve' })
      .click();
    await checker.getByRole('heading', { name: 'Confirm approval' }).waitFor();
    await checkBothWidths(checker, 'confirm a large approval');
    await visit(checker, '/console/keys?tab=pending', 'keys pending (checker)', 'keys-pending');
    await visit(checker, '/console/keys?tab=active', 'keys active', 'keys-active');
    await visit(checker, '/console/keys?tab=inactive', 'keys inactive', 'keys-inactive');
    await visit(checker, '/console/webhooks', 'webhooks', 'webhooks');
    await visit(checker, `/console/webhooks/${endpointID}`, 'webhook endpoint', 'webhook-endpoint');
    await visit(checker, '/console/password', 'password', 'password-change');
    await visit(checker, '/console/no-such-page', 'not found');

    const maker = await loginAs(dist.makerEmail, MAKER_PASSWORD);
    await visit(maker, '/console/operations', 'operations pending (maker)');
    await visit(maker, '/console/keys?tab=pending', 'keys pending, own request (maker)', 'keys-pending-own-request');
    await visit(maker, '/console/keys/new', 'new key', undefined);
    await maker.getByLabel('Expires in (days)').fill('0');
    await maker.getByRole('button', { name: 'Request key' }).click();
    await maker.locator('#form-errors').waitFor();
    await checkBothWidths(maker, 'new key with errors', 'new-key-errors');
    const active = await maker.locator('tr[data-key-id]').count();
    expect(active).toBeGreaterThanOrEqual(0);
    await visit(maker, '/console/webhooks/new', 'register a webhook endpoint');
  });

  it('when every administrator page is checked at 1280 and 390 px, then axe finds nothing serious and nothing scrolls sideways', async () => {
    const admin = await loginAs(secondAdminEmail, OTHER_PASSWORD);
    await visit(admin, '/console/', 'administrator dashboard');
    await visit(admin, '/console/admin', 'administration', 'admin');
    await admin.locator('form[action="/console/admin/users"]').getByRole('button', { name: 'Request user' }).click();
    await admin.locator('.field-error').first().waitFor();
    await checkBothWidths(admin, 'administration with an error');
    await visit(admin, '/console/admin/parties', 'parties', 'parties', { desktopDoc: true });
    await visit(admin, '/console/admin/parties?q=corner', 'parties, searched');
    await visit(admin, '/console/admin/users', 'users', 'users');
    await visit(admin, '/console/admin/users?q=checker', 'users, searched', 'users-search', { desktopDoc: true });
    await admin.goto('/console/admin/users');
    await admin
      .locator('section[data-party]', { hasText: 'Demo Agents Ltd' })
      .getByRole('link', { name: dist.makerEmail })
      .first()
      .click();
    await admin.waitForURL(/\/console\/admin\/users\/[0-9a-f-]{36}$/);
    await checkBothWidths(admin, 'a user', 'user');
    await visit(admin, '/console/admin/access', 'access requests (another administrator’s)', 'access-requests');
    await visit(admin, '/console/admin/access?tab=decided', 'access requests decided');
    const requester = await loginAs(adminEmail, OTHER_PASSWORD);
    await visit(requester, '/console/admin/access', 'access requests (own request)');
  });

  it('when a checker on a 390 px phone approves an operation, then its amount, status and Approve are on screen and nothing scrolls sideways', async () => {
    const checker = await loginAs(dist.checkerEmail, CHECKER_PASSWORD, PHONE);
    await checker.goto('/console/operations');
    const row = checker.locator('tr[data-operation-id]', { hasText: 'Invoice 1043' });
    const operationID = (await row.getAttribute('data-operation-id'))!;
    await expect.poll(() => row.locator('td.num .amount').first().textContent()).toBe('1,999.99 NGN');
    const approve = row.getByRole('button', { name: 'Approve' });
    await approve.scrollIntoViewIfNeeded();
    const box = (await approve.boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(PHONE.width);
    expect(await checker.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
    await approve.click();
    await checker.locator('.notice.ok', { hasText: `Operation ${operationID} approved` }).waitFor();
    await waitForStatus(sys, operationID, 'completed');
  });

  it('when an operation arrives while a checker looks at the dashboard, then the navigation’s count goes up without a reload', async () => {
    const checker = await loginAs(dist.checkerEmail, CHECKER_PASSWORD);
    const count = checker.locator('[data-waiting="operations"] [data-count]');
    const before = Number(await count.textContent());
    let reloaded = false;
    checker.on('framenavigated', () => {
      reloaded = true;
    });
    const { apiKey } = await dist.key({ label: 'Counter till' });
    await createCashIn(sys, dist.ref.id, apiKey, phone, '10.00', 'arrives while watching');
    await expect.poll(async () => Number(await count.textContent()), { timeout: 15_000 }).toBe(before + 1);
    expect(await checker.locator('[data-waiting="operations"]').isVisible()).toBe(true);
    expect(reloaded).toBe(false);
  });

  it('when the tab is hidden, then the count is not asked for until it is visible again', async () => {
    const checker = await loginAs(dist.checkerEmail, CHECKER_PASSWORD);
    const asked: string[] = [];
    checker.on('request', (request) => {
      if (request.url().endsWith('/console/waiting')) asked.push(request.url());
    });
    await expect.poll(() => asked.length, { timeout: 5_000 }).toBeGreaterThan(0);
    await checker.evaluate(() => {
      Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
      document.dispatchEvent(new Event('visibilitychange'));
    });
    const whenHidden = asked.length;
    await checker.waitForTimeout(3_000); // three poll periods: the absence of requests is what is tested
    expect(asked.length).toBeLessThanOrEqual(whenHidden + 1); // at most one already in flight
    const settled = asked.length;
    await checker.evaluate(() => {
      Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'visible' });
      document.dispatchEvent(new Event('visibilitychange'));
    });
    await expect.poll(() => asked.length, { timeout: 5_000 }).toBeGreaterThan(settled);
  });

  it('when the console is used on a phone with the keyboard, then the menu opens from its button, its links follow in order, and the first field of a form has focus', async () => {
    const checker = await loginAs(dist.checkerEmail, CHECKER_PASSWORD, PHONE);
    const nav = checker.getByRole('navigation', { name: 'Main' });
    expect(await nav.isVisible()).toBe(false);
    await checker.keyboard.press('Tab'); // the skip link
    expect(await checker.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    await checker.keyboard.press('Tab'); // the brand
    await checker.keyboard.press('Tab'); // the menu's button
    expect(await checker.evaluate(() => document.activeElement?.tagName)).toBe('SUMMARY');
    await checker.keyboard.press('Enter');
    await nav.waitFor({ state: 'visible' });
    await expectAccessible(checker, 'menu open on a phone');
    if (SAVE_ARTIFACTS) await checker.screenshot({ path: new URL('menu-390.png', ARTIFACTS).pathname, fullPage: true });
    if (UPDATE_DOCS) await checker.screenshot({ path: new URL('menu-390.png', DOCS).pathname, fullPage: true });
    const order: string[] = [];
    for (let i = 0; i < 4; i += 1) {
      await checker.keyboard.press('Tab');
      order.push(
        (await checker.evaluate(() => document.activeElement?.textContent?.trim().replace(/\s+/g, ' '))) ?? '',
      );
    }
    expect(order[0]).toBe('Dashboard');
    expect(order[1]).toMatch(/^Operations/);
    expect(order[2]).toMatch(/^Settings › API keys/);
    expect(order[3]).toMatch(/^Webhooks/);
    await checker.keyboard.press('Escape');
    await nav.waitFor({ state: 'hidden' });
    expect(await checker.evaluate(() => document.activeElement?.tagName)).toBe('SUMMARY');

    const maker = await loginAs(dist.makerEmail, MAKER_PASSWORD, PHONE);
    await maker.goto('/console/keys/new');
    expect(await maker.evaluate(() => document.activeElement?.id)).toBe('label');
  });

  it('when JavaScript is off, then the navigation shows on a wide screen and opens from the Menu button on a phone', async () => {
    const page = await loginAs(dist.checkerEmail, CHECKER_PASSWORD, DESKTOP, { javaScriptEnabled: false });
    const nav = page.getByRole('navigation', { name: 'Main' });
    expect(await nav.getByRole('link', { name: 'Operations' }).isVisible()).toBe(true);
    expect(await page.locator('details[data-menu] > summary').isVisible()).toBe(false);
    await page.setViewportSize(PHONE);
    await nav.waitFor({ state: 'hidden' });
    await page.locator('details[data-menu] > summary').click();
    await nav.getByRole('link', { name: 'Operations' }).waitFor({ state: 'visible' });
    await page.goto('/console/operations');
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
    expect(
      await page.locator('tr[data-operation-id]').first().getByRole('button', { name: 'Approve' }).isVisible(),
    ).toBe(true);
  });

  it('when a browser in Lagos shows a time, then it is in its own zone with the UTC time on hover', async () => {
    const checker = await loginAs(dist.checkerEmail, CHECKER_PASSWORD, DESKTOP, {
      timezoneId: 'Africa/Lagos',
      locale: 'en-GB',
    });
    await checker.goto('/console/keys?tab=active');
    const time = checker.locator('time[datetime]').first();
    const iso = (await time.getAttribute('datetime'))!;
    await expect.poll(() => time.getAttribute('data-local')).toBe('1');
    const utc = `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
    expect(await time.getAttribute('title')).toBe(utc);
    const lagosHour = String((Number(iso.slice(11, 13)) + 1) % 24).padStart(2, '0');
    expect(await time.textContent()).toContain(`${lagosHour}:${iso.slice(14, 16)}`);
    expect(await time.textContent()).not.toContain('UTC');
  });

  it('when the session ends while a checker types a rejection reason, then after the login they are back on the form with the reason', async () => {
    const checker = await loginAs(dist.checkerEmail, CHECKER_PASSWORD, PHONE);
    await checker.goto('/console/operations');
    const row = checker.locator('tr[data-operation-id]', { hasText: 'Branch float' });
    const operationID = (await row.getAttribute('data-operation-id'))!;
    await row.getByRole('link', { name: 'Reject…' }).click();
    await checker.getByLabel('Reason').fill('Float above the branch limit');
    const store = sys.system.stores.readStore;
    await store.commit(
      (await store.find<{ id: string }>('console_sessions')).map((s) => ({
        op: 'delete' as const,
        collection: 'console_sessions',
        id: s.id,
      })),
    );
    await checker.getByRole('button', { name: 'Reject operation' }).click();
    await checker.getByRole('heading', { name: 'Please log in again' }).waitFor();
    await expectAccessible(checker, 'session ended on a form');
    await checker.getByRole('link', { name: 'Log in' }).click();
    await checker.getByLabel('Email').fill(dist.checkerEmail);
    await checker.getByLabel('Password').fill(CHECKER_PASSWORD);
    await checker.getByRole('button', { name: 'Log in' }).click();
    await checker.waitForURL(new RegExp(`/console/operations/${operationID}/reject$`));
    expect(await checker.getByLabel('Reason').inputValue()).toBe('Float above the branch limit');
    await checker.getByRole('button', { name: 'Reject operation' }).click();
    await checker.locator('.notice.ok', { hasText: 'rejected' }).waitFor();
    expect(await checker.evaluate(() => Object.keys(sessionStorage).filter((k) => k.startsWith('wo-draft:')))).toEqual(
      [],
    );
  });
});
