/**
 * The API-key directory follows the event store through a supervised consumer: when its subscription or its
 * reads fail, it resubscribes from its own position, so a revocation appended meanwhile, by this process or
 * another, is never missed and takes effect within seconds.
 *
 * Faults are injected, never mocked: the real embedded stores sit under a small test decorator (below) that
 * drops the live subscriptions and fails reads on demand, the way a store connection fails; the end-to-end
 * variant uses the FAULT_* configuration of src/faults with its source of randomness under the test's control.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { embedded, openStores, type Stores } from '../../src/adapters/open-stores.ts';
import {
  addUser,
  approveApiKey,
  decideOnApiKey,
  findUserByEmail,
  onboardParty,
  requestApiKey,
  type BackOfficeDeps,
  type CredentialDeps,
} from '../../src/commands/back-office.ts';
import { credentialsOn } from '../support/credentials.ts';
import {
  EventStoreUnavailableError,
  type EventStore,
  type RecordedEvent,
  type SubscribeOptions,
  type Subscription,
} from '../../src/ports/event-store.ts';
import { API_KEY_FILTER, ApiKeyDirectory, followApiKeys } from '../../src/projections/api-key-directory.ts';
import { untilHead } from '../../src/projections/directory-reads.ts';
import type { ConsumerLogger, ConsumerStatus, Follower, SupervisedConsumer } from '../../src/shared/follower.ts';
import {
  call,
  startTestSystem,
  waitFor,
  WITHOUT_EXECUTOR,
  type TestParty,
  type TestSystem,
} from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';

// ---------------------------------------------------------------------------------------------------------------
// Test decorator over a real event store: the live subscriptions can be dropped and the reads failed on demand.

/** A subscription whose pending read can be made to fail, as when the connection under it drops. */
class DroppableSubscription implements Subscription, AsyncIterableIterator<RecordedEvent> {
  private readonly inner: Subscription;
  private readonly onEnd: () => void;
  private readonly iterator: AsyncIterator<RecordedEvent>;
  private failPending: ((error: Error) => void) | undefined;
  /** The failure the next read gets, when the subscription was dropped between reads. */
  private failure: Error | undefined;
  private dropped = false;

