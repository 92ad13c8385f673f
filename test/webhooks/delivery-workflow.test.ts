import { describe, expect, it } from 'vitest';
import { attemptStep, endpointStep, loopStep, queueStep } from '../../src/webhooks/delivery-workflow.ts';
import type { DeliveryDoc, RouteDoc } from '../../src/webhooks/deliveries.ts';
import { afterAttempt, type RetryPolicy } from '../../src/webhooks/retry-policy.ts';

/** The dispatcher's decisions as pure functions: no store, no receiver, no timer. */
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const delivery = (patch: Partial<DeliveryDoc> = {}): DeliveryDoc => ({
  id: 'we_1:evt_1',
  endpointID: 'we_1',
  partyType: 'merchant',
  partyID: 'm_1',
  eventID: 'evt_1',
  eventType: 'operation.completed',
  position: 7,
  createdAt: new Date(T0).toISOString(),
  body: '{}',
  status: 'pending',
  attempts: 0,
  nextAttemptAt: T0,
  failingSince: null,
  lastAttemptAt: null,
  lastStatusCode: null,
  lastError: null,
  deliveredAt: null,
  redeliveredBy: null,
  redeliveredAt: null,
  ...patch,
});
/** A delivery whose last attempt (at T0, on its sender's clock) failed and asked for a retry `backoffMs` later. */
const retrying = (backoffMs: number, attempts = 1) =>
  delivery({ attempts, failingSince: T0, lastAttemptAt: new Date(T0).toISOString(), nextAttemptAt: T0 + backoffMs });
const route = (status: RouteDoc['status']): RouteDoc => ({
  id: 'we_1',
  partyType: 'merchant',
  partyID: 'm_1',
  url: 'https://example.test/hook',
  eventTypes: ['operation.completed'],
  status,
  rotatedAt: null,
});

describe('the webhook delivery workflow', () => {
  describe("given an endpoint's next delivery (queueStep)", () => {
    it.each([
      ['a new delivery, never attempted', delivery(), 0, { kind: 'due' }],
      [
        'a redelivery (attempted, no failing streak)',
        delivery({ attempts: 3, lastAttemptAt: new Date(T0).toISOString() }),
        0,
        { kind: 'due' },
      ],
      ['a failed delivery first seen now', retrying(5_000), 0, { kind: 'wait', ms: 5_000 }],
      ['a failed delivery seen for part of its backoff', retrying(5_000), 1_200, { kind: 'wait', ms: 3_800 }],
      ['a failed delivery seen for its whole backoff', retrying(5_000), 5_000, { kind: 'due' }],
      ['a failed delivery seen for longer than its backoff', retrying(5_000), 9_000, { kind: 'due' }],
      [
        'a failed delivery whose last attempt has no time',
        delivery({ attempts: 1, failingSince: T0, lastAttemptAt: null, nextAttemptAt: T0 + 5_000 }),
        0,
        { kind: 'due' },
      ],
      [
        'a failed delivery whose retry was asked before its attempt (a negative backoff)',
        retrying(-1_000),
        0,
        { kind: 'due' },
      ],
    ] as const)('when it is %s, then the step is as shown', (_, given, seenForMs, then) => {
      expect(queueStep(given, seenForMs)).toEqual(then);
    });

    it('when the queue was taken over from a process whose clock runs a day ahead, then it waits one backoff, not a day', () => {
      const aDayAhead = T0 + 86_400_000;
      const taken = delivery({
        attempts: 2,
        failingSince: aDayAhead,
        lastAttemptAt: new Date(aDayAhead).toISOString(),
        nextAttemptAt: aDayAhead + 10_000,
      });
      expect(queueStep(taken, 0)).toEqual({ kind: 'wait', ms: 10_000 });
    });
  });

  describe('given a due delivery and its endpoint as it is now (endpointStep)', () => {
    it('when the endpoint is active, then the delivery is sent to it', () => {
      expect(endpointStep(route('active'))).toEqual({ kind: 'send', route: route('active') });
    });

    it.each([
      ['disabled', route('disabled')],
      ['no longer routed (deleted)', null],
    ] as const)('when the endpoint is %s, then its queue is dropped', (_, current) => {
      expect(endpointStep(current)).toEqual({ kind: 'drop-endpoint' });
    });
  });

  describe('given an attempt and how it was recorded (attemptStep)', () => {
    const policy: RetryPolicy = { baseDelayMs: 1_000, maxDelayMs: 60_000, giveUpAfterMs: 600_000 };
    const startedAt = T0 + 30_000;
    it.each([
      [
        'delivered and recorded',
        afterAttempt({ failingSince: null }, { ok: true }, startedAt, policy),
        true,
        { kind: 'next' },
      ],
      [
        'failed for the first time',
        afterAttempt({ failingSince: null }, { ok: false }, startedAt, policy, () => 0.5),
        true,
        { kind: 'wait', ms: 1_000 },
      ],
      [
        'failed in a 30 s streak',
        afterAttempt({ failingSince: T0 }, { ok: false }, startedAt, policy, () => 0.5),
        true,
        { kind: 'wait', ms: 30_000 },
      ],
      [
        'failed past the give-up time',
        afterAttempt({ failingSince: T0 - 600_000 }, { ok: false }, startedAt, policy),
        true,
        { kind: 'give-up' },
      ],
      ['delivered, but the lease was lost before the record', { kind: 'delivered' }, false, { kind: 'lost' }],
      [
        'failed for good, but the lease was lost before the record',
        { kind: 'give-up', failingSince: T0 },
        false,
        { kind: 'lost' },
      ],
    ] as const)('when it %s, then the step is as shown', (_, outcome, recorded, then) => {
      expect(attemptStep(outcome, recorded, startedAt)).toEqual(then);
    });
  });

  describe('given the session loop after a pass (loopStep)', () => {
    it.each([
      ['woken meanwhile', true, Infinity, { kind: 'look' }],
      ['idle, no retry waiting', false, Infinity, { kind: 'wait', ms: 20_000 }],
      ['idle, a retry due before the poll', false, 3_000, { kind: 'wait', ms: 3_000 }],
      ['idle, a retry due after the poll', false, 90_000, { kind: 'wait', ms: 20_000 }],
      ['idle, a retry already due', false, -50, { kind: 'wait', ms: 0 }],
    ] as const)('when %s, then the step is as shown', (_, woken, retryInMs, then) => {
      expect(loopStep(woken, 20_000, retryInMs)).toEqual(then);
    });
  });
});
