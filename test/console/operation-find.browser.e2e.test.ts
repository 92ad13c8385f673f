import { mkdirSync, readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { type Browser, type Page } from 'playwright-core';
import { startTestSystem, waitFor, type TestParty, type TestSystem } from '../support/system.ts';
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
import { CHECKER_PASSWORD, createCashIn, fund } from './console-client.ts';

/**
 * Finding operations in Debian's chromium (playwright-core, never a downloaded browser): a checker filters,
 * opens an operation and reads its timeline (the maker's key, the reason of the rejection), exports the
 * filter as CSV, and approves five operations at once. Pictures for docs/console.md with
 * UPDATE_DOCS_SCREENSHOTS=1, at 1280 and 390 px wide.
 */

const { suite, title } = browserSuite('finding operations in a browser');

let sys: TestSystem;
let browser: Browser;
let dist: TestParty;
let apiKey: string;
let phone: string;

async function shot(page: Page, name: string, doc?: string): Promise<void> {
  if (SAVE_ARTIFACTS) await page.screenshot({ path: new URL(`${name}.png`, ARTIFACTS).pathname, fullPage: true });
  if (doc && UPDATE_DOCS) {
    await page.screenshot({ path: new URL(`${doc}.png`, DOCS).pathname, fullPage: true });
    const wide = page.viewportSize()!;
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: new URL(`${doc}-390.png`, DOCS).pathname, fullPage: true });
    await page.setViewportSize(wide);
  }
}

const loginAs = (email: string, password: string): Promise<Page> =>
  logIn(browser, sys.baseUrl, email, password, { acceptDownloads: true });

const listed = (operationID: string, status: string) =>
  waitFor(
    async () =>
      (await sys.system.stores.readStore.get<{ id: string; status: string }>('console_operations', operationID))
        ?.status === status,
    10_000,
  );

suite(title, () => {
  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    mkdirSync(DOCS, { recursive: true });
    browser = await launchChromium();
    sys = await startTestSystem({ CONSOLE_CONFIRM_ABOVE: '1000' });
    dist = await sys.party('distributor', { name: 'Demo Agents Ltd', shortCode: '1001' });
    phone = await sys.individual('+2348123456781', 'Ada Obi');
    await fund(sys, dist.ref, '25000');
    ({ apiKey } = await dist.key({ label: 'ERP integration' }));
  });

  afterEach(() => closeContexts(browser));

  afterAll(async () => {
    await browser?.close();
    await sys?.close();
  });

  it('when a checker filters, opens a rejected operation, exports the filter and bulk-approves five, then each step shows what happened', async () => {
    const wrong = await createCashIn(sys, dist.ref.id, apiKey, phone, '1250.00', 'Invoice 1043 (typo)');
    const batch: string[] = [];
    for (let i = 0; i < 5; i += 1)
      batch.push(await createCashIn(sys, dist.ref.id, apiKey, phone, `${100 + i * 10}.00`, `Invoice ${1050 + i}`));
    for (const id of [wrong, ...batch]) await listed(id, 'pending');

    const checker = await loginAs(dist.checkerEmail, CHECKER_PASSWORD);
    // An earlier rejection, with its reason.
    await checker.goto(`/console/operations/${wrong}/reject`);
    await checker.getByLabel('Reason').fill('Amount does not match the invoice');
    await checker.getByRole('button', { name: 'Reject operation' }).click();
    await checker.locator('.notice.ok', { hasText: 'rejected' }).waitFor();
    await listed(wrong, 'rejected');

    // Bulk approval of five: each ticked, one submission, one report.
    for (const id of batch) await checker.locator(`#select-${id}`).check();
    await shot(checker, 'find-1-bulk-selected', 'operations-bulk');
    await checker.getByRole('button', { name: 'Approve selected' }).click();
    await checker.locator('.notice.ok', { hasText: '5 operations approved.' }).waitFor();
    for (const id of batch) await listed(id, 'completed');

    // Filter: rejected ones above 1,000.
    await checker.getByRole('link', { name: 'History' }).click();
    await checker.getByLabel('Status').selectOption('rejected');
    await checker.getByLabel('Amount from').fill('1000');
    await checker.getByRole('button', { name: 'Filter' }).click();
    await checker.waitForURL(/status=rejected/);
    await expect(await checker.locator('[data-page-position]').textContent()).toBe('1–1 of 1');
    await expect(await checker.locator('tbody tr').count()).toBe(1);
    await shot(checker, 'find-2-filtered');

    // Export the filter: the file has the header and the one row.
    const [download] = await Promise.all([
      checker.waitForEvent('download'),
      checker.getByRole('link', { name: /Export CSV/ }).click(),
    ]);
    const csv = readFileSync((await download.path())!, 'utf8')
      .trimEnd()
      .split('\r\n');
    expect(csv[0]).toMatch(/^operationID,createdAt/);
    expect(csv).toHaveLength(2);
    expect(csv[1]).toContain(`${wrong},`);
    expect(csv[1]).toContain(',rejected,1250.00,');

    // Open it: every field, the timeline with the maker's key and the reason.
    await checker.getByRole('link', { name: wrong }).click();
    await checker.waitForURL(new RegExp(`/console/operations/${wrong}$`));
    const timeline = checker.getByRole('list', { name: 'Events of this operation, oldest first' });
    const requested = (await timeline.locator('li[data-event="Requested"]').textContent())!;
    expect(requested).toContain('API key ERP integration');
    expect(requested).toContain(`requested by ${dist.makerEmail}`);
    const rejected = (await timeline.locator('li[data-event="Rejected"]').textContent())!;
    expect(rejected).toContain(dist.checkerEmail);
    expect(rejected).toContain('Amount does not match the invoice');
    await shot(checker, 'find-3-operation', 'operation');

    // The whole list, and a completed operation's ledger transaction.
    await checker.goto('/console/operations/history');
    await expect(await checker.locator('[data-page-position]').textContent()).toBe('1–6 of 6');
    await shot(checker, 'find-4-history', 'operations-find');
    await checker.goto(`/console/operations/${batch[0]}`);
    await checker.getByRole('heading', { name: 'Ledger transaction' }).waitFor();
    await expect(await checker.locator('[data-blockchain-id]').textContent()).toMatch(/\S/);

    // The key's page: its terms, timeline and operations.
    await checker.locator('dl[data-operation-fields]').getByRole('link', { name: 'ERP integration' }).click();
    await checker.getByRole('heading', { name: 'API key “ERP integration”' }).waitFor();
    await expect(await checker.getByRole('link', { name: 'All 6 operations of this key' }).count()).toBe(1);
    await shot(checker, 'find-5-key', 'key');
  });
});
