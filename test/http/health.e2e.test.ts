/**
 * GET /health (liveness) and GET /ready (readiness and each consumer's report) of the whole system as
 * buildWalletOps makes it, over HTTP.
 *
 * The fault: buildWalletOps has no seam for a store decorator of the test's own, so this uses the configured
 * fault injection (FAULT_EVENT_STORE_ERROR_RATE, src/faults) with its randomness under the test's control:
 * src/faults draws Math.random when its plan has no `random`, so while this file runs Math.random answers in
 * [0.5, 1) (never below the rate 0.5: no fault, startup reads succeed) and 0 during an outage (every event-store
 * call of this process fails, subscriptions included). Other users of Math.random (backoff jitter) only see
 * their draws shifted. The events that make the consumers read during the outage are appended by another
 * connection to the same files, as the CLI or another instance would append them.
 * (The smallest seam that would let a test pass its own decorator: an optional `decorators: StoreDecorators`
 * argument of buildWalletOps, applied with the FAULT_* ones when the stores are opened.)
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embedded, openStores, type Stores } from '../../src/adapters/open-stores.ts';
import { findUserByEmail, requestApiKey, type BackOfficeDeps } from '../../src/commands/back-office.ts';
import { allProjections } from '../../src/projections/index.ts';
import type { SupervisedConsumer } from '../../src/shared/supervised-consumer.ts';
import { call, startTestSystem, waitFor, type TestParty, type TestSystem } from '../support/system.ts';

const GRACE_MS = 1000; // the smallest CONSUMER_UNHEALTHY_AFTER_MS the configuration accepts

describe('GET /health and GET /ready', () => {
  const realRandom = Math.random;
  let outage = false;
  let sys: TestSystem;
  let party: TestParty;
  let other: Stores;
  let otherDeps: BackOfficeDeps;
  let directory: SupervisedConsumer;

  beforeAll(async () => {
    Math.random = () => (outage ? 0 : 0.5 + realRandom() * 0.5);
    sys = await startTestSystem({ CONSUMER_UNHEALTHY_AFTER_MS: String(GRACE_MS), FAULT_EVENT_STORE_ERROR_RATE: '0.5' });
    party = await sys.party('distributor');
    other = await openStores(embedded(sys.config.DATA_DIR));
    otherDeps = { store: other.eventStore, clock: () => new Date(), assetScale: sys.config.ASSET_SCALE };
    directory = sys.system.consumers.find(({ consumer }) => consumer.name === 'api-key-directory')!.consumer;
  });
  afterAll(async () => {
    outage = false;
    await other?.close();
    await sys?.close();
    Math.random = realRandom;
  });

  const health = () => call(sys.baseUrl, 'GET', '/health');
  const ready = () => call(sys.baseUrl, 'GET', '/ready');

  it('when every consumer runs, then GET /health answers 200 with nothing failing', async () => {
    const response = await health();
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json\b/);
    expect(response.body).toEqual({ status: 'ok', time: expect.any(String), failing: [] });
  });

  it('when the consumers have caught up, then GET /ready answers 200 and reports every consumer of the process by name, with its state and lag, as JSON', async () => {
    const names = sys.system.consumers.map(({ consumer }) => consumer.name);
    // Every part runs in this process: the directory, each projection, the read API's balances view, the sealer and the executor (at least).
    expect(names).toEqual(
      expect.arrayContaining([
        'api-key-directory',
        'balances-view',
        ...allProjections(sys.config.ASSET_SCALE).map((p) => `projection:${p.name}`),
        'sealer',
        'executor',
      ]),
    );
    // Each consumer is running once it has applied an event or its session has stayed up for a while.
    await waitFor(() => sys.system.consumers.every(({ consumer }) => consumer.status().state === 'running'), 10_000);
    let response = await ready();
    await waitFor(async () => {
      response = await ready();
      return response.status === 200 && response.body.consumers.every((c: { lagEvents: number }) => c.lagEvents === 0);
    }, 10_000);

    expect(response.headers.get('content-type')).toMatch(/^application\/json\b/);
    expect(response.body.status).toBe('ready');
    expect(response.body.consumers.map((c: { name: string }) => c.name)).toEqual(names);
    for (const report of response.body.consumers) {
      expect(report).toEqual({
        name: expect.any(String),
        state: 'running',
        failingSince: null,
        consecutiveFailures: 0,
        totalFailures: expect.any(Number),
        lastError: report.totalFailures === 0 ? null : expect.any(String),
        lastErrorAt: report.totalFailures === 0 ? null : expect.any(String),
        position: report.position === null ? null : expect.any(Number),
        lagEvents: 0,
        lagSeconds: 0,
      });
    }
    // The sealer reads every event: it has applied the party's history.
    expect(response.body.consumers.find((c: { name: string }) => c.name === 'sealer').position).toBeGreaterThan(0);
  });

  it('when a consumer cannot run for longer than CONSUMER_UNHEALTHY_AFTER_MS, then GET /health answers 503 naming it and its last error, and once the fault stops it answers 200 again by itself', async () => {
    const failuresBefore = directory.status().totalFailures;
    const maker = await findUserByEmail(otherDeps, party.makerEmail);

    outage = true;
    // Another process requests a key: the directory's subscription delivers it, and its next read fails (injected).
    const { keyID } = await requestApiKey(
      otherDeps,
      maker,
      { label: 'during the outage', permissions: 'read-balance' },
      randomUUID(),
    );
    await waitFor(() => directory.status().totalFailures > failuresBefore);

    // Within the grace, the process is still alive. (While the outage lasts no streak ends and downForMs only grows:
    // if every consumer is within the grace after the answer, each was when the server measured it.)
    const early = await health();
    if (Math.max(...sys.system.consumers.map(({ consumer }) => consumer.downForMs())) <= GRACE_MS)
      expect(early.status).toBe(200);

    // Past the grace: 503, naming the consumer, how long it has been down and why. (Other consumers that read the
    // same event, such as the sealer, fail with it and may be named a moment before it.)
    let failing: Awaited<ReturnType<typeof health>> | undefined;
    await waitFor(async () => {
      const response = await health();
      if (response.status === 200) return false;
      expect(response.status).toBe(503);
      if (response.body.failing.some((f: { consumer: string }) => f.consumer === 'api-key-directory'))
        failing = response;
      return failing !== undefined;
    }, 10_000);
    expect(failing!.body).toMatchObject({ status: 'failing', time: expect.any(String) });
    const entry = failing!.body.failing.find((f: { consumer: string }) => f.consumer === 'api-key-directory');
    expect(entry).toEqual({
      consumer: 'api-key-directory',
      downForMs: expect.any(Number),
      lastError: expect.stringMatching(/\(injected\)$/),
    });
    expect(entry.downForMs).toBeGreaterThan(GRACE_MS);
    for (const f of failing!.body.failing) expect(f.downForMs).toBeGreaterThan(GRACE_MS);

    // /ready still answers while the event store cannot be read: not ready, the directory retrying, its lag unknown.
    const notReady = await ready();
    expect(notReady.status).toBe(503);
    expect(notReady.body.status).toBe('not ready');
    expect(notReady.body.consumers.find((c: { name: string }) => c.name === 'api-key-directory')).toMatchObject({
      state: 'retrying',
      failingSince: expect.any(String),
      lastError: expect.stringMatching(/\(injected\)$/),
      lagEvents: null,
      lagSeconds: null,
    });

    // The fault stops: the same process recovers by itself.
    outage = false;
    let recovered: Awaited<ReturnType<typeof health>> | undefined;
    await waitFor(async () => {
      const response = await health();
      if (response.status === 200) recovered = response;
      return recovered !== undefined;
    }, 15_000);
    expect(recovered!.body).toEqual({ status: 'ok', time: expect.any(String), failing: [] });
    expect(directory.status()).toMatchObject({ state: 'running', failingSince: null, consecutiveFailures: 0 });
    expect(directory.status().totalFailures).toBeGreaterThan(failuresBefore);
    // Nothing the directory missed while it was down is lost: the key requested then is known.
    await waitFor(() => sys.system.directory.get(keyID)?.status === 'pending');
    await waitFor(async () => (await ready()).status === 200, 15_000);
  });
});
