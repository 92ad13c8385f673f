import type { DeliveryDoc, RouteDoc } from './deliveries.ts';
import type { AttemptOutcome } from './retry-policy.ts';

/**
 * The dispatcher's workflow, as pure decisions on a delivery's state, the retry policy's outcome and this process's
 * clocks (the I/O, the lease and the loop are the dispatcher's pass, dispatcher.ts). An endpoint's worker asks, for
 * its next delivery, whether it is due (`queueStep`), whether its endpoint still takes it (`endpointStep`), and
 * after an attempt what follows (`attemptStep`); the session loop asks how long to wait (`loopStep`).
 */

/** An endpoint's next delivery, before anything is sent. */
export type QueueStep =
  /** Nothing queued for the endpoint: its worker ends. */
  | { kind: 'idle' }
  /** Its retry is not due yet on this process's clock: the worker ends, and the loop looks again after `ms`. */
  | { kind: 'wait'; ms: number }
  /** Due now (new, redelivered, or its backoff has run out). */
  | { kind: 'due' };

/**
 * A delivery's backoff is `nextAttemptAt - lastAttemptAt`, both from the clock of the process that attempted it (a
 * duration, whatever that clock's offset); it runs from when this process first saw the delivery at this attempt
 * count (`seenForMs`, its monotonic clock), so a queue taken over from a process a day ahead (or behind) is retried
 * a backoff later, not a day later (or at once). New and redelivered deliveries (no failing streak) are due at once.
 */
export function queueStep(delivery: DeliveryDoc | null, seenForMs: number): QueueStep {
  if (delivery === null) return { kind: 'idle' };
  const last = delivery.lastAttemptAt === null ? Number.NaN : Date.parse(delivery.lastAttemptAt);
  if (delivery.failingSince === null || Number.isNaN(last)) return { kind: 'due' };
  const left = Math.max(0, delivery.nextAttemptAt - last) - seenForMs;
  return left > 0 ? { kind: 'wait', ms: left } : { kind: 'due' };
}

/** A due delivery, against its endpoint as it is now (not as the last scan saw it). */
export type EndpointStep =
  /** Disabled or deleted since: its queue stops before the next send; its route and lease are let go. */
  { kind: 'drop-endpoint' } | { kind: 'send'; route: RouteDoc };

export function endpointStep(current: RouteDoc | null): EndpointStep {
  return current?.status === 'active' ? { kind: 'send', route: current } : { kind: 'drop-endpoint' };
}

/** What follows an attempt, as the retry policy judged it and as the lease let it be recorded. */
export type AttemptStep =
  /** Delivered: the worker goes on to the endpoint's next delivery. */
  | { kind: 'next' }
  /** Failed: retried after `ms` (the loop looks again then), counted from the attempt's start. */
  | { kind: 'wait'; ms: number }
  /** A day of failures: the endpoint is disabled by the system. */
  | { kind: 'give-up' }
  /** Paused or slow past the lease: another process holds the queue and records its own attempts. */
  | { kind: 'lost' };

/** `startedAt`: when the attempt began (epoch ms, the clock the policy used). */
export function attemptStep(outcome: AttemptOutcome, recorded: boolean, startedAt: number): AttemptStep {
  if (!recorded) return { kind: 'lost' };
  switch (outcome.kind) {
    case 'delivered':
      return { kind: 'next' };
    case 'retry':
      return { kind: 'wait', ms: Math.max(0, outcome.nextAttemptAt - startedAt) };
    case 'give-up':
      return { kind: 'give-up' };
  }
}

/** The session loop, after a pass over the endpoints it looked at. */
export type LoopStep =
  /** Woken meanwhile (deliveries queued, a worker ended): look again at once. */
  | { kind: 'look' }
  /** Wait `ms` for a wake; if none comes, look at every endpoint (a poll, or a retry falls due). */
  | { kind: 'wait'; ms: number };

/**
 * `retryInMs`: the earliest retry any worker waits for, from now (Infinity: none). A retry due before the next poll
 * shortens the wait; deliveries queued by another process are found at the poll.
 */
export function loopStep(woken: boolean, pollIntervalMs: number, retryInMs: number): LoopStep {
  if (woken) return { kind: 'look' };
  return { kind: 'wait', ms: Math.max(0, Math.min(pollIntervalMs, retryInMs)) };
}
