import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { SealedWebhookSecret } from './events.ts';

/**
 * A webhook endpoint's signing secret: `whsec_` and 256 random bits. Made at approval, shown once to the
 * maker, and kept in the approval event sealed with AES-256-GCM under the secrets key (SECRETS_KEY, or the
 * embedded deployment's DATA_DIR/secrets.key), a random 96-bit IV, and the endpoint id as additional data, so
 * a sealed secret copied onto another endpoint does not open. Unlike an API key's secret it cannot be kept as
 * a hash: every delivery is signed with it.
 *
 * Signatures follow Stripe's scheme: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, keyed with the
 * secret's UTF-8 bytes (the whole string, prefix included), as docs/webhooks.md shows clients.
 */
const SECRET_PATTERN = /^whsec_[A-Za-z0-9_-]{43}$/;

export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

export function isWebhookSecret(value: string): boolean {
  return SECRET_PATTERN.test(value);
}

const keyFingerprint = (key: Buffer) => createHash('sha256').update(key).digest('hex').slice(0, 16);
const additionalData = (sealedWith: string, endpointID: string) => Buffer.from(`wallet-ops webhook secret\n${sealedWith}\n${endpointID}`);

export function sealWebhookSecret(key: Buffer, endpointID: string, secret: string): SealedWebhookSecret {
  if (key.length !== 32) throw new RangeError('the secrets key must be 32 bytes');
  const sealedWith = keyFingerprint(key);
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(additionalData(sealedWith, endpointID));
  const data = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return { sealedWith, iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), data: data.toString('base64') };
}

/** The secret, or null when it was sealed under another key, for another endpoint, or tampered with. */
export function openWebhookSecret(key: Buffer, endpointID: string, sealed: SealedWebhookSecret): string | null {
  if (key.length !== 32 || sealed.sealedWith !== keyFingerprint(key)) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.iv, 'base64'));
    decipher.setAAD(additionalData(sealed.sealedWith, endpointID));
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
}

/**
 * The `Webhook-Signature` header value for a body sent at `unixSeconds`: one `v1` per secret, the current one
 * first. During a rotation's overlap there are two (`t=…,v1=<new>,v1=<old>`), so a receiver that verifies
 * with either secret, and accepts any matching `v1`, keeps working while it switches.
 */
export function signWebhook(secrets: string | readonly string[], unixSeconds: number, body: string): string {
  const macs = (typeof secrets === 'string' ? [secrets] : secrets).map((secret) => createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${unixSeconds}.${body}`, 'utf8').digest('hex'));
  return [`t=${unixSeconds}`, ...macs.map((mac) => `v1=${mac}`)].join(',');
}

/**
 * What a receiver does (docs/webhooks.md shows the same in a few lines): true when a `v1` signature matches
 * and the timestamp is within `toleranceSeconds` of `nowSeconds`.
 */
export function verifyWebhookSignature(secret: string, header: string, body: string, nowSeconds: number, toleranceSeconds = 300): boolean {
  const parts = header.split(',').map((part) => part.trim().split('='));
  const t = Number(parts.find(([name]) => name === 't')?.[1]);
  if (!Number.isSafeInteger(t) || Math.abs(nowSeconds - t) > toleranceSeconds) return false;
  const expected = Buffer.from(signWebhook(secret, t, body).split('v1=')[1]!, 'hex');
  return parts
    .filter(([name, value]) => name === 'v1' && value !== undefined && /^[0-9a-f]{64}$/.test(value))
    .some(([, value]) => timingSafeEqual(Buffer.from(value!, 'hex'), expected));
}