  constructor(inner: Subscription, onEnd: () => void) {
    this.inner = inner;
    this.onEnd = onEnd;
    this.iterator = inner[Symbol.asyncIterator]();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<RecordedEvent>> {
    const failure = this.failure;
    this.failure = undefined;
    if (failure) return Promise.reject(failure);
    if (this.dropped) return Promise.resolve({ done: true, value: undefined });
    const failed = new Promise<never>((_, reject) => (this.failPending = reject));
    return Promise.race([this.iterator.next(), failed]);
  }

  async return(): Promise<IteratorResult<RecordedEvent>> {
    await this.stop();
    return { done: true, value: undefined };
  }

  onCaughtUp(listener: () => void): void {
    this.inner.onCaughtUp?.(() => {
      if (!this.dropped) listener();
    });
  }

  async stop(): Promise<void> {
    this.dropped = true;
    this.onEnd();
    await this.inner.stop();
  }

  /** The read in progress (or the next one) fails with `error`; the subscription is over. */
  drop(error: Error): void {
    const fail = this.failPending;
    this.failPending = undefined;
    if (fail) fail(error);
    else this.failure = error;
    void this.stop();
  }
}

function withDroppableSubscriptions(inner: EventStore) {
  const live = new Set<DroppableSubscription>();
  /** Where each subscription started, in order. */
  const subscriptions: Array<SubscribeOptions['from']> = [];
  let readsFail = false;
  const unavailable = (call: string) => new EventStoreUnavailableError(`${call}: connection refused (test)`);
  const read = <T>(name: string, run: () => Promise<T>): Promise<T> =>
    readsFail ? Promise.reject(unavailable(name)) : run();
  const store: EventStore = {
    append: (...args) => inner.append(...args),
    appendMulti: (...args) => inner.appendMulti(...args),
    readStream: (...args) => read('readStream', () => inner.readStream(...args)),
    readAll: (...args) => read('readAll', () => inner.readAll(...args)),
    headPosition: () => read('headPosition', () => inner.headPosition()),
    subscribeToAll(options) {
      subscriptions.push(options.from);
      const subscription: DroppableSubscription = new DroppableSubscription(inner.subscribeToAll(options), () =>
        live.delete(subscription),
      );
      live.add(subscription);
      if (readsFail) subscription.drop(unavailable('subscribeToAll'));
      return subscription;
    },
    close: () => inner.close(),
  };
  return {
    store,
    subscriptions,
    live: () => live.size,
    /** Every live subscription fails now, as when the store's connection drops. */
    dropSubscriptions(error: Error = new EventStoreUnavailableError('subscription dropped (test)')): void {
      for (const subscription of [...live]) subscription.drop(error);
    },
    /** Reads and subscriptions fail until `restore()`: the store is unreachable from this process. */
    fail(): void {
      readsFail = true;
      this.dropSubscriptions(unavailable('subscription'));
    },
    restore(): void {
      readsFail = false;
    },
  };
}

/** A logger that keeps each call with the consumer's status at that moment (the logger is called as the state changes). */
function recordingLogger(consumer: () => SupervisedConsumer | undefined) {
  const entries: Array<{
    level: 'info' | 'warn';
    message: string;
    object: Record<string, unknown>;
    status: ConsumerStatus | undefined;
  }> = [];
  const logger: ConsumerLogger = {
    info: (object, message) =>
      entries.push({ level: 'info', message, object: object as Record<string, unknown>, status: consumer()?.status() }),
    warn: (object, message) =>
      entries.push({ level: 'warn', message, object: object as Record<string, unknown>, status: consumer()?.status() }),
  };
  return { logger, entries, messages: () => entries.map((entry) => `${entry.level}: ${entry.message}`) };
}

/** A party with a maker and a checker, and one approved key, made through the back-office commands. */
async function partyWithKey(deps: CredentialDeps) {
  const operator = { actor: 'operator:test', correlationId: randomUUID() };
  const shortCode = String(100_000 + Math.floor(Math.random() * 800_000));
  const { partyID } = await onboardParty(
    deps,
    { partyType: 'distributor', name: `distributor ${shortCode}`, shortCode },
    operator,
  );
  const party = { type: 'distributor' as const, id: partyID };
  const makerEmail = `maker-${shortCode}@test.example`;
  const checkerEmail = `checker-${shortCode}@test.example`;
  await addUser(deps, { party, email: makerEmail, password: 'maker password 1', roles: ['maker'] }, operator);
  await addUser(deps, { party, email: checkerEmail, password: 'checker password 1', roles: ['checker'] }, operator);
  const { keyID } = await requestApiKey(
    deps,
    await findUserByEmail(deps, makerEmail),
    { label: 'till 1', permissions: 'read-balance' },
    randomUUID(),
  );
  await approveApiKey(deps, await findUserByEmail(deps, checkerEmail), keyID, randomUUID());
  return { keyID, makerEmail, checkerEmail };
}

/** The maker asks for the revocation and the checker approves it: the key is revoked in the store. */
async function revoke(
  deps: BackOfficeDeps,
  key: { keyID: string; makerEmail: string; checkerEmail: string },
): Promise<void> {
  const maker = await findUserByEmail(deps, key.makerEmail);
  const checker = await findUserByEmail(deps, key.checkerEmail);
  await decideOnApiKey(
    deps,
    maker,
    key.keyID,
    { type: 'RequestApiKeyRevocation', reason: 'device lost' },
    randomUUID(),
  );
  await decideOnApiKey(deps, checker, key.keyID, { type: 'ApproveApiKeyRevocation' }, randomUUID());
}

// ---------------------------------------------------------------------------------------------------------------
describe('the API-key directory following the embedded store through failures', () => {
  let dir: ReturnType<typeof tempDir>;
  let stores: Stores;
  let faults: ReturnType<typeof withDroppableSubscriptions>;
  let deps: CredentialDeps;
  let following: Follower | undefined;
  const opened: Stores[] = [];

  beforeEach(async () => {
    dir = tempDir('api-key-follow-');
    stores = await openStores(embedded(dir.path), {
      eventStore: (store) => {
        faults = withDroppableSubscriptions(store);
        return faults.store;
      },
    });
    deps = {
      store: stores.eventStore,
      clock: () => new Date(),
      assetScale: 2,
      credentials: await credentialsOn(stores.readStore),
    };
  });
  afterEach(async () => {
    await following?.stop();
    following = undefined;
    for (const other of opened.splice(0)) await other.close();
    await stores.close();
    dir.cleanup();
  });

  /** A directory following the store, read up to its head, as buildWalletOps makes it. */
  async function follow(logger: ConsumerLogger): Promise<ApiKeyDirectory> {
    const directory = new ApiKeyDirectory();
    following = followApiKeys(stores.eventStore, directory, logger, { baseDelayMs: 50, maxDelayMs: 400 });
    expect(await untilHead(following, stores.eventStore, API_KEY_FILTER, 5000)).toBe(true);
    await waitFor(() => faults.live() === 1);
    return directory;
  }

  it('given a directory following the store, when its subscription read fails once and a revocation is then appended, then it shows the key revoked within 2 s, resubscribed from its own position', async () => {
    const key = await partyWithKey(deps);
    const log = recordingLogger(() => following?.consumer);
    const directory = await follow(log.logger);
    expect(directory.get(key.keyID)?.status).toBe('active');
    const positionBefore = directory.position;
    expect(faults.subscriptions).toEqual([0]); // the first session reads the history from the start

    faults.dropSubscriptions();
    await waitFor(() => log.entries.length >= 1);
    // The failure, logged once with its cause; the status at that moment says the consumer is failing.
    expect(log.messages()).toEqual(['warn: consumer failed; resubscribing from its checkpoint']);
    expect(log.entries[0]!.object).toMatchObject({
      consumer: 'api-key-directory',
      failures: 1,
      err: expect.any(EventStoreUnavailableError),
    });
    expect(log.entries[0]!.status).toMatchObject({
      name: 'api-key-directory',
      state: 'retrying',
      consecutiveFailures: 1,
      failingSince: expect.any(String),
      lastError: 'subscription dropped (test)',
    });

    await revoke(deps, key);
    const revokedAt = performance.now();
    await waitFor(() => directory.get(key.keyID)?.status === 'revoked', 2000);
    expect(performance.now() - revokedAt).toBeLessThan(2000);

    // Recovered, said once; the new subscription started from the directory's own position, not from the head.
    await waitFor(() => following!.consumer.status().state === 'running');
    expect(log.messages()).toEqual([
      'warn: consumer failed; resubscribing from its checkpoint',
      'info: consumer recovered',
    ]);
    expect(log.entries[1]!.object).toMatchObject({ consumer: 'api-key-directory', failures: 1 });
    expect(following!.consumer.status()).toMatchObject({
      state: 'running',
      failingSince: null,
      consecutiveFailures: 0,
      totalFailures: 1,
      lastError: 'subscription dropped (test)',
    });
    expect(following!.consumer.downForMs()).toBe(0);
    expect(faults.subscriptions[1]).toBeGreaterThanOrEqual(positionBefore);
    expect(faults.subscriptions[1]).toBeLessThanOrEqual(directory.position);
  });

  it('given the store unreachable from this process for a while, when another process revokes a key meanwhile, then the directory keeps retrying and shows the key revoked within 2 s of the store coming back', async () => {
    const key = await partyWithKey(deps);
    const log = recordingLogger(() => following?.consumer);
    const directory = await follow(log.logger);

    faults.fail();
    // Another process (as the CLI is: its own connection to the same files) revokes the key meanwhile.
    const other = await openStores(embedded(dir.path));
    opened.push(other);
    await revoke({ store: other.eventStore, clock: () => new Date(), assetScale: 2 }, key);
    // Sessions keep failing (catch-up reads refused), each failure counted in one streak.
    await waitFor(() => following!.consumer.status().consecutiveFailures >= 3);
    const down = following!.consumer.status();
    // Each new session's subscription is refused.
    expect(down).toMatchObject({
      state: 'retrying',
      failingSince: log.entries[0]!.status!.failingSince,
      lastError: 'subscribeToAll: connection refused (test)',
    });
    expect(directory.get(key.keyID)?.status).toBe('active'); // nothing could be read: it still believes the key active
    expect(log.entries.every((entry) => entry.level === 'warn')).toBe(true);

    faults.restore();
    const restoredAt = performance.now();
    await waitFor(() => directory.get(key.keyID)?.status === 'revoked', 2000);
    expect(performance.now() - restoredAt).toBeLessThan(2000);
    await waitFor(() => following!.consumer.status().state === 'running');
    expect(log.entries.filter((entry) => entry.level === 'info').map((entry) => entry.message)).toEqual([
      'consumer recovered',
    ]);
    expect(following!.consumer.status()).toMatchObject({
      failingSince: null,
      consecutiveFailures: 0,
      totalFailures: log.entries.length - 1,
    });
  });
});

// ---------------------------------------------------------------------------------------------------------------
/**
 * Over HTTP, on the system buildWalletOps makes. buildWalletOps has no seam for a store decorator of the test's
 * own, so the fault is the configured one (FAULT_EVENT_STORE_ERROR_RATE) with its randomness under control:
 * src/faults draws Math.random when its plan has no `random`, so while this describe runs Math.random answers
 * in [0.5, 1) (never below the rate 0.5: no fault) and 0 during an outage (every event-store call of this
 * process fails). Other users of Math.random (backoff jitter) only see their draws shifted.
 */
describe('authentication while the directory of the running server recovers (end to end)', () => {
  const realRandom = Math.random;
  let outage = false;
  let sys: TestSystem;
  let party: TestParty;
  let other: Stores;

  beforeAll(async () => {
    Math.random = () => (outage ? 0 : 0.5 + realRandom() * 0.5);
    sys = await startTestSystem({ FAULT_EVENT_STORE_ERROR_RATE: '0.5' }, undefined, WITHOUT_EXECUTOR);
    party = await sys.party('distributor');
    // Another process's connection to the same data directory, as the CLI or the console of another instance has.
    other = await openStores(embedded(sys.config.DATA_DIR));
  });
  afterAll(async () => {
    outage = false;
    await other?.close();
    await sys?.close();
    Math.random = realRandom;
  });

  it("given a key that works, when the directory's subscription fails and another process approves the key's revocation, then a request with the key gets 401 within 2 s", async () => {
    const balance = `/api/v1/distributors/${party.ref.id}/balance`;
    const { keyID, apiKey } = await party.key({ permissions: 'read-balance' });
    expect((await call(sys.baseUrl, 'GET', balance, { apiKey })).status).toBe(200);
    const directory = sys.system.consumers.find(({ consumer }) => consumer.name === 'api-key-directory')!.consumer;
    const failuresBefore = directory.status().totalFailures;

    const otherDeps: BackOfficeDeps = {
      store: other.eventStore,
      clock: () => new Date(),
      assetScale: sys.config.ASSET_SCALE,
    };
    const maker = await findUserByEmail(otherDeps, party.makerEmail);
    const checker = await findUserByEmail(otherDeps, party.checkerEmail);
    outage = true;
    // The revocation request reaches the directory's subscription; its next read fails (injected), and so does every
    // read of the sessions after it while the outage lasts.
    await decideOnApiKey(
      otherDeps,
      maker,
      keyID,
      { type: 'RequestApiKeyRevocation', reason: 'device lost' },
      randomUUID(),
    );
    await waitFor(() => directory.status().totalFailures > failuresBefore);
    expect(directory.status()).toMatchObject({ state: 'retrying', lastError: expect.stringContaining('(injected)') });
    await decideOnApiKey(otherDeps, checker, keyID, { type: 'ApproveApiKeyRevocation' }, randomUUID());
    outage = false;

    const approvedAt = performance.now();
    let status = 0;
    while (performance.now() - approvedAt < 5000) {
      status = (await call(sys.baseUrl, 'GET', balance, { apiKey })).status;
      if (status !== 200) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const elapsed = performance.now() - approvedAt;
    expect(status).toBe(401);
    expect(elapsed).toBeLessThan(2000);
    await waitFor(() => directory.status().state === 'running');
    expect(directory.status()).toMatchObject({ failingSince: null, consecutiveFailures: 0 });
  });
});
