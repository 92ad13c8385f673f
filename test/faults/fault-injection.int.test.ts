/**
 * Fault injection (src/faults): decorators that delay, hang and fail the calls of the three storage ports,
 * each over the real embedded store, with a seeded or scripted `random` so that every fault is predictable.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEmbeddedLedger } from '../../src/adapters/ledger/embedded-ledger.ts';
import { embedded, openStores } from '../../src/adapters/open-stores.ts';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { openSqliteReadStore } from '../../src/adapters/sqlite/sqlite-read-store.ts';
import { ConfigError, configDocs, loadConfig } from '../../src/config.ts';
import {
  type FaultCounters,
  type FaultPlan,
  NO_FAULTS,
  activeFaultPlans,
  faultDecorators,
  faultPlansFromConfig,
  newFaultCounters,
  withEventStoreFaults,
  withLedgerFaults,
  withReadStoreFaults,
} from '../../src/faults/index.ts';
import { EventStoreUnavailableError, type EventStore } from '../../src/ports/event-store.ts';
import { ISSUANCE_ADDRESS, LedgerUnavailableError, LedgerVoidedError, type Ledger } from '../../src/ports/ledger.ts';
import { ReadStoreUnavailableError, type ReadStore } from '../../src/ports/read-store.ts';
import { tempDir } from '../support/temp-dir.ts';

/** mulberry32: a small seeded generator of numbers in [0, 1). */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Returns these draws in order; running out means the decorator drew more than the test expects. */
function scripted(...draws: number[]): () => number {
  return () => {
    if (draws.length === 0) throw new Error('unexpected random draw');
    return draws.shift()!;
  };
}

// Draw order of one call: hang (if hangRate > 0), latency (if latencyMs > 0), error (if errorRate > 0), side (writes).
const FAIL = 0; // below any positive rate: the fault happens
const PASS = 0.99; // above the rates used here: no fault
const AFTER = 0.1; // side draw < 0.5: the error comes after the real call
const BEFORE = 0.9;

const plan = (overrides: Partial<FaultPlan>): FaultPlan => ({ ...NO_FAULTS, ...overrides });
const event = (n: number) => ({ type: 'Thing', data: { n } });

async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected the call to fail');
}

