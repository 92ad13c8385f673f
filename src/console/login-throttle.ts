/**
 * Login throttling against password guessing: failures are counted per email and per client address in a
 * sliding window. Once either count reaches its limit, every login for that email or from that address is
 * refused (429 with Retry-After) until the oldest failure leaves the window, even with the right password,
 * so that a guesser learns nothing from the answers. A success clears the email's failures, not the address's.
 *
 * In memory: a restart forgets the counts (the window is short), and each process counts its own.
 */
export interface ThrottleLimits {
  windowMs: number;
  perEmail: number;
  perAddress: number;
  /** Bound on the tracked emails and addresses together, so a flood of names cannot exhaust memory. */
  maxTracked: number;
}

export const DEFAULT_THROTTLE: ThrottleLimits = { windowMs: 15 * 60_000, perEmail: 5, perAddress: 20, maxTracked: 50_000 };

export class LoginThrottle {
  private readonly failures = new Map<string, number[]>();

  constructor(
    private readonly clock: () => Date,
    readonly limits: ThrottleLimits = DEFAULT_THROTTLE,
  ) {}

  /** Seconds to wait before trying again, or 0 when a login may be tried now. */
  retryAfterSeconds(email: string, address: string): number {
    const now = this.clock().getTime();
    const wait = Math.max(this.waitFor(`email:${email}`, this.limits.perEmail, now), this.waitFor(`ip:${address}`, this.limits.perAddress, now));
    return wait === 0 ? 0 : Math.max(1, Math.ceil(wait / 1000));
  }

  recordFailure(email: string, address: string): void {
    const now = this.clock().getTime();
    for (const key of [`email:${email}`, `ip:${address}`]) {
      const times = this.recent(key, now);
      times.push(now);
      this.failures.delete(key); // re-inserted last: the map's order is the eviction order
      this.failures.set(key, times);
    }
    while (this.failures.size > this.limits.maxTracked) this.failures.delete(this.failures.keys().next().value as string);
  }

  recordSuccess(email: string): void {
    this.failures.delete(`email:${email}`);
  }

  private recent(key: string, now: number): number[] {
    return (this.failures.get(key) ?? []).filter((t) => now - t < this.limits.windowMs);
  }

  private waitFor(key: string, limit: number, now: number): number {
    const times = this.recent(key, now);
    if (times.length < limit) return 0;
    // Allowed again when enough failures have left the window to be below the limit.
    const releasing = times[times.length - limit]!;
    return releasing + this.limits.windowMs - now;
  }
}
