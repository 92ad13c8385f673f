import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { type Browser, type Locator, type Page } from 'playwright-core';
import { call, startTestSystem, waitFor, type TestParty, type TestSystem } from '../support/system.ts';
import {
  ARTIFACTS,
  SAVE_ARTIFACTS,
  browserSuite,
  closeContexts,
  DISABLED_FEATURES,
  DOCS,
  launchChromium,
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
 * The console in a real browser: Debian's chromium driven by playwright-core (never a downloaded browser).
 * Each test saves screenshots to test-artifacts/console/; the pages docs/console.md shows are written to
 * docs/console/ by the same runs when UPDATE_DOCS_SCREENSHOTS=1. `launch` gives every run a fresh temporary --user-data-dir of its own, and
 * each user gets their own browser context (their own cookies).
 */

const { suite, title } = browserSuite('console in a browser');

let sys: TestSystem;
let browser: Browser;
let dist: TestParty;
let other: TestParty;
let leadEmail: string;
let adminEmail: string;
let secondAdminEmail: string;
let phone: string;
let keyID: string;
let secret: string;

async function shot(page: Page, name: string, options: { doc?: string; mask?: Locator[] } = {}): Promise<void> {
  if (SAVE_ARTIFACTS) await page.screenshot({ path: new URL(`${name}.png`, ARTIFACTS).pathname, fullPage: true });
  if (options.doc && UPDATE_DOCS)
    await page.screenshot({
      path: new URL(`${options.doc}.png`, DOCS).pathname,
      fullPage: true,
      mask: options.mask ?? [],
      maskColor: '#374151',
    });
}

async function loginAs(email: string, password: string, options: { screenshot?: string } = {}): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, baseURL: sys.baseUrl });
  const page = await context.newPage();
  await page.goto('/console/');
  await expect(page.url()).toMatch(/\/console\/login$/);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  if (options.screenshot) await shot(page, options.screenshot, { doc: 'login' });
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL(/\/console\/$/);
  return page;
}

/** Reloads until the locator is there: the read models follow the event store asynchronously. */
async function reloadUntil(page: Page, locator: Locator, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await locator.count()) === 0) {
    if (Date.now() > deadline) throw new Error('not shown in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
    await page.reload();
  }
}

/** The command line of this worker's chromium browser process (not its renderers and helpers, which have a --type). */
function browserProcessArguments(): string[] {
  const children = readdirSync('/proc')
    .filter((pid) => /^\d+$/.test(pid))
    .flatMap((pid) => {
      try {
        const ppid = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1];
        return ppid === String(process.pid) ? [readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')] : [];
      } catch {
        return []; // gone meanwhile
      }
    });
  const browsers = children.filter(
    (args) => args.includes('--remote-debugging-pipe') && !args.some((a) => a.startsWith('--type=')),
  );
  expect(browsers).toHaveLength(1);
  return browsers[0]!;
}

const balanceWith = (apiKey: string, distributorID: string) =>
  call(sys.baseUrl, 'GET', `/api/v1/distributors/${distributorID}/balance`, { apiKey });

