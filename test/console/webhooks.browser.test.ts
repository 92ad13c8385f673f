import { existsSync, mkdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { ALL_PARTS, type Part } from '../../src/wallet-ops.ts';
import { getDelivery, deliveryID } from '../../src/webhooks/deliveries.ts';
import { startTestSystem, type TestParty, type TestSystem } from '../support/system.ts';
import { CHECKER_PASSWORD, MAKER_PASSWORD } from './console-client.ts';
import { seedDeliveries, seedRoute } from './webhook-seeds.ts';

/**
 * The webhook pages in a real browser (Debian's chromium through playwright-core, as in
 * console.browser.test.ts): a maker registers an endpoint, a checker approves it, the maker reads the signing
 * secret once, opens the endpoint's delivery log and redelivers an event. The delivery log is seeded into the
 * read store as the delivery consumer writes it. Screenshots go to test-artifacts/console/, and with
 * UPDATE_DOCS_SCREENSHOTS=1 the pages docs/console.md shows go to docs/console/ (at 1280 and 390 px).
 */
const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const ARTIFACTS = new URL('../../test-artifacts/console/', import.meta.url);
const DOCS = new URL('../../docs/console/', import.meta.url);
const UPDATE_DOCS = process.env.UPDATE_DOCS_SCREENSHOTS === '1';
const PHONE_WIDTH = 390;
const PARTS = ALL_PARTS.filter((part) => (part as string) !== 'webhooks') as Part[];

const available = existsSync(CHROMIUM);
const suite = available ? describe : describe.skip;
const title = available ? 'webhook pages in a browser' : `webhook pages in a browser (SKIPPED: ${CHROMIUM} is missing; install it with apt-get install -y chromium)`;

let sys: TestSystem;
let browser: Browser;
let dist: TestParty;

/** A full-page screenshot; for the docs also at a phone's width. */
async function shot(page: Page, name: string, options: { doc?: string; mask?: Locator[] } = {}): Promise<void> {
  await page.screenshot({ path: new URL(`${name}.png`, ARTIFACTS).pathname, fullPage: true });
  if (!options.doc || !UPDATE_DOCS) return;
  const mask = { mask: options.mask ?? [], maskColor: '#374151' };
  await page.screenshot({ path: new URL(`${options.doc}.png`, DOCS).pathname, fullPage: true, ...mask });
  const desktop = page.viewportSize()!;
  await page.setViewportSize({ width: PHONE_WIDTH, height: 844 });
  await page.screenshot({ path: new URL(`${options.doc}-${PHONE_WIDTH}.png`, DOCS).pathname, fullPage: true, ...mask });
  await page.setViewportSize(desktop);
}

async function loginAs(email: string, password: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, baseURL: sys.baseUrl });
  const page = await context.newPage();
  await page.goto('/console/login');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL(/\/console\/$/);
  return page;
}

const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000).toISOString();

