import { randomBytes } from 'node:crypto';
import { invalidInput } from './errors.ts';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from './events.ts';

/**
 * What a webhook endpoint may be: where deliveries go and which events they carry. Validated before the
 * decider sees them (the decider trusts its command), in the handlers of src/commands/webhooks.ts.
 */
const ENDPOINT_ID_PATTERN = /^whe_[A-Za-z0-9_-]{16}$/;
const MAX_URL_LENGTH = 2048;
/** Hosts `http://` may name when WEBHOOK_ALLOW_INSECURE_LOCALHOST is on (development and tests). */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

export function newEndpointID(): string {
  return `whe_${randomBytes(12).toString('base64url')}`;
}

export function isEndpointID(value: string): boolean {
  return ENDPOINT_ID_PATTERN.test(value);
}

export interface WebhookUrlRules {
  /** http:// to 127.0.0.1, localhost or [::1] is accepted too. Never in production. */
  allowInsecureLocalhost: boolean;
}

/**
 * An absolute https URL without credentials or fragment, normalized by the WHATWG parser. Where the URL's host
 * resolves to is checked at each delivery (the address may change); this checks only what the text says.
 */
export function parseWebhookUrl(field: string, input: unknown, rules: WebhookUrlRules): string {
  if (typeof input !== 'string' || input.trim() === '') throw invalidInput(field, `${field} is required`);
  const text = input.trim();
  if (text.length > MAX_URL_LENGTH) throw invalidInput(field, `${field} must be at most ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalidInput(field, `${field} must be an absolute URL such as https://example.com/webhooks`);
  }
  if (url.username || url.password) throw invalidInput(field, `${field} must not carry credentials`);
  if (url.hash) throw invalidInput(field, `${field} must not have a fragment`);
  if (url.protocol === 'http:') {
    // A developer's local receiver: say which switch allows it, rather than only that https is needed.
    if (LOOPBACK_HOSTS.has(url.hostname) && !rules.allowInsecureLocalhost) {
      throw invalidInput(
        field,
        `${field} must use https; http:// to ${url.hostname} is accepted only where the operator sets ` +
          'WEBHOOK_ALLOW_INSECURE_LOCALHOST=true (development and tests, never production)',
      );
    }
    if (!LOOPBACK_HOSTS.has(url.hostname)) throw invalidInput(field, `${field} must use https`);
  } else if (url.protocol !== 'https:') {
    throw invalidInput(field, `${field} must use https`);
  }
  return url.toString();
}

/** One or more distinct event types of the catalog, in the catalog's order. */
export function parseWebhookEventTypes(field: string, input: unknown): WebhookEventType[] {
  const values =
    typeof input === 'string'
      ? input
          .split(',')
          .map((value) => value.trim())
          .filter(Boolean)
      : input;
  if (!Array.isArray(values) || values.length === 0)
    throw invalidInput(field, `${field} must name at least one event type: ${WEBHOOK_EVENT_TYPES.join(', ')}`);
  for (const value of values) {
    if (!WEBHOOK_EVENT_TYPES.includes(value as WebhookEventType)) {
      throw invalidInput(
        field,
        `${field}: unknown event type "${String(value).slice(0, 40)}"; one of ${WEBHOOK_EVENT_TYPES.join(', ')}`,
      );
    }
  }
  return WEBHOOK_EVENT_TYPES.filter((type) => values.includes(type));
}