suite(title, () => {
  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    mkdirSync(DOCS, { recursive: true });
    browser = await launchChromium();
    sys = await startTestSystem();
    dist = await sys.party('distributor', { name: 'Demo Agents Ltd', shortCode: '1001' });
    other = await sys.party('distributor', { name: 'Rival Agents', shortCode: '1002' });
    leadEmail = await extraUser(sys.backOffice, dist.ref, ['maker', 'checker'], 'lead', 'lead-1001@test.example');
    adminEmail = await extraUser(sys.backOffice, null, [], 'admin', 'admin@test.example');
    secondAdminEmail = await extraUser(sys.backOffice, null, [], 'admin', 'admin2@test.example');
    phone = await sys.individual('+2348123456781', 'Ada Obi');
    await fund(sys, dist.ref, '25000');
  });

  afterEach(() => closeContexts(browser));

  afterAll(async () => {
    await browser?.close();
    await sys?.close();
  });

  it('when the tests’ chromium opens a context, then no page of the browser’s own interface starts beside it, and playwright’s disabled features stay disabled', async () => {
    const context = await browser.newContext();
    await context.newPage();
    const cdp = await browser.newBrowserCDPSession();
    const { targetInfos } = await cdp.send('Target.getTargets');
    expect(targetInfos.filter((t) => t.type !== 'page').map((t) => t.url)).toEqual([]);
    // Chromium keeps only the last --disable-features: the launcher merges playwright's with ours.
    const lists = browserProcessArguments().filter((a) => a.startsWith('--disable-features='));
    expect(lists).toHaveLength(1);
    const features = lists[0]!.slice('--disable-features='.length).split(',');
    expect(features).toEqual(expect.arrayContaining(DISABLED_FEATURES));
    expect(features.length, 'playwright’s own list is kept').toBeGreaterThan(DISABLED_FEATURES.length);
    await cdp.detach();
  });

  it('when a maker requests a key, then they cannot approve it, a checker can, and the maker sees the secret once, which works against the API', async () => {
    const lead = await loginAs(leadEmail, OTHER_PASSWORD, { screenshot: 'key-1-login' });
    await expect(await lead.locator('[data-balance]').textContent()).toBe('25,000.00 NGN');
    await shot(lead, 'key-2-dashboard', { doc: 'dashboard' });

    await lead.getByRole('link', { name: 'Settings › API keys' }).click();
    await lead.getByRole('link', { name: 'New API key' }).click();
    await lead.getByLabel('Max transaction amount (optional)').fill('12.345');
    await lead.getByLabel('Allowed IPs (optional)').fill('10.0.0.300');
    await lead.getByLabel('Expires in (days)').fill('0');
    await lead.getByRole('button', { name: 'Request key' }).click();
    await lead.locator('#form-errors').waitFor();
    await expect(await lead.locator('.field-error').count()).toBe(5);
    await expect(await lead.locator('#label').getAttribute('aria-invalid')).toBe('true');
    await shot(lead, 'key-3-new-key-errors', { doc: 'new-key-errors' });

    await lead.getByLabel('Label').fill('Till 1');
    for (const permission of ['Read Balance', 'Read Transactions', 'Perform Operations'])
      await lead.getByLabel(permission, { exact: false }).check();
    await lead.getByLabel('Max transaction amount (optional)').fill('500');
    await lead.getByLabel('Max daily volume (optional)').fill('10000');
    await lead.getByLabel('Allowed IPs (optional)').fill('127.0.0.1, 10.0.0.0/8');
    await lead.getByLabel('Expires in (days)').fill('365');
    await lead.getByRole('button', { name: 'Request key' }).click();
    await lead.waitForURL(/tab=pending/);
    const row = lead.locator('tr', { hasText: 'Till 1' });
    keyID = (await row.getAttribute('data-key-id'))!;
    expect(keyID).toMatch(/^key_/);
    // The maker's own request: the control is there but disabled, with the reason beside it.
    await expect(await row.getByRole('button', { name: 'Approve' }).isDisabled()).toBe(true);
    await expect(await row.textContent()).toContain('You made this request');
    await shot(lead, 'key-4-own-request', { doc: 'keys-pending-own-request' });

    // Forcing it anyway: a real form POST from the page, with the session's token.
    const refusal = lead.waitForURL(`**/console/keys/${keyID}/approve`);
    await lead.evaluate((id) => {
      const form = document.createElement('form');
      form.method = 'post';
      form.action = `/console/keys/${id}/approve`;
      const token = document.createElement('input');
      token.type = 'hidden';
      token.name = '_csrf';
      token.value = (document.querySelector('input[name="_csrf"]') as HTMLInputElement).value;
      form.append(token);
      document.body.append(form);
      form.submit();
    }, keyID);
    await refusal;
    await expect(await lead.locator('main').textContent()).toContain('the maker of a request cannot also check it');
    await shot(lead, 'key-5-self-approval-refused');
    expect(sys.system.directory.get(keyID)?.status).toBe('pending');

    const checker = await loginAs(dist.checkerEmail, CHECKER_PASSWORD);
    await checker.goto('/console/keys?tab=pending');
    await shot(checker, 'key-6-checker-pending', { doc: 'keys-pending' });
    const checkerRow = checker.locator(`tr[data-key-id="${keyID}"]`);
    await checkerRow.getByRole('button', { name: 'Approve' }).click();
    await checker.waitForURL(/tab=active/);
    await expect(await checker.locator('.notice.ok').textContent()).toContain(`${leadEmail} will see it once`);
    await expect(await checker.content()).not.toContain(`${keyID}.`);
    await shot(checker, 'key-7-checker-approved');

    await lead.goto('/console/keys?tab=active');
    const dialog = lead.getByRole('dialog');
    await expect(await dialog.isVisible()).toBe(true);
    // A modal: focus is inside it, on its first control.
    await expect(await lead.evaluate(() => document.activeElement?.id)).toBe('secret-0');
    secret = await lead.locator('[data-secret]').inputValue();
    expect(secret.startsWith(`wo_live_${keyID}.`)).toBe(true);
    await lead.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    await dialog.getByRole('button', { name: 'Copy to clipboard' }).click();
    await lead
      .locator('[data-copy-status]')
      .filter({ hasText: /Copied|Selected/ })
      .waitFor();
    await shot(lead, 'key-8-secret-dialog', { doc: 'secret-dialog', mask: [lead.locator('[data-secret]')] });
    await lead.keyboard.press('Escape');
    await lead.locator('dialog').waitFor({ state: 'detached' });

    const response = await balanceWith(secret, dist.ref.id);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ balance: '25000.00', available: '25000.00', held: '0.00' });

    await lead.reload();
    await expect(await lead.locator('dialog').count()).toBe(0);
    await expect(await lead.content()).not.toContain(secret);
    await shot(lead, 'key-9-active-after-reload', { doc: 'keys-active' });
  });

  it('when a maker asks for a revocation and a checker approves it, then the key gets 401 from the API', async () => {
    expect((await balanceWith(secret, dist.ref.id)).status).toBe(200);
    const maker = await loginAs(dist.makerEmail, MAKER_PASSWORD);
    await maker.goto('/console/keys?tab=active');
    await maker.locator(`tr[data-key-id="${keyID}"]`).getByRole('link', { name: 'Request revocation' }).click();
    await maker.getByLabel('Reason').fill('Till 1 was replaced');
    await shot(maker, 'revoke-1-request');
    await maker.getByRole('button', { name: 'Request revocation' }).click();
    await maker.waitForURL(/tab=pending/);
    await expect(await maker.locator(`tr[data-key-id="${keyID}"]`).textContent()).toContain('Till 1 was replaced');
    await shot(maker, 'revoke-2-pending');

    const checker = await loginAs(dist.checkerEmail, CHECKER_PASSWORD);
    await checker.goto('/console/keys?tab=pending');
    await checker.locator(`tr[data-key-id="${keyID}"]`).getByRole('button', { name: 'Approve revocation' }).click();
    await checker.waitForURL(/tab=inactive/);
    await expect(await checker.locator(`tr[data-key-id="${keyID}"]`).textContent()).toContain('Revoked');
    await shot(checker, 'revoke-3-inactive', { doc: 'keys-inactive' });

    await waitFor(async () => (await balanceWith(secret, dist.ref.id)).status === 401);
  });

  it('when an operation created through the API is approved in the console, then it shows completed with its blockchainID', async () => {
    const { apiKey } = await dist.key({ label: 'ERP integration' });
    const approved = await createCashIn(sys, dist.ref.id, apiKey, phone, '250.00', 'Invoice 1042');
    const rejected = await createCashIn(sys, dist.ref.id, apiKey, phone, '9999.00', 'Typo in amount');
    const checker = await loginAs(dist.checkerEmail, CHECKER_PASSWORD);
    await checker.goto('/console/operations');
    await reloadUntil(checker, checker.locator(`tr[data-operation-id="${rejected}"]`));
    const row = checker.locator(`tr[data-operation-id="${approved}"]`);
    const text = (await row.textContent())!;
    for (const detail of ['cash-in', '250.00', '0.00', 'Ada Obi (+2348123456781)', 'Invoice 1042', 'ERP integration'])
      expect(text).toContain(detail);
    await shot(checker, 'op-1-pending', { doc: 'operations-pending' });

    await row.getByRole('button', { name: 'Approve' }).click();
    await checker.locator('.notice.ok', { hasText: 'approved' }).waitFor();
    await checker.locator(`tr[data-operation-id="${rejected}"]`).getByRole('link', { name: 'Reject…' }).click();
    await checker.getByLabel('Reason').fill('Amount does not match the invoice');
    await checker.getByRole('button', { name: 'Reject operation' }).click();
    await checker.locator('.notice.ok', { hasText: 'rejected' }).waitFor();
    await expect(await checker.locator(`tr[data-operation-id="${rejected}"]`).count()).toBe(0);

    await waitForStatus(sys, approved, 'completed');
    await checker.getByRole('link', { name: 'History' }).click();
    const done = checker.locator(`tr[data-operation-id="${approved}"]`);
    await reloadUntil(checker, done.filter({ hasText: 'Completed' }));
    const doc = await sys.system.stores.readStore.get<{ id: string; blockchainID: string; sequenceNumber: number }>(
      'distributor_operations',
      approved,
    );
    expect(doc?.blockchainID).toMatch(/\S/);
    await expect(await done.locator('[data-blockchain-id]').textContent()).toBe(doc!.blockchainID);
    await expect(await done.textContent()).toContain(`sequence ${doc!.sequenceNumber}`);
    await reloadUntil(checker, checker.locator(`tr[data-operation-id="${rejected}"]`).filter({ hasText: 'Rejected' }));
    await shot(checker, 'op-2-history', { doc: 'operations-history' });
  });

  it('when a user of another party logs in, then they get nothing of this party’s', async () => {
    const { keyID: distKey, apiKey } = await dist.key({ label: 'Demo only' });
    const pending = await createCashIn(sys, dist.ref.id, apiKey, phone, '10.00', 'not for rivals');
    await waitForStatus(sys, pending, 'pending');
    const rival = await loginAs(other.checkerEmail, CHECKER_PASSWORD);
    for (const path of [
      '/console/',
      '/console/keys?tab=pending',
      '/console/keys?tab=active',
      '/console/keys?tab=inactive',
      '/console/operations',
      '/console/operations/history',
    ]) {
      await rival.goto(path);
      const html = await rival.content();
      for (const id of [distKey, keyID, pending, dist.ref.id, 'Demo Agents Ltd'])
        expect(html, `${path} shows ${id}`).not.toContain(id);
    }
    await shot(rival, 'party-1-rival-history');
    const response = await rival.goto(`/console/operations/${pending}/reject`);
    expect(response?.status()).toBe(404);
    await shot(rival, 'party-2-rival-not-found');
  });

  it('when one administrator onboards a merchant and requests its user, then only a second one can approve it; the user chooses a password at the first login, and a disable ends their session', async () => {
    const admin = await loginAs(adminEmail, OTHER_PASSWORD);
    await admin.getByRole('link', { name: 'Administration' }).click();
    const partyForm = admin.locator('form[action="/console/admin/parties"]');
    await partyForm.getByLabel('Type').selectOption('merchant');
    await partyForm.getByLabel('Name').fill('Corner Shop');
    await partyForm.getByLabel('Short code').fill('2001');
    await partyForm.getByRole('button', { name: 'Onboard' }).click();
    await admin.locator('.notice.ok', { hasText: 'Merchant “Corner Shop” onboarded' }).waitFor();
    const userForm = admin.locator('form[action="/console/admin/users"]');
    await userForm.getByLabel('Belongs to').selectOption('merchant');
    await userForm.getByLabel('Party short code').fill('2001');
    await userForm.getByLabel('Email').fill('owner@corner.example');
    await userForm.getByRole('button', { name: 'Request user' }).click();
    await expect(await admin.locator('#user-roles-error').textContent()).toContain(
      'maker role, the checker role or both',
    );
    await shot(admin, 'admin-1-error');
    await userForm.getByLabel(/^Maker/).check();
    await userForm.getByLabel(/^Checker/).check();
    await userForm.getByLabel('Reason (optional)').fill('Owner of the new shop');
    await shot(admin, 'admin-2-request', { doc: 'admin' });
    await userForm.getByRole('button', { name: 'Request user' }).click();

    // One administrator alone: the request waits, and its own approve control is disabled.
    await admin.waitForURL(/\/console\/admin\/access$/);
    await admin.locator('.notice.ok', { hasText: 'owner@corner.example requested' }).waitFor();
    const ownRow = admin.locator('tr[data-request-id]', { hasText: 'owner@corner.example' });
    await expect(await ownRow.getByRole('button', { name: 'Approve' }).isDisabled()).toBe(true);
    await expect(await ownRow.textContent()).toContain('another administrator must approve it');
    await shot(admin, 'admin-3-own-request', { doc: 'access-requests' });

    const second = await loginAs(secondAdminEmail, OTHER_PASSWORD);
    await second.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Access requests' }).click();
    const row = second.locator('tr[data-request-id]', { hasText: 'owner@corner.example' });
    await expect(await row.textContent()).toContain('Owner of the new shop');
    await row.getByRole('button', { name: 'Approve' }).click();
    // Split knowledge: the approver's page shows the second half, the requester's next page the first.
    const secondHalf = await second.locator('[data-password-half="second"]').inputValue();
    expect(secondHalf).toMatch(/^[2-9a-z]{4}-[2-9a-z]{4}$/);
    await shot(second, 'admin-4-temporary-password', {
      doc: 'temporary-password',
      mask: [second.locator('[data-password-half]')],
    });
    await admin.reload();
    const firstHalf = await admin.locator('[data-password-half="first"]').inputValue();
    await admin.getByRole('button', { name: 'I have stored it' }).click();
    const temporary = `${firstHalf}-${secondHalf}`;

    // The new user: the temporary password opens only the password page.
    const owner = await (
      await browser.newContext({ viewport: { width: 1280, height: 800 }, baseURL: sys.baseUrl })
    ).newPage();
    await owner.goto('/console/login');
    await owner.getByLabel('Email').fill('owner@corner.example');
    await owner.getByLabel('Password').fill(temporary);
    await owner.getByRole('button', { name: 'Log in' }).click();
    await owner.waitForURL(/\/console\/password$/);
    await owner.goto('/console/keys');
    await owner.waitForURL(/\/console\/password$/);
    await owner.getByLabel('Temporary password').fill(temporary);
    await owner.getByLabel('New password', { exact: true }).fill('corner password 1');
    await owner.getByLabel('New password, again').fill('corner password 1');
    await shot(owner, 'admin-5-choose-password', { doc: 'password-change' });
    await owner.getByRole('button', { name: 'Change password' }).click();
    await owner.waitForURL(/\/console\/$/);
    await expect(await owner.locator('h1').textContent()).toBe('Corner Shop');

    // Narrowing takes one administrator and is immediate: the owner's open session ends.
    await admin.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Users' }).click();
    await admin
      .locator('section[data-party]', { hasText: 'Corner Shop' })
      .getByRole('link', { name: 'owner@corner.example', exact: true })
      .waitFor();
    await shot(admin, 'admin-6-users', { doc: 'users' });
    await admin.getByRole('link', { name: 'owner@corner.example', exact: true }).click();
    await admin.getByLabel('Reason', { exact: true }).fill('Sold the shop');
    await admin.getByRole('button', { name: 'Disable user' }).click();
    await admin.locator('.notice.ok', { hasText: 'owner@corner.example is disabled' }).waitFor();
    await shot(admin, 'admin-7-disabled', { doc: 'user' });
    await owner.goto('/console/operations');
    await owner.waitForURL(/\/console\/login\?ended=1&next=%2Fconsole%2Foperations$/);
    await expect(await owner.locator('main').textContent()).toContain('Your session has ended');
    await owner.getByLabel('Email').fill('owner@corner.example');
    await owner.getByLabel('Password').fill('corner password 1');
    await owner.getByRole('button', { name: 'Log in' }).click();
    await expect(await owner.locator('#login-error').textContent()).toContain('The email or the password is wrong');
    await shot(owner, 'admin-8-disabled-login');
  });
});
