import { createRequire } from 'node:module';
import { expect } from 'vitest';
import type { Page } from 'playwright-core';

/**
 * Accessibility and layout checks for one page in its current state: axe-core's rules, failing on any serious
 * or critical violation; and no sideways scrolling. axe's source is evaluated through the DevTools protocol,
 * not added with page.addScriptTag: that makes an inline <script>, which the console's CSP (script-src 'self')
 * rightly refuses, and turning the CSP off for the test (bypassCSP) would hide an inline script of our own.
 */
const AXE_SOURCE = createRequire(import.meta.url)('axe-core').source as string;

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[]; failureSummary?: string }>;
}

export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  // Only the violations come back: the passes, the incomplete and the inapplicable rules (each with its help, tags
  // and a node) would be serialized in the page and parsed again here at every run, for nothing this file reads.
  const violations = await page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: { run: (context: Document, options: object) => Promise<{ violations: AxeViolation[] }> };
      }
    ).axe;
    const results = await axe.run(document, {
      resultTypes: ['violations'],
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'] },
    });
    return results.violations.map(({ id, impact, help, nodes }) => ({
      id,
      impact,
      help,
      nodes: nodes.map(({ target, failureSummary }) => ({ target, failureSummary })),
    }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

const describeViolations = (violations: AxeViolation[]) =>
  violations
    .map(
      (v) =>
        `${v.impact} ${v.id}: ${v.help}\n${v.nodes
          .slice(0, 5)
          .map((n) => `   ${n.target.join(' ')} ${n.failureSummary?.split('\n').slice(0, 2).join(' ') ?? ''}`)
          .join('\n')}`,
    )
    .join('\n');

/** No serious or critical axe violation, and nothing wider than the viewport. */
export async function expectAccessible(page: Page, label: string): Promise<void> {
  const violations = await axeViolations(page);
  expect(violations, `${label} (${page.viewportSize()?.width} px): ${describeViolations(violations)}`).toEqual([]);
  const widths = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth,
    client: document.documentElement.clientWidth,
  }));
  expect(widths.scroll, `${label} (${page.viewportSize()?.width} px) scrolls sideways`).toBeLessThanOrEqual(
    widths.client,
  );
}
