import { mkdirSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { type Browser, type Locator, type Page } from 'playwright-core';
import { randomUUID } from 'node:crypto';
import { actingUser, findUserByEmail, userContext } from '../../src/commands/back-office.ts';
import { decideOperation } from '../../src/commands/operation-handlers.ts';
import { Webhook } from 'standardwebhooks';
import { getDelivery, deliveryID } from '../../src/webhooks/deliveries.ts';
import { startTestSystem, waitFor, type TestParty, type TestSystem } from '../support/system.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
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
import { CHECKER_PASSWORD, createCashIn, fund, MAKER_PASSWORD, waitForStatus } from './console-client.ts';

/**
 * The webhook pages in a real browser (Debian's chromium through playwright-core, as in
 * console.browser.e2e.test.ts): a maker registers an endpoint, a checker approves it, the maker reads the signing
 * secret once, opens the endpoint's delivery log and redelivers an event. The whole system runs, its delivery
 * consumer included, and the endpoint is a real HTTP server in this process (http://127.0.0.1, allowed by
 * WEBHOOK_ALLOW_INSECURE_LOCALHOST): the events come from a real operation, approved and executed. Screenshots go to test-artifacts/console/, and with
 * UPDATE_DOCS_SCREENSHOTS=1 the pages docs/console.md shows go to docs/console/ (at 1280 and 390 px).
 */
const PHONE_WIDTH = 390;
/** Fast retries, so that the receiver's one refusal is retried at once. */
const ENV = {
  WEBHOOK_ALLOW_INSECURE_LOCALHOST: 'true',
  WEBHOOK_RETRY_BASE_MS: '20',
  WEBHOOK_RETRY_MAX_MS: '200',
  WEBHOOK_POLL_INTERVAL_MS: '100',
  WEBHOOK_TIMEOUT_MS: '5000',
};

const { suite, title } = browserSuite('webhook pages in a browser');

let sys: TestSystem;
let browser: Browser;
let dist: TestParty;
let receiver: WebhookReceiver;

/** A full-page screenshot; for the docs also at a phone's width. */
async function shot(page: Page, name: string, options: { doc?: string; mask?: Locator[] } = {}): Promise<void> {
  if (SAVE_ARTIFACTS) await page.screenshot({ path: new URL(`${name}.png`, ARTIFACTS).pathname, fullPage: true });
  if (!options.doc || !UPDATE_DOCS) return;
  const mask = { mask: options.mask ?? [], maskColor: '#374151' };
  await page.screenshot({ path: new URL(`${options.doc}.png`, DOCS).pathname, fullPage: true, ...mask });
  const desktop = page.viewportSize()!;
  await page.setViewportSize({ width: PHONE_WIDTH, height: 844 });
  await page.screenshot({ path: new URL(`${options.doc}-${PHONE_WIDTH}.png`, DOCS).pathname, fullPage: true, ...mask });
  await page.setViewportSize(desktop);
}

const loginAs = (email: string, password: string): Promise<Page> => logIn(browser, sys.baseUrl, email, password);

/** Reloads until the locator is there: the delivery log follows the dispatcher. */
async function reloadUntil(page: Page, locator: Locator): Promise<void> {
  await expect
    .poll(
      async () => {
        if ((await locator.count()) > 0) return true;
        await page.reload();
        return (await locator.count()) > 0;
      },
      { timeout: 15_000 },
    )
    .toBe(true);
}

suite(title, () => {
  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    mkdirSync(DOCS, { recursive: true });
    browser = await launchChromium();
    sys = await startTestSystem(ENV);
    dist = await sys.party('distributor', { name: 'Demo Agents Ltd' });
    await fund(sys, dist.ref, '5000');
    receiver = await startWebhookReceiver('/wallet-ops/events');
  });

  afterEach(() => closeContexts(browser));

  afterAll(async () => {
    await receiver?.close();
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
    expect(await maker.locator('.field-error').allTextContents()).toEqual([
      'The URL must use https.',
      expect.stringContaining('The events must name at least one event type'),
    ]);
    await shot(maker, 'webhook-1-register-errors');

    const url = receiver.url;
    await maker.getByLabel('URL').fill(url);
    for (const type of ['operation.approved', 'operation.completed', 'operation.failed'])
      await maker.getByLabel(type).check();
    await maker.getByRole('button', { name: 'Register endpoint' }).click();
    await maker.locator('.notice.ok', { hasText: 'Endpoint registered' }).waitFor();
    const endpointID = /\/console\/webhooks\/(whe_[A-Za-z0-9_-]{16})$/.exec(maker.url())![1]!;
    expect(await maker.locator('dl.endpoint').textContent()).toContain('Awaiting approval');
    await shot(maker, 'webhook-2-registered');

    const checker = await loginAs(dist.checkerEmail, CHECKER_PASSWORD);
    await checker.goto('/console/webhooks');
    const row = checker.locator(`tr[data-endpoint-id="${endpointID}"]`);
    // The list is a read model: it shows the endpoint once the projection has it.
    await expect
      .poll(
        async () => {
          await checker.reload();
          return row.count();
        },
        { timeout: 10_000 },
      )
      .toBe(1);
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
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    await shot(maker, 'webhook-4-secret', { doc: 'webhook-secret', mask: [maker.locator('[data-secret]')] });
    await maker.keyboard.press('Escape');
    await maker.locator('dialog').waitFor({ state: 'detached' });
    await maker.reload();
    expect(await maker.locator('dialog').count()).toBe(0);
    expect(await maker.content()).not.toContain(secret);
    await maker.locator(`tr[data-endpoint-id="${endpointID}"]`).waitFor();
    await shot(maker, 'webhook-5-list', { doc: 'webhooks' });

    // A real operation: created with an API key, approved by the checker, executed. The receiver refuses the
    // first delivery of its completion once (503), so the log has a retry to show.
    let refused = false;
    receiver.respond((request) =>
      request.json.type === 'operation.completed' && !refused ? ((refused = true), 503) : 200,
    );
    const { apiKey } = await dist.key({ label: 'ERP integration' });
    const phone = await sys.individual('+2348123456790', 'Ada Obi');
    const operationID = await createCashIn(sys, dist.ref.id, apiKey, phone, '250.00', 'Invoice 1042');
    const checkerUser = await findUserByEmail(sys.backOffice, dist.checkerEmail);
    await decideOperation(
      sys.backOffice,
      actingUser(checkerUser),
      operationID,
      { type: 'approve' },
      userContext(checkerUser, randomUUID()),
    );
    await waitForStatus(sys, operationID, 'completed', 15_000);
    await waitFor(() => receiver.received.filter((r) => r.json.type === 'operation.completed').length >= 2, 15_000);
    const completed = receiver.received.filter((r) => r.json.type === 'operation.completed');
    const eventID = completed[0]!.json.id;
    expect(completed[1]!.json.id).toBe(eventID);
    expect(completed[0]!.json.data.operation?.operationID).toBe(operationID);
    expect(
      new Webhook(secret).verify(
        completed[1]!.body,
        Object.fromEntries(Object.entries(completed[1]!.headers).map(([k, v]) => [k, String(v)])),
      ),
    ).toEqual(completed[1]!.json);
    const approvedEventID = (await receiver.waitForType('operation.approved')).json.id;

    await maker.locator(`tr[data-endpoint-id="${endpointID}"]`).getByRole('link', { name: 'Deliveries' }).click();
    const log = maker.locator('table.deliveries');
    await reloadUntil(maker, log.locator(`tr[data-event-id="${eventID}"]`, { hasText: 'Delivered' }));
    expect(
      await log.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-event-id'))),
    ).toEqual([eventID, approvedEventID]);
    const logRow = log.locator(`tr[data-event-id="${eventID}"]`);
    expect(await logRow.textContent()).toContain('operation.completed');
    expect(await logRow.textContent()).toContain('HTTP 200');
    expect(await logRow.locator('td[data-label="Attempts"]').textContent()).toBe('2');
    await shot(maker, 'webhook-6-endpoint', { doc: 'webhook-endpoint' });

    await logRow.getByRole('link', { name: eventID }).click();
    const attempts = maker.locator('table.attempts tbody tr');
    await attempts.first().waitFor();
    expect(await attempts.count()).toBe(2);
    expect(await attempts.nth(0).textContent()).toContain('HTTP 503');
    expect(await attempts.nth(0).textContent()).toContain('refused with 503');
    expect(await attempts.nth(1).textContent()).toContain('HTTP 200');
    expect(await maker.locator('details.sent pre').textContent()).toBe(completed[0]!.body);
    await shot(maker, 'webhook-7-delivery', { doc: 'webhook-delivery' });

    // Redelivered: the receiver gets the same event, same id and body, a third time.
    await maker.getByRole('button', { name: 'Redeliver' }).click();
    await maker.locator('.notice.ok', { hasText: `Event ${eventID} queued for redelivery` }).waitFor();
    await waitFor(() => receiver.received.filter((r) => r.json.id === eventID).length === 3, 15_000);
    const again = receiver.received.filter((r) => r.json.id === eventID)[2]!;
    expect(again.body).toBe(completed[0]!.body);
    await reloadUntil(maker, maker.locator('table.attempts tbody tr[data-attempt="3"]'));
    expect(await maker.locator('dl.summary').textContent()).toContain(`asked by ${dist.makerEmail}`);
    expect((await getDelivery(sys.system.stores.readStore, deliveryID(endpointID, eventID)))?.status).toBe('delivered');
    await shot(maker, 'webhook-8-redelivered');
  });
});
