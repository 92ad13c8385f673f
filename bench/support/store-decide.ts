/**
 * A create-operation decision on a payer whose wallet stream holds a million events, beside one on a wallet
 * of ten events, for bench:store: the real createOperation handler on the real embedded stores (hash chain
 * included, snapshots written as the server's store writes them), every event it reads counted under the
 * hash chain. Warm: the process decided on the wallet before (its state cache holds the folded state); cold:
 * the stores reopened and a fresh cache, as after a restart (the operating system's file cache stays warm).
 * Then the same on a key with a max daily volume that made 20,000 creates today, beside a fresh key.
 */
import { randomUUID } from 'node:crypto';
import { openStores, type StoreSelection, type Stores } from '../../src/adapters/open-stores.ts';
import { freshPostgresDatabase } from '../../test/support/postgres-server.ts';
import {
  addUser,
  approveApiKey,
  findUserByEmail,
  onboardParty,
  registerIndividual,
  requestApiKey,
  type CredentialDeps,
} from '../../src/commands/back-office.ts';
import { credentialsOn } from '../../test/support/credentials.ts';
import { createOperation, type OperationDeps } from '../../src/commands/operation-handlers.ts';
import { PartyLookup } from '../../src/commands/party-lookup.ts';
import { InFlightStates, StateCache } from '../../src/commands/pipeline.ts';
import { withSnapshots } from '../../src/commands/snapshots.ts';
import { loadConfig } from '../../src/config.ts';
import type { WalletRef } from '../../src/domain/events.ts';
import { streams } from '../../src/domain/streams.ts';
import type { EventStore, NewEvent } from '../../src/ports/event-store.ts';
import {
  API_KEY_FILTER,
  ApiKeyDirectory,
  followApiKeys,
  type ApiKeyRecord,
} from '../../src/projections/api-key-directory.ts';
import { followToHead } from '../../src/projections/directory-reads.ts';
import { KeyedMutex } from '../../src/shared/keyed-mutex.ts';
import { createdResponse } from '../../src/write-api/routes.ts';
import { tempDir } from '../../test/support/temp-dir.ts';

/** The key directory's follower, run to the head once: a failed read fails the bench, nothing to log. */
const quiet = { info: () => {}, warn: () => {} };

const WARM_RUNS = 21;
const COLD_RUNS = 7;
const APPEND_BATCH = 20_000;
const PHONE = '+2348100000001';

export interface DecideSample {
  ms: number;
  /** Events returned by every read the decision made (party lookups, idempotency, wallet, the hash chain's base). */
  eventsRead: number;
  reads: number;
}

export interface DecideResult {
  walletEvents: number;
  shortWalletEvents: number;
  buildSeconds: number;
  warm: { long: DecideSample; short: DecideSample };
  cold: { long: DecideSample; short: DecideSample };
}

