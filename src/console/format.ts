import { html, type Html } from '../http/html.ts';

/**
 * How the console writes amounts: thousands separated, the currency named. Amounts stay decimal strings from
 * the read models (never a float), so grouping is done on the digits.
 */
export function groupDigits(amount: string): string {
  const match = /^(-?)(\d+)(\.\d+)?$/.exec(amount.trim());
  if (!match) return amount;
  const [, sign, whole, fraction = ''] = match;
  return `${sign}${whole!.replace(/\B(?=(\d{3})+(?!\d))/g, ',')}${fraction}`;
}

/**
 * `<span class="amount">25,000.00 NGN</span>`, with the plain amount in data-amount for scripts and tests (CSS keeps it
 * on one line in tables).
 */
export function money(amount: string | null | undefined, code: string): Html {
  if (amount === null || amount === undefined || amount === '') return html`<span class="muted">—</span>`;
  return html`<span class="amount"
    data-amount="${amount}">${groupDigits(amount)} <span class="currency">${code}</span></span>`;
}
