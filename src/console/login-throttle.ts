import { createHash } from 'node:crypto';
import { addressBucket } from '../domain/ip-address.ts';
import type { CollectionDefinition, Counter, ReadStore } from '../ports/read-store.ts';

/**
 * Login throttling against password guessing, without a lock anyone else can put on an account (docs/console.md,
 * "Login throttling"). Every attempt is counted before its password is checked, with the read store's atomic
 * `incrementCounter`, so no more are checked than the limits allow, across processes: per address (locks it), per
 * account and address (locks that pair), per account from every address (never locks: slows, so the owner gets in
 * within `maxDelayMs`). A success clears its pair's and its account's counts and gives the address its attempt back.
 * Keys are SHA-256 of the email and the address (IPv6 by its /64), so the store holds no list of guessed emails.
 */
export const LOGIN_ATTEMPTS_COLLECTION: CollectionDefinition = {
  name: 'console_login_attempts',
  indexes: [['expiresAt']],
};

export interface ThrottleLimits {
  /** Attempts on one email from one address before that pair locks; from every address, where the waits start. */
  perEmail: number;
  perAddress: number;
  lockoutMs: number;
  /** The longest wait the account-wide count raises. */
  maxDelayMs: number;
}

export const DEFAULT_THROTTLE: ThrottleLimits = {
  perEmail: 5,
  perAddress: 20,
  lockoutMs: 15 * 60_000,
  maxDelayMs: 60_000,
};

/** The first wait past the account-wide threshold; each further attempt on the account doubles it. */
const FIRST_DELAY_MS = 1000;

/**
 * What the throttle says of one attempt: refused unchecked (locked, or too early), or checked with so many attempts
 * left after it.
 */
export type Admission =
  | { admitted: false; retryAfterSeconds: number; reason: 'locked' | 'delayed' }
  | { admitted: true; attemptsLeft: number; limitedBy: 'email' | 'address' };

type Subject = 'account' | 'pair' | 'address';

// An address is counted by its bucket (IPv6 by its /64), exactly as the API's failed-authentication limit counts it.
const counterID = (subject: Subject, email: string, address: string) => {
  const value =
    subject === 'account'
      ? email
      : subject === 'address'
        ? addressBucket(address)
        : `${email}\u0000${addressBucket(address)}`;
  // 'email:' as before for the account: counters of earlier versions keep counting.
  return `${subject === 'account' ? 'email' : subject}:${createHash('sha256').update(value).digest('hex')}`;
};

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

export class LoginThrottle {
  private readonly store: ReadStore;
  private readonly clock: () => Date;
  readonly limits: ThrottleLimits;
  constructor(store: ReadStore, clock: () => Date, limits: ThrottleLimits = DEFAULT_THROTTLE) {
    this.store = store;
    this.clock = clock;
    this.limits = limits;
  }

  /** Counts the attempt, then says whether its password may be checked. */
  async admit(email: string, address: string): Promise<Admission> {
    const now = this.clock().getTime();
    const { perEmail, perAddress, lockoutMs } = this.limits;
    const [fromAddress, pair] = await Promise.all([
      this.count('address', email, address, 1, now),
      this.count('pair', email, address, 1, now),
    ]);
    if (fromAddress.count === perAddress) await this.lockFrom(fromAddress, now);
    const locked = [fromAddress.count > perAddress ? fromAddress : null, pair.count > perEmail ? pair : null].filter(
      (counter) => counter !== null,
    );
    if (locked.length > 0) {
      return {
        admitted: false,
        reason: 'locked',
        retryAfterSeconds: seconds(Math.max(...locked.map((counter) => counter.expiresAt - now))),
      };
    }

    // The pair's first attempt, read before a lock could move its expiry: where this address's waits count from.
    const firstAt = pair.expiresAt - lockoutMs;
    const account = await this.count('account', email, address, 1, now);
    const beyond = account.count - perEmail;
    if (beyond > 0) {
      const delayMs = Math.min(this.limits.maxDelayMs, FIRST_DELAY_MS * 2 ** Math.min(beyond - 1, 30));
      // The n-th attempt of this address on this email is checked no sooner than n waits after its first.
      const dueAt = firstAt + pair.count * delayMs;
      if (now < dueAt) {
        await Promise.all([
          this.count('pair', email, address, -1, now),
          this.count('account', email, address, -1, now),
        ]);
        return { admitted: false, reason: 'delayed', retryAfterSeconds: seconds(dueAt - now) };
      }
    }
    if (pair.count === perEmail) await this.lockFrom(pair, now);
    const left = { email: perEmail - pair.count, address: perAddress - fromAddress.count };
    return left.email <= left.address
      ? { admitted: true, attemptsLeft: left.email, limitedBy: 'email' }
      : { admitted: true, attemptsLeft: left.address, limitedBy: 'address' };
  }

  async succeeded(email: string, address: string): Promise<void> {
    const now = this.clock().getTime();
    await Promise.all([
      this.store.commit([
        { op: 'delete', collection: LOGIN_ATTEMPTS_COLLECTION.name, id: counterID('pair', email, address) },
        { op: 'delete', collection: LOGIN_ATTEMPTS_COLLECTION.name, id: counterID('account', email, address) },
      ]),
      this.count('address', email, address, -1, now),
    ]);
  }

  private count(subject: Subject, email: string, address: string, by: number, now: number): Promise<Counter> {
    return this.store.incrementCounter(LOGIN_ATTEMPTS_COLLECTION.name, counterID(subject, email, address), {
      by,
      now,
      expiresAt: now + this.limits.lockoutMs,
    });
  }

  /** The attempt that used the last one: the counter now lasts a whole lockout from this moment. */
  private async lockFrom(counter: Counter, now: number): Promise<void> {
    counter.expiresAt = now + this.limits.lockoutMs;
    await this.store.commit([
      {
        op: 'patch',
        collection: LOGIN_ATTEMPTS_COLLECTION.name,
        id: counter.id,
        patch: { expiresAt: counter.expiresAt },
      },
    ]);
  }
}
