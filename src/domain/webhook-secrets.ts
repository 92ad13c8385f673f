import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { SealedWebhookSecret, WebhookSignatureScheme } from './events.ts';
import { acceptedSecrets, type RotatingSecrets } from './secret-rotation.ts';

/**
 * A webhook endpoint's signing secret: `whsec_` and the standard base64 of 256 random bits, the form Standard
 * Webhooks gives secrets (its libraries take the string as it is). Made at approval or rotation, shown once to
 * the maker, and kept in the event sealed with AES-256-GCM under the secrets key (SECRETS_KEY, or the embedded
 * deployment's key file beside DATA_DIR), a random 96-bit IV, and the endpoint id as additional data, so a sealed
 * secret copied onto another endpoint does not open. Unlike an API key's secret it cannot be kept as a hash:
 * every delivery is signed with it. Secrets made before Standard Webhooks were base64url (`LEGACY_PATTERN`).
 *
 * Two signature schemes (docs/webhooks.md):
 *  - `standard-webhooks`: `webhook-id`, `webhook-timestamp` and `webhook-signature: v1,<base64 HMAC-SHA256 of
 *    "<id>.<timestamp>.<body>">`, keyed with the secret's decoded bytes; one `v1,…` per secret, space-separated;
 *  - `stripe-v1` (legacy, the endpoints approved before): `webhook-signature: t=<unix seconds>,v1=<hex
 *    HMAC-SHA256 of "<t>.<body>">`, keyed with the secret's UTF-8 bytes (the whole string, prefix included).
 */
const SECRET_PATTERN = /^whsec_[A-Za-z0-9+/]{43}=$/;
const LEGACY_PATTERN = /^whsec_[A-Za-z0-9_-]{43}$/;
const PREFIX = 'whsec_';

/** The scheme of the secrets made now: new endpoints, and every rotation (which switches a legacy endpoint). */
export const CURRENT_SIGNATURE_SCHEME: WebhookSignatureScheme = 'standard-webhooks';
/** The scheme of an endpoint whose events name none: approved before schemes were recorded. */
export const LEGACY_SIGNATURE_SCHEME: WebhookSignatureScheme = 'stripe-v1';

export function newWebhookSecret(): string {
  return `${PREFIX}${randomBytes(32).toString('base64')}`;
}

export function isWebhookSecret(value: string): boolean {
  return SECRET_PATTERN.test(value) || LEGACY_PATTERN.test(value);
}

const keyFingerprint = (key: Buffer) => createHash('sha256').update(key).digest('hex').slice(0, 16);
const additionalData = (sealedWith: string, endpointID: string) =>
  Buffer.from(`wallet-ops webhook secret\n${sealedWith}\n${endpointID}`);

export function sealWebhookSecret(key: Buffer, endpointID: string, secret: string): SealedWebhookSecret {
  if (key.length !== 32) throw new RangeError('the secrets key must be 32 bytes');
  const sealedWith = keyFingerprint(key);
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(additionalData(sealedWith, endpointID));
  const data = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return {
    sealedWith,
    iv: iv.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
    data: data.toString('base64'),
  };
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
 * The legacy (`stripe-v1`) `Webhook-Signature` header value for a body sent at `unixSeconds`: one `v1` per
 * secret, the current one first. During a rotation's overlap there are two (`t=…,v1=<new>,v1=<old>`), so a receiver
 * that verifies with either secret, and accepts any matching `v1`, keeps working while it switches.
 */
export function signWebhook(secrets: string | readonly string[], unixSeconds: number, body: string): string {
  const macs = (typeof secrets === 'string' ? [secrets] : secrets).map((secret) =>
    createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${unixSeconds}.${body}`, 'utf8').digest('hex'),
  );
  return [`t=${unixSeconds}`, ...macs.map((mac) => `v1=${mac}`)].join(',');
}

/**
 * What a legacy (`stripe-v1`) receiver does (docs/webhooks.md shows the same in a few lines): true when a `v1`
 * signature matches and the timestamp is within `toleranceSeconds` of `nowSeconds`.
 */
export function verifyWebhookSignature(
  secret: string,
  header: string,
  body: string,
  nowSeconds: number,
  toleranceSeconds = 300,
): boolean {
  const parts = header.split(',').map((part) => part.trim().split('='));
  const t = Number(parts.find(([name]) => name === 't')?.[1]);
  if (!Number.isSafeInteger(t) || Math.abs(nowSeconds - t) > toleranceSeconds) return false;
  const expected = Buffer.from(signWebhook(secret, t, body).split('v1=')[1]!, 'hex');
  return parts
    .filter(([name, value]) => name === 'v1' && value !== undefined && /^[0-9a-f]{64}$/.test(value))
    .some(([, value]) => timingSafeEqual(Buffer.from(value!, 'hex'), expected));
}

/**
 * The Standard Webhooks `webhook-signature` value: `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">` per
 * secret, keyed with the secret's decoded bytes, current first, space-separated (the spec's rotation form).
 */
export function signStandardWebhook(
  secrets: string | readonly string[],
  messageID: string,
  unixSeconds: number,
  body: string,
): string {
  return (typeof secrets === 'string' ? [secrets] : secrets)
    .map((secret) => {
      const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
      return `v1,${createHmac('sha256', key).update(`${messageID}.${unixSeconds}.${body}`, 'utf8').digest('base64')}`;
    })
    .join(' ');
}

/** An endpoint's secrets, as the rotation keeps them, with each one's scheme. */
export interface EndpointSigning<Secret> extends RotatingSecrets<Secret> {
  scheme: WebhookSignatureScheme;
  /** The previous secret's scheme (null: no rotation yet). */
  previousScheme: WebhookSignatureScheme | null;
}

/**
 * How a delivery at `now` is signed: the scheme, and the secrets, current first. A header carries one scheme
 * only, so a rotation that switched schemes keeps the previous one, signed with both secrets, while the previous
 * secret lives: the receiver still verifies the old way meanwhile, and the new scheme starts when the overlap ends.
 */
export function signingAt<Secret>(
  signing: EndpointSigning<Secret>,
  now: string,
): { scheme: WebhookSignatureScheme; secrets: Secret[] } {
  const secrets = acceptedSecrets(signing, now);
  const switching = secrets.length > 1 && signing.previousScheme !== null && signing.previousScheme !== signing.scheme;
  return { scheme: switching ? signing.previousScheme! : signing.scheme, secrets };
}

/**
 * The signature headers of one attempt: `messageID` is the event id (the same at every attempt), `unixSeconds` this
 * attempt's time.
 */
export function signatureHeaders(
  scheme: WebhookSignatureScheme,
  secrets: readonly string[],
  messageID: string,
  unixSeconds: number,
  body: string,
): Record<string, string> {
  switch (scheme) {
    case 'standard-webhooks':
      return {
        'webhook-id': messageID,
        'webhook-timestamp': String(unixSeconds),
        'webhook-signature': signStandardWebhook(secrets, messageID, unixSeconds, body),
      };
    case 'stripe-v1':
      // Byte for byte what these endpoints always received: no webhook-timestamp, the time rides in `t=`.
      return { 'webhook-id': messageID, 'webhook-signature': signWebhook(secrets, unixSeconds, body) };
  }
}