suite(title, () => {
  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    mkdirSync(DOCS, { recursive: true });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
    sys = await startTestSystem({ WEBHOOK_ALLOW_INSECURE_LOCALHOST: 'true' }, undefined, PARTS);
    dist = await sys.party('distributor', { name: 'Demo Agents Ltd' });
  });

  afterAll(async () => {
    await browser?.close();
    await sys?.close();
  });

  it('when a maker registers an endpoint and a checker approves it, then the maker reads the signing secret once, inspects the delivery log and redelivers an event', async () => {
    const maker = await loginAs(dist.makerEmail, MAKER_PASSWORD);
    await maker.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Webhooks' }).click();
    await maker.getByRole('link', { name: 'Register endpoint' }).click();
    await maker.getByLabel('URL').fill('http://hooks.example.com/in');
    await maker.getByRole('button', { name: 'Register endpoint' }).click();
    await maker.locator('#form-errors').waitFor();
    expect(await maker.locator('.field-error').allTextContents()).toEqual(['The URL must use https.', expect.stringContaining('The events must name at least one event type')]);
    await shot(maker, 'webhook-1-register-errors');

    const url = 'https://erp.demo-agents.example/wallet-ops/events';
    await maker.getByLabel('URL').fill(url);
    for (const type of ['operation.completed', 'operation.failed', 'payment.received']) await maker.getByLabel(type).check();
    await maker.getByRole('button', { name: 'Register endpoint' }).click();
    await maker.locator('.notice.ok', { hasText: 'Endpoint registered' }).waitFor();
    const endpointID = /\/console\/webhooks\/(whe_[A-Za-z0-9_-]{16})$/.exec(maker.url())![1]!;
    expect(await maker.locator('dl.endpoint').textContent()).toContain('Awaiting approval');
    await shot(maker, 'webhook-2-registered');

    const checker = await loginAs(dist.checkerEmail, CHECKER_PASSWORD);
    await checker.goto('/console/webhooks');
    const row = checker.locator(`tr[data-endpoint-id="${endpointID}"]`);
    // The list is a read model: it shows the endpoint once the projection has it.
    await expect.poll(async () => { await checker.reload(); return row.count(); }, { timeout: 10_000 }).toBe(1);
    await shot(checker, 'webhook-3-checker-pending');
    await row.getByRole('button', { name: 'Approve' }).click();
    await checker.locator('.notice.ok', { hasText: `${dist.makerEmail} will see its signing secret once` }).waitFor();
    expect(await checker.locator('dl.endpoint').textContent()).toContain('Active');
    expect(await checker.content()).not.toMatch(/whsec_/);

    await maker.goto('/console/webhooks');
    const dialog = maker.getByRole('dialog');
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain(url);
    const secret = await maker.locator('[data-secret]').inputValue();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    await shot(maker, 'webhook-4-secret', { doc: 'webhook-secret', mask: [maker.locator('[data-secret]')] });
    await maker.keyboard.press('Escape');
    await maker.locator('dialog').waitFor({ state: 'detached' });
    await maker.reload();
    expect(await maker.locator('dialog').count()).toBe(0);
    expect(await maker.content()).not.toContain(secret);
    await maker.locator(`tr[data-endpoint-id="${endpointID}"]`).waitFor();
    await shot(maker, 'webhook-5-list', { doc: 'webhooks' });

    // The delivery consumer's documents for two events: one delivered at the second attempt, one still failing.
    const endpoint = { id: endpointID, party: dist.ref, url, eventTypes: ['operation.completed', 'operation.failed', 'payment.received'] as const };
    await seedRoute(sys.system.stores.readStore, { ...endpoint, eventTypes: [...endpoint.eventTypes] });
    await seedDeliveries(sys.system.stores.readStore, { ...endpoint, eventTypes: [...endpoint.eventTypes] }, [
      { eventID: 'evt_0001completed', eventType: 'operation.completed', position: 10, createdAt: minutesAgo(30), status: 'delivered', attempts: [
        { statusCode: 502, responseBody: '<html><body>Bad gateway</body></html>', at: minutesAgo(30), durationMs: 120 },
        { statusCode: 200, responseBody: '{"received":true}', at: minutesAgo(29), durationMs: 85 },
      ] },
      { eventID: 'evt_0002payment', eventType: 'payment.received', position: 11, createdAt: minutesAgo(10), status: 'pending', nextAttemptAt: Date.now() + 5 * 60_000, attempts: [
        { statusCode: null, error: 'connect ECONNREFUSED 203.0.113.10:443', at: minutesAgo(9), durationMs: 4 },
      ] },
    ]);

    await maker.locator(`tr[data-endpoint-id="${endpointID}"]`).getByRole('link', { name: 'Deliveries' }).click();
    const log = maker.locator('table.deliveries');
    await log.waitFor();
    expect(await log.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-event-id')))).toEqual(['evt_0002payment', 'evt_0001completed']);
    expect(await log.locator('tr[data-event-id="evt_0002payment"]').textContent()).toContain('connect ECONNREFUSED');
    await shot(maker, 'webhook-6-endpoint', { doc: 'webhook-endpoint' });

    await log.getByRole('link', { name: 'evt_0001completed' }).click();
    const attempts = maker.locator('table.attempts tbody tr');
    await attempts.first().waitFor();
    expect(await attempts.count()).toBe(2);
    expect(await attempts.nth(0).textContent()).toContain('HTTP 502');
    expect(await attempts.nth(0).textContent()).toContain('<html><body>Bad gateway</body></html>'); // as text
    expect(await attempts.nth(1).textContent()).toContain('{"received":true}');
    await shot(maker, 'webhook-7-delivery', { doc: 'webhook-delivery' });

    await maker.getByRole('button', { name: 'Redeliver' }).click();
    await maker.locator('.notice.ok', { hasText: 'Event evt_0001completed queued for redelivery' }).waitFor();
    const queued = await getDelivery(sys.system.stores.readStore, deliveryID(endpointID, 'evt_0001completed'));
    expect(queued?.status).toBe('pending');
    expect(queued?.redeliveredBy).not.toBeNull();
    expect(await maker.locator('dl.summary').textContent()).toContain(`asked by ${dist.makerEmail}`);
    await shot(maker, 'webhook-8-redelivered');
  });
});
