import { describe, expect, it } from 'vitest';
import { ApiRateLimits, TokenBuckets } from '../../src/http/rate-limit.ts';

describe('token buckets', () => {
  const policy = { name: 'per-key', quota: 10, windowSeconds: 1, burst: 3 };

  it('when a bucket is new, then it holds the burst; each request takes one token; an empty bucket refuses and says when one is back', () => {
    const buckets = new TokenBuckets(policy);
    expect(buckets.take('a', 0)).toEqual({ allowed: true, remaining: 2, resetSeconds: 1 });
    expect(buckets.take('a', 0)).toEqual({ allowed: true, remaining: 1, resetSeconds: 1 });
    expect(buckets.take('a', 0)).toEqual({ allowed: true, remaining: 0, resetSeconds: 1 });
    expect(buckets.take('a', 0)).toEqual({ allowed: false, remaining: 0, resetSeconds: 1 });
  });

  it('when time passes, then tokens drip back at quota per window, never above the burst', () => {
    const buckets = new TokenBuckets(policy);
    for (let i = 0; i < 3; i++) buckets.take('a', 0);
    expect(buckets.take('a', 99).allowed).toBe(false); // 0.99 of a token
    expect(buckets.take('a', 100).allowed).toBe(true); // 1.0 at 100 ms
    expect(buckets.take('a', 10_000)).toEqual({ allowed: true, remaining: 2, resetSeconds: 1 }); // full (3), minus one
  });

  it('when refusals keep coming, then they do not dig the bucket below empty', () => {
    const buckets = new TokenBuckets(policy);
    for (let i = 0; i < 50; i++) buckets.take('a', 0);
    expect(buckets.take('a', 100).allowed).toBe(true);
  });

  it('when the clock steps back, then nothing is refilled and nothing is lost', () => {
    const buckets = new TokenBuckets(policy);
    for (let i = 0; i < 3; i++) buckets.take('a', 5_000);
    expect(buckets.take('a', 1_000).allowed).toBe(false);
    expect(buckets.take('a', 1_100).allowed).toBe(true);
  });

  it('when a slow policy refuses, then Retry-After and t are the whole seconds until the next token, rounded up', () => {
    const buckets = new TokenBuckets({ name: 'failed-auth', quota: 30, windowSeconds: 60, burst: 1 });
    buckets.take('x', 0);
    const refused = buckets.take('x', 500); // a quarter of a token back: 1.5 s to go
    expect(refused).toEqual({ allowed: false, remaining: 0, resetSeconds: 2 });
    expect(buckets.headers(refused)).toEqual({
      'RateLimit-Policy': '"failed-auth";q=30;w=60',
      RateLimit: '"failed-auth";r=0;t=2',
      'Retry-After': '2',
    });
  });

  it('when the bucket is full after a request, then RateLimit has no t: nothing more is coming', () => {
    const buckets = new TokenBuckets({ name: 'p', quota: 1, windowSeconds: 1, burst: 1 });
    expect(buckets.headers({ allowed: true, remaining: 1, resetSeconds: undefined })).toEqual({
      'RateLimit-Policy': '"p";q=1;w=1',
      RateLimit: '"p";r=1',
    });
  });

  it('when more ids than the bound are tracked, then the least recently used is forgotten (it starts full again)', () => {
    const buckets = new TokenBuckets({ ...policy, burst: 1 }, 2);
    buckets.take('a', 0);
    buckets.take('b', 0);
    buckets.take('a', 0); // a is now the most recent
    buckets.take('c', 0); // b goes
    expect(buckets.take('b', 0).allowed).toBe(true);
    expect(buckets.take('c', 0).allowed).toBe(false);
  });
});

describe('the API limits', () => {
  it('when a limit is 0, then it is off', () => {
    const limits = new ApiRateLimits(
      { keyRatePerSecond: 0, keyBurst: 1, failedAuthenticationsPerMinute: 0 },
      () => new Date(0),
    );
    expect(limits.admitKey('key_x')).toBeNull();
    expect(limits.recordFailure('10.0.0.1')).toBeNull();
  });

  it('when failures come from one address in two spellings, then they share a bucket', () => {
    const limits = new ApiRateLimits(
      { keyRatePerSecond: 1, keyBurst: 1, failedAuthenticationsPerMinute: 2 },
      () => new Date(0),
    );
    expect(limits.recordFailure('10.0.0.1')?.verdict.allowed).toBe(true);
    expect(limits.recordFailure('::ffff:10.0.0.1')?.verdict.allowed).toBe(true);
    expect(limits.recordFailure('10.0.0.1')?.verdict.allowed).toBe(false);
  });
});