/** Counts what the store returns to readStream, under the hash chain (so its own reads count too). */
const counter = { reads: 0, events: 0 };
function counting(store: EventStore): EventStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'readStream') {
        return async (...args: Parameters<EventStore['readStream']>) => {
          const events = await target.readStream(...args);
          counter.reads += 1;
          counter.events += events.length;
          return events;
        };
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

const operator = () => ({ actor: 'operator:bench', correlationId: randomUUID() });

async function distributorWithKey(
  backOffice: CredentialDeps,
  shortCode: string,
  maxDailyVolume?: string,
): Promise<{ wallet: WalletRef; keyID: string }> {
  const { partyID } = await onboardParty(
    backOffice,
    { partyType: 'distributor', name: `Distributor ${shortCode}`, shortCode },
    operator(),
  );
  const ref = { type: 'distributor' as const, id: partyID };
  await addUser(
    backOffice,
    { party: ref, email: `maker-${shortCode}@bench.example`, password: 'maker password 1', roles: ['maker'] },
    operator(),
  );
  await addUser(
    backOffice,
    { party: ref, email: `checker-${shortCode}@bench.example`, password: 'checker password 1', roles: ['checker'] },
    operator(),
  );
  const { keyID } = await requestApiKey(
    backOffice,
    await findUserByEmail(backOffice, `maker-${shortCode}@bench.example`),
    { label: 'bench', permissions: 'perform-operations', ...(maxDailyVolume ? { maxDailyVolume } : {}) },
    randomUUID(),
  );
  await approveApiKey(
    backOffice,
    await findUserByEmail(backOffice, `checker-${shortCode}@bench.example`),
    keyID,
    randomUUID(),
  );
  return { wallet: { kind: 'distributor', id: partyID }, keyID };
}

/** A wallet's life: funded once, then holds and their debits (or releases), two events per operation. */
export async function fillWallet(store: EventStore, wallet: WalletRef, count: number): Promise<void> {
  const stream = streams.wallet(wallet);
  const metadata = { actor: 'system:bench' };
  await store.append(
    stream,
    [
      {
        type: 'WalletCredited',
        data: { wallet, operationID: `fund_${randomUUID()}`, amount: '1000000000000.00' },
        metadata,
      },
    ],
    'any',
  );
  for (let written = 1; written < count;) {
    const events: NewEvent[] = [];
    while (events.length < APPEND_BATCH && written + events.length < count) {
      const operationID = `op_${randomUUID().replaceAll('-', '')}`;
      events.push({ type: 'FundsHeld', data: { wallet, operationID, amount: '1.00' }, metadata });
      if (written + events.length < count) {
        events.push(
          (written + events.length) % 10 === 0
            ? { type: 'HoldReleased', data: { wallet, operationID, amount: '1.00', reason: 'rejected' }, metadata }
            : { type: 'WalletDebited', data: { wallet, operationID, amount: '1.00', heldAmount: '1.00' }, metadata },
        );
      }
    }
    await store.appendMulti([{ stream, events, expectedRevision: 'any' }]);
    written += events.length;
  }
}

/** The create path's dependencies as the server builds them, with a fresh state cache (a fresh process). */
function operationDeps(
  store: EventStore,
  feeSchedule: OperationDeps['feeSchedule'],
  clock: () => Date = () => new Date(),
): OperationDeps {
  return {
    store,
    cache: new StateCache(),
    lookup: new PartyLookup(store),
    clock,
    assetScale: 2,
    feeSchedule,
    volumeTimeZone: 'UTC',
    serialize: { mutex: new KeyedMutex(), inFlight: new InFlightStates() },
  };
}

/** One create (cash-in of 1.00 with an Idempotency-Key) by the real handler: its time and what it read. */
async function decide(deps: OperationDeps, key: ApiKeyRecord): Promise<DecideSample> {
  counter.reads = 0;
  counter.events = 0;
  const t0 = performance.now();
  const outcome = await createOperation(
    deps,
    key,
    { operationType: 'cash-in', amount: '1.00', phoneTo: PHONE, memo: null },
    { key: randomUUID(), requestHash: 'bench', responseFor: createdResponse },
    operator(),
  );
  const ms = performance.now() - t0;
  if (outcome.kind !== 'created') throw new Error(`the create was not accepted: ${JSON.stringify(outcome)}`);
  return { ms, eventsRead: counter.events, reads: counter.reads };
}

/**
 * Where a measurement keeps its stores: the embedded ones in its data directory, or a fresh database of a PostgreSQL
 * server (the URL of the server; the production pool size).
 */
export type DecideStores = { kind: 'embedded' } | { kind: 'postgres'; serverUrl: string };

/** A store opener for one measurement: its own data directory, and on PostgreSQL its own fresh database. */
async function storesFor(target: DecideStores, dataDir: string): Promise<() => Promise<Stores>> {
  if (target.kind === 'embedded') return () => openBenchStores({ dataDir });
  const POSTGRES_URL = await freshPostgresDatabase(target.serverUrl);
  return () =>
    openBenchStores({
      DATA_DIR: dataDir,
      EVENT_STORE: 'postgres',
      READ_STORE: 'postgres',
      POSTGRES_URL,
      POSTGRES_POOL_SIZE: 10,
      MONGODB_DATABASE: 'wallet_ops',
    });
}

/** The stores as the server opens them: the hash chain, and snapshots written around it (src/wallet-ops.ts). */
async function openBenchStores(selection: StoreSelection | { dataDir: string }): Promise<Stores> {
  const opened = await openStores(selection, { eventStore: counting });
  const eventStore = withSnapshots(opened.eventStore);
  return {
    eventStore,
    readStore: opened.readStore,
    async close() {
      await Promise.all([eventStore.close(), opened.readStore.close()]);
    },
  };
}

export async function measureDecide(
  walletEvents: number,
  log: (line: string) => void,
  target: DecideStores = { kind: 'embedded' },
): Promise<DecideResult> {
  const dir = tempDir('store-decide-');
  const open = await storesFor(target, dir.path);
  const config = loadConfig({ DATA_DIR: dir.path });
  let stores: Stores = await open();
  try {
    const backOffice: CredentialDeps = {
      store: stores.eventStore,
      clock: () => new Date(),
      assetScale: 2,
      credentials: await credentialsOn(stores.readStore),
    };
    const long = await distributorWithKey(backOffice, '7001');
    const short = await distributorWithKey(backOffice, '7002');
    await registerIndividual(backOffice, { phone: PHONE, name: 'Bench Customer' }, operator());
    const started = performance.now();
    await fillWallet(stores.eventStore, long.wallet, walletEvents);
    const buildSeconds = (performance.now() - started) / 1000;
    await fillWallet(stores.eventStore, short.wallet, 10);
    log(`decide: a wallet of ${walletEvents.toLocaleString('en-US')} events appended in ${buildSeconds.toFixed(0)} s`);
    const directory = new ApiKeyDirectory();
    await followToHead(followApiKeys(stores.eventStore, directory, quiet), stores.eventStore, API_KEY_FILTER);
    const keys = { long: directory.get(long.keyID)!, short: directory.get(short.keyID)! };

    const depsOf = (store: EventStore) => operationDeps(store, config.FEE_SCHEDULE);

    // Warm: one process, one cache, each wallet decided on once before; alternating.
    const warmDeps = depsOf(stores.eventStore);
    await decide(warmDeps, keys.long);
    await decide(warmDeps, keys.short);
    const warm = { long: [] as DecideSample[], short: [] as DecideSample[] };
    for (let run = 0; run < WARM_RUNS; run++) {
      warm.long.push(await decide(warmDeps, keys.long));
      warm.short.push(await decide(warmDeps, keys.short));
    }
    // Cold: as after a restart, the stores reopened (the hash chain's heads forgotten) and a fresh cache.
    const cold = { long: [] as DecideSample[], short: [] as DecideSample[] };
    for (let run = 0; run < COLD_RUNS; run++) {
      for (const which of ['long', 'short'] as const) {
        await stores.close();
        stores = await open();
        cold[which].push(await decide(depsOf(stores.eventStore), keys[which]));
      }
      log(
        `decide: cold run ${run + 1}: ${cold.long.at(-1)!.ms.toFixed(0)} ms (${cold.long.at(-1)!.eventsRead} events read) vs ${cold.short.at(-1)!.ms.toFixed(1)} ms`,
      );
    }
    return {
      walletEvents,
      shortWalletEvents: 10,
      buildSeconds,
      warm: { long: medianSample(warm.long), short: medianSample(warm.short) },
      cold: { long: medianSample(cold.long), short: medianSample(cold.short) },
    };
  } finally {
    await stores.close();
    dir.cleanup();
  }
}

/** The sample of median time (its reads with it). */
function medianSample(samples: DecideSample[]): DecideSample {
  return [...samples].sort((a, b) => a.ms - b.ms)[Math.floor(samples.length / 2)]!;
}

export interface VolumeDayResult {
  /** Creates the busy key made today before the restart. */
  creates: number;
  buildSeconds: number;
  /** Wall ms per create in a warm process, over the day's first and last 1,000 creates (or tenth), 16 in flight. */
  firstCreatesMs: number;
  lastCreatesMs: number;
  cold: { busy: DecideSample; fresh: DecideSample };
}

/** Creates in flight while the busy key's day is built: the group commit batches them, as under load. */
const DAY_IN_FLIGHT = 16;
/** Creates by the real handler at each end of the busy key's day (at most). */
const REAL_CREATES = 200;

/**
 * `count` more creates' worth of the two events a create on the busy key leaves in the streams the next create
 * reads: the newest VolumeReserved (its key's day) and FundsHeld (its payer's wallet), cloned with fresh operation
 * ids and appended in bulk through the hash chain and the snapshots, as the handler's appends would be.
 */
async function cloneCreates(store: EventStore, count: number): Promise<void> {
  if (count === 0) return;
  const head = await store.headPosition();
  const recent = await store.readAll({
    fromPosition: Math.max(0, head - 50),
    filter: { eventTypes: ['VolumeReserved', 'FundsHeld'] },
  });
  const templates = (['VolumeReserved', 'FundsHeld'] as const).map((type) =>
    [...recent].reverse().find((event) => event.type === type)!,
  );
  for (let written = 0; written < count;) {
    const size = Math.min(APPEND_BATCH / 2, count - written);
    const ids = Array.from({ length: size }, () => `op_${randomUUID().replaceAll('-', '')}`);
    await store.appendMulti(
      templates.map((template) => ({
        stream: template.stream,
        expectedRevision: 'any' as const,
        events: ids.map((operationID) => ({
          type: template.type,
          data: { ...(template.data as object), operationID },
          metadata: { ...template.metadata, correlationId: randomUUID() },
        })),
      })),
    );
    written += size;
  }
}

/**
 * The first create after a restart on a key with a max daily volume that made `creates` creates today (its
 * payer's wallet holding as many holds), beside a fresh key of another distributor, alternating; each cold run
 * reopens the stores with a fresh cache. The day is built by the real handler, timed per create at its start
 * and its end, so the in-memory cost per create is seen not to grow with the day.
 */
export async function measureVolumeDay(
  creates: number,
  log: (line: string) => void,
  target: DecideStores = { kind: 'embedded' },
): Promise<VolumeDayResult> {
  const dir = tempDir('store-volume-');
  const open = await storesFor(target, dir.path);
  const config = loadConfig({ DATA_DIR: dir.path });
  // One instant for the whole run: the key's volume day cannot roll over under the bench.
  const now = new Date();
  const clock = () => now;
  let stores: Stores = await open();
  try {
    const backOffice: CredentialDeps = {
      store: stores.eventStore,
      clock: () => new Date(),
      assetScale: 2,
      credentials: await credentialsOn(stores.readStore),
    };
    const busy = await distributorWithKey(backOffice, '7101', '1000000000000.00');
    const fresh = await distributorWithKey(backOffice, '7102', '1000000000000.00');
    await registerIndividual(backOffice, { phone: PHONE, name: 'Bench Customer' }, operator());
    await fillWallet(stores.eventStore, busy.wallet, 1);
    await fillWallet(stores.eventStore, fresh.wallet, 10);
    const directory = new ApiKeyDirectory();
    await followToHead(followApiKeys(stores.eventStore, directory, quiet), stores.eventStore, API_KEY_FILTER);
    const keys = { busy: directory.get(busy.keyID)!, fresh: directory.get(fresh.keyID)! };

    const deps = operationDeps(stores.eventStore, config.FEE_SCHEDULE, clock);
    // The day's first and last creates by the real handler, timed; the bulk of the day between them is the last
    // real create's volume reservation and hold, cloned and bulk-appended (the events the handler writes to the two
    // streams a create on this key reads), so that 20,000 creates take seconds on PostgreSQL too.
    const window = Math.max(1, Math.min(REAL_CREATES, Math.floor(creates / 10)));
    const started = performance.now();
    const timed = async (count: number): Promise<number> => {
      let next = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: DAY_IN_FLIGHT }, async () => {
          while (next < count) {
            next += 1;
            await decide(deps, keys.busy);
          }
        }),
      );
      return (performance.now() - t0) / count;
    };
    const firstCreatesMs = await timed(window);
    const bulk = Math.max(0, creates - 2 * window);
    await cloneCreates(stores.eventStore, bulk);
    // One untimed create folds the cloned events into the warm cache (once), so the last window times creates only.
    if (bulk > 0) await decide(deps, keys.busy);
    const lastCreatesMs = await timed(creates - window - bulk - (bulk > 0 ? 1 : 0));
    const buildSeconds = (performance.now() - started) / 1000;
    log(
      `volume: ${creates.toLocaleString('en-US')} creates on one key (${(creates - bulk).toLocaleString('en-US')} by the handler) in ${buildSeconds.toFixed(0)} s (${firstCreatesMs.toFixed(2)} ms per create at the start of the day, ${lastCreatesMs.toFixed(2)} ms at its end)`,
    );

    const cold = { busy: [] as DecideSample[], fresh: [] as DecideSample[] };
    for (let run = 0; run < COLD_RUNS; run++) {
      for (const which of ['busy', 'fresh'] as const) {
        await stores.close();
        stores = await open();
        cold[which].push(await decide(operationDeps(stores.eventStore, config.FEE_SCHEDULE, clock), keys[which]));
      }
      log(
        `volume: cold run ${run + 1}: ${cold.busy.at(-1)!.ms.toFixed(1)} ms (${cold.busy.at(-1)!.eventsRead} events read) vs ${cold.fresh.at(-1)!.ms.toFixed(1)} ms (${cold.fresh.at(-1)!.eventsRead})`,
      );
    }
    return {
      creates,
      buildSeconds,
      firstCreatesMs,
      lastCreatesMs,
      cold: { busy: medianSample(cold.busy), fresh: medianSample(cold.fresh) },
    };
  } finally {
    await stores.close();
    dir.cleanup();
  }
}
