import { existsSync } from 'node:fs';
import { describe } from 'vitest';
import { chromium, type Browser, type BrowserContextOptions, type Page } from 'playwright-core';

/**
 * What every console browser test shares: Debian's chromium driven by playwright-core (never a downloaded
 * browser), where screenshots go, and logging in. docs/console/ is rewritten only on request
 * (`UPDATE_DOCS_SCREENSHOTS=1 npm test`), so a test run leaves the tree clean; test-artifacts/console/ only with
 * `CONSOLE_SCREENSHOTS=1`.
 */
export const FULL_CHROMIUM = '/usr/bin/chromium';
/**
 * Debian's chromium-headless-shell (the same Chromium, without the browser's own interface: what playwright itself
 * runs headless), when it is installed; else the full chromium in its headless mode. The shell costs a third of the
 * CPU per context and less per navigation (measured: 0.12 against 0.37 s a context, 0.10 against 0.18 s a
 * navigation), and nothing while a page waits, where the full browser keeps its window's interface busy.
 * The binary itself, not Debian's /usr/bin/chromium-headless-shell: that script does not exec it, and the tests find
 * the browser among their own child processes.
 */
export const HEADLESS_SHELL = '/usr/lib/chromium/chromium-headless-shell';
export const CHROMIUM = existsSync(HEADLESS_SHELL) ? HEADLESS_SHELL : FULL_CHROMIUM;
/**
 * Chromium's address-bar dropdown (the omnibox popup) is a page of its own, preloaded in a renderer of its own for
 * every window, and playwright opens a window for every context: about a second of CPU per context, for nothing
 * a test looks at.
 */
export const DISABLED_FEATURES = ['WebUIOmniboxPopup', 'WebUIOmniboxAimPopup', 'WebUIOmniboxFullPopup'];
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  `--disable-features=${DISABLED_FEATURES.join(',')}`,
];
/** Launches CHROMIUM with playwright's --disable-features and ours merged: Chromium would keep only the last. */
const LAUNCHER = new URL('chromium.sh', import.meta.url).pathname;
export const ARTIFACTS = new URL('../../test-artifacts/console/', import.meta.url);
export const DOCS = new URL('../../docs/console/', import.meta.url);
export const UPDATE_DOCS = process.env.UPDATE_DOCS_SCREENSHOTS === '1';
/**
 * The pictures of every checked page in test-artifacts/console/, for a person to look at: on request
 * (`CONSOLE_SCREENSHOTS=1`, or with the docs' pictures), since a full-page screenshot costs as much as the checks
 * and asserts nothing.
 */
export const SAVE_ARTIFACTS = UPDATE_DOCS || process.env.CONSOLE_SCREENSHOTS === '1';

/** `describe`, or `describe.skip` with the reason in the title when chromium is not installed. */
export function browserSuite(name: string): { suite: typeof describe | typeof describe.skip; title: string } {
  const available = existsSync(CHROMIUM);
  return {
    suite: available ? describe : describe.skip,
    title: available
      ? name
      : `${name} (SKIPPED: ${CHROMIUM} is missing; install it with apt-get install -y chromium-headless-shell)`,
  };
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: LAUNCHER,
    args: ARGS,
    headless: true,
    env: { ...process.env, CHROMIUM_BINARY: CHROMIUM },
  });
}

/**
 * Closes every context of the browser (afterEach): a console page left open keeps asking for its navigation's
 * counts (every CONSOLE_WAITING_POLL_MS) in a renderer of its own until the file ends.
 */
export async function closeContexts(browser: Browser | undefined): Promise<void> {
  await Promise.all((browser?.contexts() ?? []).map((context) => context.close()));
}

/** A fresh browser context (its own cookies), logged in to the console: on the dashboard. */
export async function logIn(
  browser: Browser,
  baseURL: string,
  email: string,
  password: string,
  context: BrowserContextOptions = {},
): Promise<Page> {
  const page = await (
    await browser.newContext({ viewport: { width: 1280, height: 800 }, baseURL, ...context })
  ).newPage();
  await page.goto('/console/login');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL(/\/console\/$/);
  return page;
}
