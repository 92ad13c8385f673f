/**
 * Server-side HTML with one rule: every interpolated value is escaped unless it is already `Html` built by
 * this same tag. Templates never concatenate strings into markup, so user data (labels, memos, reasons,
 * names) cannot become markup, whatever it contains. Attribute values are always written in double quotes.
 */
export class Html {
  readonly value: string;
  constructor(value: string) {
    this.value = value;
  }
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (c) => ESCAPES[c]!);
}

/**
 * What a template may interpolate: text (escaped), Html (kept), lists of either; null, undefined and false render
 * nothing.
 */
export type Renderable = Html | string | number | boolean | null | undefined | readonly Renderable[];

function render(value: Renderable): string {
  if (value instanceof Html) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false || value === true) return '';
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Renderable[]): Html {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i += 1) out += render(values[i]) + (strings[i + 1] ?? '');
  return new Html(out);
}

/** `2025-01-31 14:05 UTC` in a <time> element: the same for every viewer, and exact in its datetime. */
export function time(iso: string | null | undefined): Html {
  if (!iso) return html`<span class="muted">—</span>`;
  const shown = `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
  return html`<time datetime="${iso}">${shown}</time>`;
}

/** A path segment for links: ids are validated formats already, encoded anyway. */
export const seg = (value: string): string => encodeURIComponent(value);
