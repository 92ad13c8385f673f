import { createHash } from 'node:crypto';
import { addressBucket } from '../domain/ip-address.ts';
import type { CollectionDefinition, Counter, ReadStore } from '../ports/read-store.ts';

/**
 * Login throttling against password guessing. Every attempt is counted, per email and per client address,
 * before its password is checked, with the read store's atomic `incrementCounter`: of any number of attempts
 * sent at once, to one process or to several on the same store, only the first `perEmail` for an email (and
 * `perAddress` from an address) are checked at all; the others are refused (429 with Retry-After) whatever
 * their password, so that a guesser learns nothing from the answers.
 *
 * Counts live `lockoutMs` from an email's or address's first attempt; the attempt that reaches a limit starts
 * the lockout, which lasts `lockoutMs` from then. A successful login clears the email's count and gives the
 * address its attempt back (an office behind one address is charged for failures, not for its logins).
 * Counters are keyed by the SHA-256 of the email or address, so the store holds no list of guessed emails.
 * An address is counted as the API counts it (src/domain/ip-address.ts): IPv6 by its /64.
 */
export const LOGIN_ATTEMPTS_COLLECTION: CollectionDefinition = { name: 'console_login_attempts', indexes: [['expiresAt']] };

export interface ThrottleLimits {
  perEmail: number;
  perAddress: number;
  lockoutMs: number;
}

export const DEFAULT_THROTTLE: ThrottleLimits = { perEmail: 5, perAddress: 20, lockoutMs: 15 * 60_000 };

/** What the throttle says of one attempt: refused unchecked, or checked with so many attempts left after it. */
export type Admission =
  | { admitted: false; retryAfterSeconds: number }
  | { admitted: true; attemptsLeft: number; limitedBy: 'email' | 'address' };

type Subject = 'email' | 'address';

// An address is counted by its bucket (IPv6 by its /64), exactly as the API's failed-authentication limit counts it.
const counterID = (subject: Subject, value: string) =>
  `${subject}:${createHash('sha256').update(subject === 'address' ? addressBucket(value) : value).digest('hex')}`;

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
    const counted = await Promise.all(
      (['email', 'address'] as const).map(async (subject) => {
        const limit = subject === 'email' ? this.limits.perEmail : this.limits.perAddress;
        const counter = await this.count(subject, subject === 'email' ? email : address, 1, now);
        if (counter.count === limit) await this.lockFrom(counter, now);
        return { subject, counter, left: limit - counter.count };
      }),
    );
    const over = counted.filter(({ left }) => left < 0);
    if (over.length > 0) {
      const waitMs = Math.max(...over.map(({ counter }) => counter.expiresAt - now));
      return { admitted: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
    }
    const tightest = counted.reduce((a, b) => (b.left < a.left ? b : a));
    return { admitted: true, attemptsLeft: tightest.left, limitedBy: tightest.subject };
  }

  async succeeded(email: string, address: string): Promise<void> {
    const now = this.clock().getTime();
    await Promise.all([
      this.store.commit([{ op: 'delete', collection: LOGIN_ATTEMPTS_COLLECTION.name, id: counterID('email', email) }]),
      this.count('address', address, -1, now),
    ]);
  }

  private count(subject: Subject, value: string, by: number, now: number): Promise<Counter> {
    return this.store.incrementCounter(LOGIN_ATTEMPTS_COLLECTION.name, counterID(subject, value), { by, now, expiresAt: now + this.limits.lockoutMs });
  }

  /** The attempt that used the last one: the counter now lasts a whole lockout from this moment. */
  private async lockFrom(counter: Counter, now: number): Promise<void> {
    counter.expiresAt = now + this.limits.lockoutMs;
    await this.store.commit([{ op: 'patch', collection: LOGIN_ATTEMPTS_COLLECTION.name, id: counter.id, patch: { expiresAt: counter.expiresAt } }]);
  }
}
