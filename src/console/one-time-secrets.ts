import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Where a key's secret waits between the checker's approval and the maker's next page view. approveApiKey
 * returns the secret to whoever approves, but the contract shows it to the maker: the console keeps it here,
 * for the maker's user id only, and hands it out exactly once.
 *
 * - In memory only, never on disk and never logged; encrypted (AES-256-GCM) under a key made at start, so
 *   the plain secret lives only while a page is rendered.
 * - Taken, it is gone: a reload, a second tab or another user finds nothing.
 * - Not collected within `ttlMs` (default 24 h), it is dropped. A restart drops every waiting secret too:
 *   the maker then asks for the key's revocation and requests a new one (the console says so on the key).
 */
interface Sealed {
  keyID: string;
  label: string;
  iv: Buffer;
  tag: Buffer;
  data: Buffer;
  storedAt: number;
}

export interface DeliveredSecret {
  keyID: string;
  label: string;
  apiKey: string;
}

export class OneTimeSecrets {
  private readonly key = randomBytes(32);
  private readonly byUser = new Map<string, Sealed[]>();

  constructor(
    private readonly clock: () => Date,
    private readonly ttlMs = 24 * 3_600_000,
  ) {}

  hold(userID: string, secret: DeliveredSecret): void {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(`${userID}\n${secret.keyID}`));
    const data = Buffer.concat([cipher.update(secret.apiKey, 'utf8'), cipher.final()]);
    const sealed: Sealed = { keyID: secret.keyID, label: secret.label, iv, tag: cipher.getAuthTag(), data, storedAt: this.clock().getTime() };
    for (const other of [...this.byUser.keys()]) this.live(other); // sweeps what nobody collected in time
    this.byUser.set(userID, [...this.live(userID), sealed]);
  }

  /** Whether a secret waits for this user (without taking it). */
  has(userID: string): boolean {
    return this.live(userID).length > 0;
  }

  /** Every secret waiting for the user, removed as it is returned. */
  take(userID: string): DeliveredSecret[] {
    const waiting = this.live(userID);
    this.byUser.delete(userID);
    return waiting.map((sealed) => {
      const decipher = createDecipheriv('aes-256-gcm', this.key, sealed.iv);
      decipher.setAAD(Buffer.from(`${userID}\n${sealed.keyID}`));
      decipher.setAuthTag(sealed.tag);
      const apiKey = Buffer.concat([decipher.update(sealed.data), decipher.final()]).toString('utf8');
      sealed.data.fill(0);
      return { keyID: sealed.keyID, label: sealed.label, apiKey };
    });
  }

  private live(userID: string): Sealed[] {
    const now = this.clock().getTime();
    const all = this.byUser.get(userID) ?? [];
    const live = all.filter((s) => now - s.storedAt < this.ttlMs);
    if (live.length !== all.length) {
      if (live.length === 0) this.byUser.delete(userID);
      else this.byUser.set(userID, live);
    }
    return live;
  }
}
