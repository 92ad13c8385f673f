import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Logger } from '../logger.ts';
import type { CollectionDefinition, ReadStore } from '../ports/read-store.ts';

/**
 * Where a key's secret waits between the checker's approval and the maker's next page view. approveApiKey
 * returns the secret to whoever approves, but the contract shows it to the maker: the console keeps it here,
 * for the maker's user id only, and hands it out exactly once.
 *
 * - In the shared read store (collection `console_secrets`), so a restart does not lose it and every process
 *   serving the console can hand it out; encrypted with AES-256-GCM under the secrets key (SECRETS_KEY, or
 *   the embedded deployment's DATA_DIR/secrets.key), a random 96-bit IV per secret, and the maker's user id
 *   and the API key's id as additional data, so a sealed secret moved to another user or key does not open.
 *   The plain secret exists only while a page is rendered; it is never logged.
 * - Taken, it is gone: each waiting secret is removed with the store's atomic `take`, so of two page views at
 *   once (in one process or two) exactly one shows it; a reload, a second tab or another user finds nothing.
 * - Not collected within `ttlMs` (default 24 h), it is dropped. A secret that cannot be opened (sealed under
 *   another key) is dropped too and logged by key id: the maker then asks for the key's revocation and
 *   requests a new one.
 */
export const SECRETS_COLLECTION: CollectionDefinition = { name: 'console_secrets', indexes: [['userID']] };

interface SealedSecret {
  /** `<userID>/<keyID>`: one secret per key. */
  id: string;
  userID: string;
  keyID: string;
  label: string;
  /** Which secrets key sealed it: the first 16 hex digits of its SHA-256. */
  sealedWith: string;
  iv: string;
  tag: string;
  data: string;
  heldAt: number;
  [field: string]: unknown;
}

export interface DeliveredSecret {
  keyID: string;
  label: string;
  apiKey: string;
}

export interface OneTimeSecretsOptions {
  store: ReadStore;
  /** 32 bytes. */
  key: Buffer;
  clock: () => Date;
  logger: Logger;
  ttlMs?: number;
}

export const DEFAULT_SECRET_TTL_MS = 24 * 3_600_000;

export class OneTimeSecrets {
  private readonly store: ReadStore;
  private readonly key: Buffer;
  private readonly keyID: string;
  private readonly clock: () => Date;
  private readonly logger: Logger;
  private readonly ttlMs: number;

  constructor(options: OneTimeSecretsOptions) {
    if (options.key.length !== 32) throw new RangeError('the secrets key must be 32 bytes');
    this.store = options.store;
    this.key = options.key;
    this.keyID = createHash('sha256').update(options.key).digest('hex').slice(0, 16);
    this.clock = options.clock;
    this.logger = options.logger;
    this.ttlMs = options.ttlMs ?? DEFAULT_SECRET_TTL_MS;
  }

  async hold(userID: string, secret: DeliveredSecret): Promise<void> {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(additionalData(this.keyID, userID, secret.keyID));
    const data = Buffer.concat([cipher.update(secret.apiKey, 'utf8'), cipher.final()]);
    const sealed: SealedSecret = {
      id: `${userID}/${secret.keyID}`,
      userID,
      keyID: secret.keyID,
      label: secret.label,
      sealedWith: this.keyID,
      iv: iv.toString('base64'),
      tag: cipher.getAuthTag().toString('base64'),
      data: data.toString('base64'),
      heldAt: this.clock().getTime(),
    };
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
      // Another page view (here or in another process) may take it first: then it is theirs to show.
      const sealed = await this.store.take<SealedSecret>(SECRETS_COLLECTION.name, id);
      if (!sealed || this.expired(sealed)) continue;
      const apiKey = this.open(sealed, userID);
      if (apiKey === null) {
        this.logger.warn({ userID, keyID: sealed.keyID }, 'console: a waiting API key secret could not be opened (sealed under another secrets key) and was dropped');
        continue;
      }
      delivered.push({ keyID: sealed.keyID, label: sealed.label, apiKey });
    }
    return delivered;
  }

  private open(sealed: SealedSecret, userID: string): string | null {
    if (sealed.sealedWith !== this.keyID) return null;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(sealed.iv, 'base64'));
      decipher.setAAD(additionalData(sealed.sealedWith, userID, sealed.keyID));
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

function additionalData(sealedWith: string, userID: string, keyID: string): Buffer {
  return Buffer.from(`wallet-ops console secret\n${sealedWith}\n${userID}\n${keyID}`);
}
