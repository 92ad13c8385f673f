import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { CollectionDefinition, ReadStore } from '../ports/read-store.ts';

/**
 * Where a credential waits for its one owner, between the approval that made it and the owner's collection:
 * an API key's secret and a webhook endpoint's signing secret wait for the maker who asked for them; each
 * half of a temporary password waits for one of the two administrators of the access request (split
 * knowledge: see user-admin.ts). The approving commands hold them here and return none to their caller, so
 * a checker or an approving administrator never sees what they approved. The owner collects each once: the
 * console on their next page view, the CLI with `key secret`, `webhook secret` or `access password-half`
 * `--as` the owner.
 *
 * - In the shared read store (collection `console_secrets`), so a restart does not lose it and every process
 *   serving the console can hand it out; encrypted with AES-256-GCM under the secrets key (SECRETS_KEY, or
 *   the embedded deployment's key file beside DATA_DIR), a random 96-bit IV per secret, and the maker's user id,
 *   the kind of secret and the API key's or endpoint's id as additional data, so a sealed secret moved to
 *   another user, key or endpoint, or passed off as the other kind, does not open.
 *   The plain secret exists only while a page is rendered; it is never logged.
 * - Taken, it is gone: each waiting secret is removed with the store's atomic `take`, so of two page views at
 *   once (in one process or two) exactly one shows it; a reload, a second tab or another user finds nothing.
 * - Not collected within `ttlMs` (default 24 h), it is dropped. A secret that cannot be opened (sealed under
 *   another key) is dropped too and logged by key or endpoint id: the maker then asks for the key's
 *   revocation and requests a new one (or disables the endpoint and registers a new one).
 */
export const SECRETS_COLLECTION: CollectionDefinition = { name: 'console_secrets', indexes: [['userID']] };

interface Sealed {
  /** `<userID>/<keyID>` or `<userID>/<endpointID>`: one secret per key or endpoint. */
  id: string;
  userID: string;
  /** Which secrets key sealed it: the first 16 hex digits of its SHA-256. */
  sealedWith: string;
  iv: string;
  tag: string;
  data: string;
  heldAt: number;
  [field: string]: unknown;
}

/** An API key's secret. Documents without a `kind` are these (they were the only kind at first). */
interface SealedApiKeySecret extends Sealed {
  kind?: undefined;
  keyID: string;
  label: string;
}

/** A webhook endpoint's signing secret. */
interface SealedWebhookSecret extends Sealed {
  kind: 'webhook-endpoint';
  endpointID: string;
  url: string;
}

/** One administrator's half of a temporary password. */
interface SealedPasswordHalf extends Sealed {
  kind: 'password-half';
  requestID: string;
  email: string;
  half: PasswordHalf;
}

type SealedSecret = SealedApiKeySecret | SealedWebhookSecret | SealedPasswordHalf;

/** An approved API key's secret. */
export interface ApiKeySecret {
  kind: 'api-key';
  keyID: string;
  label: string;
  apiKey: string;
}

/** An approved webhook endpoint's signing secret. */
export interface WebhookSigningSecret {
  kind: 'webhook-endpoint';
  endpointID: string;
  url: string;
  signingSecret: string;
}

/** The first half is the requesting administrator's, the second the approving one's; the password is both, in order. */
export type PasswordHalf = 'first' | 'second';

/** One half of the temporary password that an approved access request made for the user `email`. */
export interface TemporaryPasswordHalf {
  kind: 'password-half';
  requestID: string;
  email: string;
  half: PasswordHalf;
  value: string;
}

export type DeliveredSecret = ApiKeySecret | WebhookSigningSecret | TemporaryPasswordHalf;

export type Subject = { kind: DeliveredSecret['kind']; id: string };

/** What a secret is for, as its additional data names it. */
export const subjectOf = (secret: DeliveredSecret): Subject => {
  switch (secret.kind) {
    case 'webhook-endpoint':
      return { kind: secret.kind, id: secret.endpointID };
    case 'password-half':
      return { kind: secret.kind, id: secret.requestID };
    default:
      return { kind: 'api-key', id: secret.keyID };
  }
};
const sealedSubject = (sealed: SealedSecret): Subject => {
  switch (sealed.kind) {
    case 'webhook-endpoint':
      return { kind: sealed.kind, id: sealed.endpointID };
    case 'password-half':
      return { kind: sealed.kind, id: sealed.requestID };
    default:
      return { kind: 'api-key', id: sealed.keyID };
  }
};
const plainOf = (secret: DeliveredSecret): string =>
  secret.kind === 'webhook-endpoint'
    ? secret.signingSecret
    : secret.kind === 'password-half'
      ? secret.value
      : secret.apiKey;

/** What a dropped secret is reported with (the structural part of a pino logger: commands import no logger). */
export interface WarningSink {
  warn(details: Record<string, unknown>, message: string): void;
}

/** How a dropped secret is named in the log: by its subject's id, never by value. */
const NAMES: Record<Subject['kind'], { what: string; idField: string }> = {
  'api-key': { what: 'API key secret', idField: 'keyID' },
  'webhook-endpoint': { what: 'webhook signing secret', idField: 'endpointID' },
  'password-half': { what: 'temporary password half', idField: 'requestID' },
};

export interface HeldCredentialsOptions {
  store: ReadStore;
  /** 32 bytes. */
  key: Buffer;
  clock: () => Date;
  logger: WarningSink;
  ttlMs?: number;
}

