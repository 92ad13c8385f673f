import { addressBucket } from '../domain/ip-address.ts';

/**
 * Rate limits of the API, as token buckets in this process's memory: one per API key (every authenticated
 * request takes a token), and one per client address for failed authentications (IPv6 by its /64: addressBucket,
 * shared with the console's login limit). A bucket holds at most `burst` tokens and refills at
 * `quota / windowSeconds` tokens a second; a request finding less than one token is refused until one has
 * dripped back.
 *
 * Per process: each API process keeps its own buckets and forgets them at a restart, so a key spread over N
 * processes by a load balancer gets up to N times the rate (docs/operations.md, "Rate limits").
 *
 * The answers follow draft-ietf-httpapi-ratelimit-headers (-10, September 2025):
 * `RateLimit-Policy: "<name>";q=<quota>;w=<window>` and
 * `RateLimit: "<name>";r=<remaining>;t=<seconds until another request is allowed>` (t left out on a full bucket:
 * nothing is coming back), plus `Retry-After` on a refusal, equal to t.
 */
export interface BucketPolicy {
  /** The policy's name in the headers (a Structured Fields string). */
  name: string;
  /** Requests allowed per window, sustained. */
  quota: number;
  windowSeconds: number;
  /** The bucket's size: requests allowed at once after a quiet spell. */
  burst: number;
}

export interface Verdict {
  allowed: boolean;
  /** Whole tokens left after this request. */
  remaining: number;
  /** Seconds until another whole token is back; undefined when the bucket is full. */
  resetSeconds: number | undefined;
}

interface Bucket {
  tokens: number;
  atMs: number;
}

export class TokenBuckets {
  readonly policy: BucketPolicy;
  /** Bound on the buckets kept; the least recently used goes first (a forgotten bucket is a full one). */
  private readonly maxTracked: number;
  private readonly buckets = new Map<string, Bucket>();
  private readonly perMs: number;
  /** The RateLimit-Policy field, the same on every answer: written once. */
  private readonly policyField: string;

  constructor(policy: BucketPolicy, maxTracked = 100_000) {
    this.policy = policy;
    this.maxTracked = maxTracked;
    this.perMs = policy.quota / policy.windowSeconds / 1000;
    this.policyField = `"${policy.name}";q=${policy.quota};w=${policy.windowSeconds}`;
  }

  /** Takes one token from `id`'s bucket if it has one. */
  take(id: string, nowMs: number): Verdict {
    const { burst } = this.policy;
    const bucket = this.buckets.get(id);
    // A clock that steps back refills nothing; it never drains either.
    let tokens = bucket ? Math.min(burst, bucket.tokens + Math.max(0, nowMs - bucket.atMs) * this.perMs) : burst;
    const allowed = tokens >= 1;
    if (allowed) tokens -= 1;
    this.buckets.delete(id); // re-inserted last: the map's order is the eviction order
    this.buckets.set(id, { tokens, atMs: nowMs });
    if (this.buckets.size > this.maxTracked) this.buckets.delete(this.buckets.keys().next().value as string);
    return {
      allowed,
      remaining: Math.floor(tokens),
      resetSeconds: tokens >= burst ? undefined : this.secondsUntil(Math.floor(tokens) + 1 - tokens),
    };
  }

  /** Whole seconds (at least 1) until `tokens` more have dripped in: headers carry no fractions. */
  private secondsUntil(tokens: number): number {
    return Math.max(1, Math.ceil(tokens / this.perMs / 1000));
  }

  /** The RateLimit-Policy and RateLimit fields (and Retry-After on a refusal) for a verdict of this policy. */
  headers(verdict: Verdict): Record<string, string> {
    const reset = verdict.resetSeconds === undefined ? '' : `;t=${verdict.resetSeconds}`;
    return {
      'RateLimit-Policy': this.policyField,
      RateLimit: `"${this.policy.name}";r=${verdict.remaining}${reset}`,
      ...(verdict.allowed ? {} : { 'Retry-After': String(verdict.resetSeconds ?? 1) }),
    };
  }
}

export interface RateLimitSettings {
  /** Requests per second per API key; 0 turns the limit off. */
  keyRatePerSecond: number;
  keyBurst: number;
  /** Failed authentications per client address per minute; 0 turns the limit off. */
  failedAuthenticationsPerMinute: number;
}

/** The two limits of one process, shared by every API router in it. */
export class ApiRateLimits {
  private readonly clock: () => Date;
  readonly perKey: TokenBuckets | null;
  readonly failedAuthentications: TokenBuckets | null;

  constructor(settings: RateLimitSettings, clock: () => Date) {
    this.clock = clock;
    this.perKey =
      settings.keyRatePerSecond > 0
        ? new TokenBuckets({
            name: 'per-key',
            quota: settings.keyRatePerSecond,
            windowSeconds: 1,
            burst: settings.keyBurst,
          })
        : null;
    const failures = settings.failedAuthenticationsPerMinute;
    this.failedAuthentications =
      failures > 0
        ? new TokenBuckets({ name: 'failed-auth', quota: failures, windowSeconds: 60, burst: failures })
        : null;
  }

  /** An authenticated request of this key; null when keys are not limited. */
  admitKey(keyID: string): { verdict: Verdict; headers: Record<string, string> } | null {
    if (!this.perKey) return null;
    const verdict = this.perKey.take(keyID, this.clock().getTime());
    return { verdict, headers: this.perKey.headers(verdict) };
  }

  /** A failed authentication from this address; null when failures are not limited. */
  recordFailure(address: string): { verdict: Verdict; headers: Record<string, string> } | null {
    if (!this.failedAuthentications) return null;
    const verdict = this.failedAuthentications.take(addressBucket(address), this.clock().getTime());
    return { verdict, headers: this.failedAuthentications.headers(verdict) };
  }
}
