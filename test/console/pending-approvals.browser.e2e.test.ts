import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startTestSystem, type TestParty, type TestSystem } from '../support/system.ts';
import { browserSuite, closeContexts, launchChromium, logIn } from './browser.ts';
import { CHECKER_PASSWORD, createCashIn, fund, waitForStatus } from './console-client.ts';

/**
 * A checker opens Pending approval with a long list of operations with long memos, long names and long key
 * labels: the page opens at its top with no field focused (the bulk reason is at the bottom, beside "Reject
 * selected"), and the first row's Approve button is on screen, not behind a sideways scroll, on a 1280x900
 * desktop and on a 390 px phone.
 */
const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };
const PENDING = 12;

const { suite, title } = browserSuite('pending approvals: focus and the Approve button');

let sys: TestSystem;
let browser: Browser;
let dist: TestParty;

/** Whether the element's centre is where a click lands: inside the viewport and not clipped by a scroller. */
const clickable = (page: Page, selector: string) =>
  page
    .locator(selector)
    .first()
    .evaluate((element) => {
      const box = element.getBoundingClientRect();
      const hit = document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
      return hit !== null && (hit === element || element.contains(hit));
    });

const FIRST_APPROVE = 'tr[data-operation-id] form[action$="/approve"] button';

suite(title, { timeout: 120_000 }, () => {
  beforeAll(async () => {
    browser = await launchChromium();
    sys = await startTestSystem();
    dist = await sys.party('distributor', {
      name: 'Northern Region Agent Distribution Company Limited',
      shortCode: '1101',
    });
    const phone = await sys.individual('+2348123456790', 'Oluwaseun Adebayo-Okonkwo Chukwuemeka');
    await fund(sys, dist.ref, '1000000');
    const { apiKey } = await dist.key({ label: 'ERP integration for the northern branches, production' });
    const ids: string[] = [];
    for (let i = 0; i < PENDING; i++) {
      ids.push(
        await createCashIn(
          sys,
          dist.ref.id,
          apiKey,
          phone,
          `${1000 + i}.50`,
          `Invoice 2026-11-${1000 + i} for the monthly float top-up of branch ${i}`,
        ),
      );
    }
    for (const id of ids) await waitForStatus(sys, id, 'pending');
  }, 90_000);
  afterEach(() => closeContexts(browser));
  afterAll(async () => {
    await browser?.close();
    await sys?.close();
  });

  for (const [name, viewport] of [
    ['a 1280x900 desktop', DESKTOP],
    ['a 390 px phone', PHONE],
  ] as const) {
    it(`when a checker opens Pending approval on ${name}, then no field has focus, the page is at its top and the first Approve is on screen`, async () => {
      const page = await logIn(browser, sys.baseUrl, dist.checkerEmail, CHECKER_PASSWORD, { viewport });
      await page.goto('/console/operations');
      await page.waitForLoadState('load');

      expect(await page.locator(FIRST_APPROVE).count()).toBe(PENDING);
      expect(await page.evaluate(() => document.activeElement?.id || document.activeElement?.tagName)).toBe('BODY');
      expect(await page.evaluate(() => window.scrollY)).toBe(0);
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(viewport.width);
      // On the phone each operation is a card one above the other: the first one's Approve may need a scroll down, never sideways.
      if (viewport === PHONE) await page.locator(FIRST_APPROVE).first().scrollIntoViewIfNeeded();
      expect(await clickable(page, FIRST_APPROVE)).toBe(true);
      const box = (await page.locator(FIRST_APPROVE).first().boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(viewport.width);
      // Sub-pixel layout: a button scrolled to the bottom edge may end a fraction of a pixel below it.
      expect(box.y + box.height).toBeLessThanOrEqual(viewport.height + 1);
    });
  }
});