describe('fault injection', () => {
  let dir: ReturnType<typeof tempDir>;
  let events: EventStore;
  let reads: ReadStore;
  let ledger: Ledger;
  let counters: FaultCounters;

  beforeEach(async () => {
    dir = tempDir('faults-');
    events = openSqliteEventStore({ file: join(dir.path, 'events.sqlite') });
    reads = openSqliteReadStore({ file: join(dir.path, 'read-models.sqlite') });
    await reads.defineCollections([{ name: 'things' }]);
    ledger = openEmbeddedLedger({ file: join(dir.path, 'ledger.sqlite') });
    counters = newFaultCounters();
  });

  afterEach(async () => {
    await Promise.all([events.close(), reads.close(), ledger.close()]);
    dir.cleanup();
  });

  describe('a plan that injects nothing', () => {
    it('given a zero plan (even with a hang duration), when a store is decorated, then the very same object comes back', () => {
      const zero = plan({ hangMs: 30_000 });
      expect(withEventStoreFaults(events, zero)).toBe(events);
      expect(withReadStoreFaults(reads, zero)).toBe(reads);
      expect(withLedgerFaults(ledger, zero)).toBe(ledger);
    });

    it('given a rate outside 0..1, when a store is decorated, then it is refused', () => {
      expect(() => withEventStoreFaults(events, plan({ errorRate: 1.5 }))).toThrow(RangeError);
    });
  });

  describe('error rate', () => {
    const CALLS = 1000;
    const SEED = 42;
    // One draw per call (only errorRate is set, reads have no side draw): the expected failures are exactly the draws below 0.1.
    const expected = Array.from({ length: CALLS }, seeded(SEED)).filter((draw) => draw < 0.1).length;

    it('given the seed, then about a tenth of its draws are below 0.1 (the expectation is a sensible one)', () => {
      expect(expected).toBeGreaterThan(70);
      expect(expected).toBeLessThan(130);
    });

    it("given a rate of 0.1 and a seeded random, when the event store is read 1000 times, then exactly the expected calls fail, with the store's transient error", async () => {
      const store = withEventStoreFaults(events, plan({ errorRate: 0.1, random: seeded(SEED) }), counters);
      const outcomes = await Promise.allSettled(Array.from({ length: CALLS }, () => store.headPosition()));
      const failed = outcomes
        .filter((outcome) => outcome.status === 'rejected')
        .map((outcome) => outcome.reason as Error);
      expect(failed).toHaveLength(expected);
      expect(
        failed.every((error) => error instanceof EventStoreUnavailableError && /\(injected\)$/.test(error.message)),
      ).toBe(true);
      expect(counters).toEqual({ errors: expected, hangs: 0, delayedCalls: 0 });
    });

    it('given the same rate and seed on the read store and the ledger, then the same count fails with their own errors', async () => {
      const store = withReadStoreFaults(reads, plan({ errorRate: 0.1, random: seeded(SEED) }), counters);
      const chain = withLedgerFaults(ledger, plan({ errorRate: 0.1, random: seeded(SEED) }), counters);
      const storeOutcomes = await Promise.allSettled(Array.from({ length: CALLS }, () => store.getCheckpoint('p')));
      const ledgerOutcomes = await Promise.allSettled(
        Array.from({ length: CALLS }, () => chain.balance('merchant:m-1')),
      );
      const reasons = (outcomes: PromiseSettledResult<unknown>[]) =>
        outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason as Error] : []));
      expect(reasons(storeOutcomes).filter((error) => error instanceof ReadStoreUnavailableError)).toHaveLength(
        expected,
      );
      expect(reasons(ledgerOutcomes).filter((error) => error instanceof LedgerUnavailableError)).toHaveLength(expected);
      expect(counters.errors).toBe(2 * expected);
    });
  });

  describe('event store writes: before or after', () => {
    it('given an error before the call, when appending, then it fails and nothing is written', async () => {
      const store = withEventStoreFaults(events, plan({ errorRate: 0.5, random: scripted(FAIL, BEFORE) }), counters);
      expect(await failure(store.append('thing-1', [event(1)], 'no_stream'))).toBeInstanceOf(
        EventStoreUnavailableError,
      );
      expect(await events.readStream('thing-1')).toEqual([]);
    });

    it('given an error after the call, when appending, then the caller gets the error but the event IS in the store', async () => {
      const store = withEventStoreFaults(events, plan({ errorRate: 0.5, random: scripted(FAIL, AFTER) }), counters);
      const error = await failure(store.append('thing-1', [event(1)], 'no_stream'));
      expect(error).toBeInstanceOf(EventStoreUnavailableError);
      expect(error.message).toMatch(/\(injected\)/);
      expect((await events.readStream('thing-1')).map((e) => e.data)).toEqual([{ n: 1 }]);
      expect(counters.errors).toBe(1);
    });

    it('given an error after the call, when appending to several streams, then all of them were written', async () => {
      const store = withEventStoreFaults(events, plan({ errorRate: 0.5, random: scripted(FAIL, AFTER) }));
      await failure(
        store.appendMulti([
          { stream: 'a-1', events: [event(1)], expectedRevision: 'no_stream' },
          { stream: 'b-1', events: [event(2)], expectedRevision: 'no_stream' },
        ]),
      );
      expect(await events.readStream('a-1')).toHaveLength(1);
      expect(await events.readStream('b-1')).toHaveLength(1);
    });

    it('given an error rate of 1, when the store is closed, then close is never faulted', async () => {
      const store = withEventStoreFaults(events, plan({ errorRate: 1, random: scripted() }));
      await expect(store.close()).resolves.toBeUndefined();
    });
  });

  describe('event store subscriptions', () => {
    it('given a failing next(), then it rejects with the transient error, and the subscription is stopped: later next() are done, even with new events', async () => {
      await events.append('thing-1', [event(1), event(2), event(3)], 'no_stream');
      const store = withEventStoreFaults(events, plan({ errorRate: 0.1, random: scripted(PASS, FAIL) }), counters);
      const iterator = store.subscribeToAll({ from: 'start' })[Symbol.asyncIterator]();
      expect((await iterator.next()).value?.data).toEqual({ n: 1 });
      expect(await failure(iterator.next())).toBeInstanceOf(EventStoreUnavailableError);
      await events.append('thing-1', [event(4)], 2);
      expect(await iterator.next()).toEqual({ done: true, value: undefined });
      expect(counters.errors).toBe(1);
    });

    it('given a consumer that resubscribes from its checkpoint after the break, then it sees every event once', async () => {
      await events.append('thing-1', [event(1), event(2), event(3)], 'no_stream');
      const store = withEventStoreFaults(events, plan({ errorRate: 0.1, random: scripted(PASS, FAIL, PASS, PASS) }));
      const seen: number[] = [];
      let checkpoint: number | 'start' = 'start';
      while (seen.length < 3) {
        try {
          for await (const recorded of store.subscribeToAll({ from: checkpoint })) {
            seen.push((recorded.data as { n: number }).n);
            checkpoint = recorded.position;
            if (seen.length === 3) break;
          }
        } catch (error) {
          expect(error).toBeInstanceOf(EventStoreUnavailableError);
        }
      }
      expect(seen).toEqual([1, 2, 3]);
    });

    it('given a latency, when events are delivered, then each next() waits at most a tenth of it', async () => {
      await events.append('thing-1', [event(1)], 'no_stream');
      const store = withEventStoreFaults(events, plan({ latencyMs: 1000, random: () => 0.999 }), counters);
      const subscription = store.subscribeToAll({ from: 'start' });
      const started = performance.now();
      await subscription[Symbol.asyncIterator]().next();
      const elapsed = performance.now() - started;
      await subscription.stop();
      expect(elapsed).toBeGreaterThanOrEqual(95);
      expect(elapsed).toBeLessThan(600);
      expect(counters.delayedCalls).toBe(1);
    });
  });

  describe('hangs and latency', () => {
    it('given a hang, when appending, then the call waits hangMs, then fails with the transient error, and nothing is written', async () => {
      const store = withEventStoreFaults(events, plan({ hangRate: 0.5, hangMs: 60, random: scripted(FAIL) }), counters);
      const started = performance.now();
      const error = await failure(store.append('thing-1', [event(1)], 'no_stream'));
      expect(performance.now() - started).toBeGreaterThanOrEqual(55);
      expect(error).toBeInstanceOf(EventStoreUnavailableError);
      expect(error.message).toMatch(/no answer after 60 ms \(injected\)/);
      expect(await events.readStream('thing-1')).toEqual([]);
      expect(counters).toEqual({ errors: 0, hangs: 1, delayedCalls: 0 });
    });

    it('given a latency, when a call is made, then it is delayed by the drawn share of latencyMs and then succeeds', async () => {
      const store = withReadStoreFaults(reads, plan({ latencyMs: 100, random: () => 0.5 }), counters);
      const started = performance.now();
      expect(await store.count('things')).toBe(0);
      expect(performance.now() - started).toBeGreaterThanOrEqual(45);
      expect(counters.delayedCalls).toBe(1);
    });
  });

  describe('read store', () => {
    const doc = { op: 'upsert' as const, collection: 'things', doc: { id: 't-1', name: 'one' } };

    it('given an error after the call, when committing, then the caller gets ReadStoreUnavailableError but the write and the checkpoint are in', async () => {
      const store = withReadStoreFaults(reads, plan({ errorRate: 0.5, random: scripted(FAIL, AFTER) }));
      expect(await failure(store.commit([doc], { projection: 'things', position: 7 }))).toBeInstanceOf(
        ReadStoreUnavailableError,
      );
      expect(await reads.get('things', 't-1')).toMatchObject({ name: 'one' });
      expect(await reads.getCheckpoint('things')).toBe(7);
    });

    it('given an error before the call, when committing, then nothing is written', async () => {
      const store = withReadStoreFaults(reads, plan({ errorRate: 0.5, random: scripted(FAIL, BEFORE) }));
      expect(await failure(store.commit([doc], { projection: 'things', position: 7 }))).toBeInstanceOf(
        ReadStoreUnavailableError,
      );
      expect(await reads.get('things', 't-1')).toBeNull();
      expect(await reads.getCheckpoint('things')).toBeNull();
    });

    it('given an error rate of 1, when collections are defined, then defineCollections is never faulted', async () => {
      const store = withReadStoreFaults(reads, plan({ errorRate: 1, random: scripted() }));
      await expect(store.defineCollections([{ name: 'others' }])).resolves.toBeUndefined();
    });

    it('given an error after the call, when a counter is incremented or a document taken, then the caller gets ReadStoreUnavailableError but the count and the removal happened', async () => {
      const store = withReadStoreFaults(reads, plan({ errorRate: 0.5, random: scripted(FAIL, AFTER, FAIL, AFTER) }));
      await reads.commit([doc]);
      expect(
        await failure(store.incrementCounter('things', 'c-1', { by: 1, now: 0, expiresAt: 60_000 })),
      ).toBeInstanceOf(ReadStoreUnavailableError);
      expect(await reads.get('things', 'c-1')).toMatchObject({ count: 1 });
      expect(await failure(store.take('things', 't-1'))).toBeInstanceOf(ReadStoreUnavailableError);
      expect(await reads.get('things', 't-1')).toBeNull();
    });

    it('given an error before the call, when a counter is incremented or a document taken, then nothing changed; without a fault they pass through', async () => {
      const store = withReadStoreFaults(
        reads,
        plan({ errorRate: 0.5, random: scripted(FAIL, BEFORE, FAIL, BEFORE, PASS, PASS) }),
      );
      await reads.commit([doc]);
      expect(
        await failure(store.incrementCounter('things', 'c-1', { by: 1, now: 0, expiresAt: 60_000 })),
      ).toBeInstanceOf(ReadStoreUnavailableError);
      expect(await reads.get('things', 'c-1')).toBeNull();
      expect(await failure(store.take('things', 't-1'))).toBeInstanceOf(ReadStoreUnavailableError);
      expect(await store.incrementCounter('things', 'c-1', { by: 2, now: 0, expiresAt: 60_000 })).toEqual({
        id: 'c-1',
        count: 2,
        expiresAt: 60_000,
      });
      expect(await store.take('things', 't-1')).toEqual(doc.doc);
    });
  });

  describe('ledger', () => {
    const transfer = {
      operationID: 'op_1',
      legs: [{ from: ISSUANCE_ADDRESS, to: 'distributor:d-1', amount: '10.00' }],
    };

    it('given an error after the call, when submitting, then the caller gets LedgerUnavailableError but the transaction was executed and can be found by operation id', async () => {
      const chain = withLedgerFaults(ledger, plan({ errorRate: 0.5, random: scripted(FAIL, AFTER, PASS) }), counters);
      expect(await failure(chain.submit(transfer))).toBeInstanceOf(LedgerUnavailableError);
      expect(await chain.findByOperationID('op_1')).toMatchObject({ operationID: 'op_1' });
      expect(await ledger.balance('distributor:d-1')).toBe('10');
    });

    it('given an error before the call, when submitting, then nothing was executed', async () => {
      const chain = withLedgerFaults(ledger, plan({ errorRate: 0.5, random: scripted(FAIL, BEFORE) }));
      expect(await failure(chain.submit(transfer))).toBeInstanceOf(LedgerUnavailableError);
      expect(await ledger.findByOperationID('op_1')).toBeNull();
    });

    it('given an error after the call, when voiding, then the caller gets LedgerUnavailableError but the void committed: the fate says voided and a submit is refused', async () => {
      const chain = withLedgerFaults(ledger, plan({ errorRate: 0.5, random: scripted(FAIL, AFTER, PASS) }));
      expect(await failure(chain.void('op_1'))).toBeInstanceOf(LedgerUnavailableError);
      expect(await chain.fateOf('op_1')).toMatchObject({ kind: 'voided', operationID: 'op_1' });
      expect(await failure(ledger.submit(transfer))).toBeInstanceOf(LedgerVoidedError);
    });

    it('given an error before the call, when voiding or asking the fate, then nothing was voided', async () => {
      const chain = withLedgerFaults(ledger, plan({ errorRate: 0.5, random: scripted(FAIL, BEFORE, FAIL) }));
      expect(await failure(chain.void('op_1'))).toBeInstanceOf(LedgerUnavailableError);
      expect(await failure(chain.fateOf('op_1'))).toBeInstanceOf(LedgerUnavailableError);
      expect(await ledger.fateOf('op_1')).toEqual({ kind: 'none' });
    });
  });

  describe('configuration and wiring', () => {
    it('given no FAULT_ variables, when loaded, then no plan is active and hangs would last 30 s', () => {
      const plans = faultPlansFromConfig(loadConfig({}));
      expect(activeFaultPlans(plans)).toEqual({});
      expect(plans.eventStore).toEqual({ errorRate: 0, latencyMs: 0, hangRate: 0, hangMs: 30_000 });
    });

    it('given FAULT_ variables, when loaded, then each store gets its own plan', () => {
      const plans = faultPlansFromConfig(
        loadConfig({
          FAULT_EVENT_STORE_ERROR_RATE: '0.05',
          FAULT_READ_STORE_LATENCY_MS: '20',
          FAULT_LEDGER_HANG_RATE: '0.01',
          FAULT_HANG_MS: '500',
        }),
      );
      expect(plans).toEqual({
        eventStore: { errorRate: 0.05, latencyMs: 0, hangRate: 0, hangMs: 500 },
        readStore: { errorRate: 0, latencyMs: 20, hangRate: 0, hangMs: 500 },
        ledger: { errorRate: 0, latencyMs: 0, hangRate: 0.01, hangMs: 500 },
      });
    });

    it('given out-of-range values, when loaded, then the configuration error names the variable', () => {
      expect(() => loadConfig({ FAULT_LEDGER_ERROR_RATE: '1.5' })).toThrow(ConfigError);
      expect(() => loadConfig({ FAULT_LEDGER_ERROR_RATE: '1.5' })).toThrow(/FAULT_LEDGER_ERROR_RATE/);
      expect(() => loadConfig({ FAULT_EVENT_STORE_LATENCY_MS: '-1' })).toThrow(/FAULT_EVENT_STORE_LATENCY_MS/);
      expect(() => loadConfig({ FAULT_HANG_MS: '0' })).toThrow(/FAULT_HANG_MS/);
    });

    it('given the consumer-health and sweep keys, then they have their defaults and bounds', () => {
      expect(loadConfig({})).toMatchObject({ CONSUMER_UNHEALTHY_AFTER_MS: 60_000, EXECUTOR_SWEEP_INTERVAL_MS: 30_000 });
      expect(() => loadConfig({ CONSUMER_UNHEALTHY_AFTER_MS: '999' })).toThrow(/CONSUMER_UNHEALTHY_AFTER_MS/);
      expect(() => loadConfig({ EXECUTOR_SWEEP_INTERVAL_MS: '99' })).toThrow(/EXECUTOR_SWEEP_INTERVAL_MS/);
      expect(() => loadConfig({ EXECUTOR_SWEEP_INTERVAL_MS: '3600001' })).toThrow(/EXECUTOR_SWEEP_INTERVAL_MS/);
    });

    it('given active plans, when the decorators are made, then one warning names the active stores only', () => {
      const warnings: unknown[][] = [];
      const logger = { warn: (...args: unknown[]) => void warnings.push(args) };
      faultDecorators(
        { eventStore: plan({ errorRate: 0.1 }), readStore: NO_FAULTS, ledger: plan({ latencyMs: 5 }) },
        logger,
      );
      faultDecorators({ eventStore: NO_FAULTS, readStore: NO_FAULTS, ledger: NO_FAULTS }, logger);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]![0]).toEqual({
        faults: { eventStore: plan({ errorRate: 0.1 }), ledger: plan({ latencyMs: 5 }) },
      });
      expect(warnings[0]![1]).toMatch(/FAULT INJECTION ACTIVE on eventStore, ledger/);
    });

    it('given fault decorators, when openStores opens the event store, then the faults are inside the hash chain: an "after" failure leaves a hashed event', async () => {
      const wiredDir = tempDir('faults-wired-');
      const stores = await openStores(
        embedded(wiredDir.path),
        faultDecorators({
          eventStore: plan({ errorRate: 0.5, random: scripted(FAIL, AFTER, PASS) }),
          readStore: NO_FAULTS,
          ledger: NO_FAULTS,
        }),
      );
      try {
        expect(await failure(stores.eventStore.append('thing-1', [event(1)], 'no_stream'))).toBeInstanceOf(
          EventStoreUnavailableError,
        );
        const [stored] = await stores.eventStore.readStream('thing-1');
        expect(stored?.metadata.hash).toMatch(/^[0-9a-f]{64}$/);
      } finally {
        await stores.close();
        wiredDir.cleanup();
      }
    });

    it('then the README documents every configuration key', () => {
      const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
      expect(configDocs.map((doc) => doc.name).filter((name) => !readme.includes(`\`${name}\``))).toEqual([]);
    });
  });
});