export const DEFAULT_SECRET_TTL_MS = 24 * 3_600_000;

export class HeldCredentials {
  private readonly store: ReadStore;
  private readonly key: Buffer;
  private readonly keyID: string;
  private readonly clock: () => Date;
  private readonly logger: WarningSink;
  private readonly ttlMs: number;

  constructor(options: HeldCredentialsOptions) {
    if (options.key.length !== 32) throw new RangeError('the secrets key must be 32 bytes');
    this.store = options.store;
    this.key = options.key;
    this.keyID = createHash('sha256').update(options.key).digest('hex').slice(0, 16);
    this.clock = options.clock;
    this.logger = options.logger;
    this.ttlMs = options.ttlMs ?? DEFAULT_SECRET_TTL_MS;
  }

  async hold(userID: string, secret: DeliveredSecret): Promise<void> {
    const subject = subjectOf(secret);
    const plain = plainOf(secret);
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(additionalData(this.keyID, userID, subject));
    const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    const seal = {
      id: `${userID}/${subject.id}`,
      userID,
      sealedWith: this.keyID,
      iv: iv.toString('base64'),
      tag: cipher.getAuthTag().toString('base64'),
      data: data.toString('base64'),
      heldAt: this.clock().getTime(),
    };
    const sealed: SealedSecret =
      secret.kind === 'webhook-endpoint'
        ? { ...seal, kind: 'webhook-endpoint', endpointID: secret.endpointID, url: secret.url }
        : secret.kind === 'password-half'
          ? { ...seal, kind: 'password-half', requestID: secret.requestID, email: secret.email, half: secret.half }
          : { ...seal, keyID: secret.keyID, label: secret.label };
    // Approvals are rare and few secrets wait at a time: every hold sweeps what nobody collected in time.
    const stale = (await this.store.find<SealedSecret>(SECRETS_COLLECTION.name)).filter((doc) => this.expired(doc));
    await this.store.commit([
      ...stale.map((doc) => ({ op: 'delete' as const, collection: SECRETS_COLLECTION.name, id: doc.id })),
      { op: 'upsert', collection: SECRETS_COLLECTION.name, doc: sealed },
    ]);
  }

  /** Every secret waiting for the user, each removed from the store as it is returned. */
  async take(userID: string): Promise<DeliveredSecret[]> {
    const waiting = await this.store.find<SealedSecret>(SECRETS_COLLECTION.name, { where: { userID } });
    const delivered: DeliveredSecret[] = [];
    for (const { id } of waiting) {
      const secret = await this.takeByID(userID, id);
      if (secret) delivered.push(secret);
    }
    return delivered;
  }

  /** The one secret waiting for the user for this key, endpoint or access request, removed as it is returned. */
  async takeOne(userID: string, subject: Subject): Promise<DeliveredSecret | null> {
    const id = `${userID}/${subject.id}`;
    const waiting = await this.store.find<SealedSecret>(SECRETS_COLLECTION.name, { where: { userID } });
    const match = waiting.find((doc) => doc.id === id && sealedSubject(doc).kind === subject.kind);
    return match ? this.takeByID(userID, id) : null;
  }

  private async takeByID(userID: string, id: string): Promise<DeliveredSecret | null> {
    // Another page view or command (here or in another process) may take it first: then it is theirs to show.
    const sealed = await this.store.take<SealedSecret>(SECRETS_COLLECTION.name, id);
    if (!sealed || sealed.userID !== userID || this.expired(sealed)) return null;
    const plain = this.open(sealed, userID);
    if (plain === null) {
      const { kind, id: subjectID } = sealedSubject(sealed);
      const { what, idField } = NAMES[kind];
      this.logger.warn(
        { userID, [idField]: subjectID },
        `console: a waiting ${what} could not be opened (sealed under another secrets key) and was dropped`,
      );
      return null;
    }
    switch (sealed.kind) {
      case 'webhook-endpoint':
        return { kind: 'webhook-endpoint', endpointID: sealed.endpointID, url: sealed.url, signingSecret: plain };
      case 'password-half':
        return {
          kind: 'password-half',
          requestID: sealed.requestID,
          email: sealed.email,
          half: sealed.half,
          value: plain,
        };
      default:
        return { kind: 'api-key', keyID: sealed.keyID, label: sealed.label, apiKey: plain };
    }
  }

  private open(sealed: SealedSecret, userID: string): string | null {
    if (sealed.sealedWith !== this.keyID) return null;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(sealed.iv, 'base64'));
      decipher.setAAD(additionalData(sealed.sealedWith, userID, sealedSubject(sealed)));
      decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]).toString('utf8');
    } catch {
      return null; // tampered with, or moved to another user or key
    }
  }

  private expired(sealed: SealedSecret): boolean {
    return this.clock().getTime() - sealed.heldAt >= this.ttlMs;
  }
}

function additionalData(sealedWith: string, userID: string, subject: Subject): Buffer {
  // An API key's keeps the original form, so secrets held before webhook endpoints existed still open.
  if (subject.kind === 'api-key')
    return Buffer.from(`wallet-ops console secret\n${sealedWith}\n${userID}\n${subject.id}`);
  if (subject.kind === 'password-half')
    return Buffer.from(`wallet-ops temporary password half\n${sealedWith}\n${userID}\n${subject.id}`);
  return Buffer.from(`wallet-ops console webhook signing secret\n${sealedWith}\n${userID}\n${subject.id}`);
}
