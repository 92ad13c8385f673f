import { createHmac, timingSafeEqual } from 'node:crypto';
import type { components } from './schema.ts';

export type WebhookEvent = components['schemas']['WebhookEvent'];

export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

type HeaderBag = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderBag, name: string): string {
  const value =
    headers instanceof Headers
      ? headers.get(name)
      : Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
  const single = Array.isArray(value) ? value[0] : value;
  if (single === undefined || single === null || single === '')
    throw new WebhookVerificationError(`the ${name} header is missing`);
  return single;
}

/**
 * Verifies a webhook delivery (Standard Webhooks) and returns its event. `body` must be the raw body, byte for
 * byte as received: parsing and re-serializing JSON changes it. The signature is
 * `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">` keyed with the base64-decoded part of
 * the secret after `whsec_`; during a secret rotation the header carries one per secret, space-separated, and
 * a match with any is enough. A timestamp more than `toleranceSeconds` (default 300) from now is refused, so a
 * captured delivery cannot be replayed later. De-duplicate on the event's `id`: a delivery may come twice.
 */
export function verifyWebhook(
  secret: string,
  headers: HeaderBag,
  body: string | Uint8Array,
  options: { now?: Date; toleranceSeconds?: number } = {},
): WebhookEvent {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!/^\d{1,12}$/.test(timestamp))
    throw new WebhookVerificationError('the webhook-timestamp header is not unix seconds');
  const nowSeconds = Math.floor((options.now ?? new Date()).getTime() / 1000);
  if (Math.abs(nowSeconds - Number(timestamp)) > (options.toleranceSeconds ?? 300))
    throw new WebhookVerificationError('the webhook-timestamp is too far from now');

  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
  const matches = signatures.split(' ').some((signature) => {
    const [version, value] = signature.split(',');
    if (version !== 'v1' || value === undefined) return false;
    const given = Buffer.from(value, 'base64');
    // Constant time, and only between equal lengths (timingSafeEqual throws otherwise).
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!matches) throw new WebhookVerificationError('no signature matches: wrong secret, or the body was changed');
  return JSON.parse(typeof body === 'string' ? body : Buffer.from(body).toString('utf8')) as WebhookEvent;
}
