/**
 * How the MongoDB read store handles a failover, on the REAL driver: `openMongoReadStore` builds its real
 * MongoClient (pointed at a closed port), and only the calls that would reach the network are stubbed on the
 * driver's own classes (Collection.findOne, ClientSession.withTransaction), failing with the errors the driver
 * builds from a server's reply during an election or a shutdown (`new MongoServerError(reply)`, as the driver
 * does), without the retry labels the driver adds only when it may retry the operation itself. This proves the
 * adapter's handling, not MongoDB's behaviour (no server runs here; the contract suite,
 * mongodb-read-store.int.test.ts, runs on a real replica set with MONGODB_URL).
 */
import {
  ClientSession,
  Collection,
  Db,
  MongoClient,
  MongoNetworkTimeoutError,
  MongoServerError,
  MongoWriteConcernError,
} from 'mongodb';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openMongoReadStore } from '../../src/adapters/mongodb/mongodb-read-store.ts';
import { type ReadStore, ReadStoreUnavailableError } from '../../src/ports/read-store.ts';

const CLOSED = 'mongodb://127.0.0.1:9/?directConnection=true';
const stores: ReadStore[] = [];

function open(url = CLOSED): ReadStore {
  const store = openMongoReadStore({ url, database: 'wallet_ops_test' });
  stores.push(store);
  return store;
}

afterEach(async () => {
  vi.restoreAllMocks();
  for (const store of stores.splice(0)) await store.close();
});

/** Server replies of a failover, as the server sends them (codes from the server's error_codes.yml). */
const failovers: Array<[string, Record<string, unknown>]> = [
  ['NotWritablePrimary', { ok: 0, code: 10107, codeName: 'NotWritablePrimary', errmsg: 'not primary' }],
  [
    'PrimarySteppedDown',
    { ok: 0, code: 189, codeName: 'PrimarySteppedDown', errmsg: 'Primary stepped down while waiting for replication' },
  ],
  [
    'InterruptedDueToReplStateChange',
    { ok: 0, code: 11602, codeName: 'InterruptedDueToReplStateChange', errmsg: 'operation was interrupted' },
  ],
  [
    'NotPrimaryNoSecondaryOk',
    { ok: 0, code: 13435, codeName: 'NotPrimaryNoSecondaryOk', errmsg: 'not primary and secondaryOk=false' },
  ],
  ['NotPrimaryOrSecondary', { ok: 0, code: 13436, codeName: 'NotPrimaryOrSecondary', errmsg: 'node is recovering' }],
  [
    'ShutdownInProgress',
    { ok: 0, code: 91, codeName: 'ShutdownInProgress', errmsg: 'The server is in quiesce mode and will shut down' },
  ],
  [
    'InterruptedAtShutdown',
    { ok: 0, code: 11600, codeName: 'InterruptedAtShutdown', errmsg: 'interrupted at shutdown' },
  ],
  ['HostUnreachable', { ok: 0, code: 6, codeName: 'HostUnreachable', errmsg: 'host unreachable' }],
  ['ExceededTimeLimit', { ok: 0, code: 262, codeName: 'ExceededTimeLimit', errmsg: 'operation exceeded time limit' }],
  ['MaxTimeMSExpired', { ok: 0, code: 50, codeName: 'MaxTimeMSExpired', errmsg: 'operation exceeded time limit' }],
  ['a legacy "not master" without a code', { ok: 0, errmsg: 'not master' }],
  [
    'a shutdown carrying only UnknownTransactionCommitResult (a commit whose outcome is unknown)',
    {
      ok: 0,
      code: 91,
      codeName: 'ShutdownInProgress',
      errmsg: 'shutting down',
      errorLabels: ['UnknownTransactionCommitResult'],
    },
  ],
];

describe('MongoDB read store (M2): a failover is unavailability, not a 500', () => {
  for (const [what, reply] of failovers) {
    it(`given ${what} without a retry label, when a read fails with it, then the caller gets ReadStoreUnavailableError`, async () => {
      const store = open();
      vi.spyOn(Collection.prototype, 'findOne').mockRejectedValue(new MongoServerError(reply));
      const error = await store.getCheckpoint('balances').catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ReadStoreUnavailableError);
      expect((error as Error).cause).toBeInstanceOf(MongoServerError);
    });
  }

  it('given a primary that steps down during a commit, when the transaction fails without a retry label, then the commit is unavailable', async () => {
    const store = open();
    vi.spyOn(ClientSession.prototype, 'withTransaction').mockRejectedValue(
      new MongoServerError({ ok: 0, code: 189, codeName: 'PrimarySteppedDown', errmsg: 'primary stepped down' }),
    );
    await expect(store.commit([], { projection: 'balances', position: 1 })).rejects.toBeInstanceOf(
      ReadStoreUnavailableError,
    );
  });

  it('given a majority write concern that times out (the write may or may not survive), when a take fails with it, then it is unavailable', async () => {
    const store = open();
    await defineOffline(store, 'pending');
    vi.spyOn(Collection.prototype, 'findOneAndDelete').mockRejectedValue(
      new MongoWriteConcernError({
        ok: 1,
        writeConcernError: {
          code: 64,
          codeName: 'WriteConcernTimeout',
          errmsg: 'waiting for replication timed out',
          errInfo: { wtimeout: true },
        },
      } as never),
    );
    await expect(store.take('pending', 'x')).rejects.toBeInstanceOf(ReadStoreUnavailableError);
  });

  it('given a socket that timed out mid-operation, when a read fails with it, then it is unavailable', async () => {
    const store = open();
    vi.spyOn(Collection.prototype, 'findOne').mockRejectedValue(
      new MongoNetworkTimeoutError('connection 3 to 127.0.0.1:27017 timed out'),
    );
    await expect(store.getGeneration('balances')).rejects.toBeInstanceOf(ReadStoreUnavailableError);
  });

  it('given an error of the request itself (a bad value, unauthorized), when a read fails with it, then it keeps its type: retrying would not help', async () => {
    const store = open();
    for (const reply of [
      { ok: 0, code: 2, codeName: 'BadValue', errmsg: 'bad value' },
      { ok: 0, code: 13, codeName: 'Unauthorized', errmsg: 'not authorized' },
    ]) {
      vi.spyOn(Collection.prototype, 'findOne').mockRejectedValueOnce(new MongoServerError(reply));
      const error = await store.getCheckpoint('balances').catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(MongoServerError);
      expect(error).not.toBeInstanceOf(ReadStoreUnavailableError);
    }
  });
});

/** Defines a collection with the DDL calls stubbed (the adapter keeps definitions in memory, as the embedded one). */
async function defineOffline(store: ReadStore, name: string): Promise<void> {
  vi.spyOn(Db.prototype, 'listCollections').mockReturnValue({ toArray: async () => [] } as never);
  vi.spyOn(Db.prototype, 'createCollection').mockResolvedValue(undefined as never);
  await store.defineCollections([{ name }]);
}

describe('MongoDB read store (M3): every call is bounded in time and writes are majority-acknowledged', () => {
  /** The real MongoClient the adapter builds (captured as the adapter asks it for its database). */
  function openCapturing(url = CLOSED): { store: ReadStore; client: () => MongoClient } {
    let captured: MongoClient | undefined;
    const db = MongoClient.prototype.db;
    vi.spyOn(MongoClient.prototype, 'db').mockImplementation(function (
      this: MongoClient,
      ...args: Parameters<MongoClient['db']>
    ) {
      captured = this;
      return db.apply(this, args);
    });
    const store = open(url);
    return { store, client: () => captured! };
  }

  it('when opened on a URL that sets no timeouts, then the client selects a server and connects within 10 s, drops a connection silent for 60 s, writes with majority (10 s wtimeout) and reads majority-committed data', () => {
    const { client } = openCapturing();
    expect(client().options).toMatchObject({
      serverSelectionTimeoutMS: 10_000,
      connectTimeoutMS: 10_000,
      socketTimeoutMS: 60_000,
    });
    expect(client().writeConcern).toMatchObject({ w: 'majority', wtimeoutMS: 10_000 });
    expect(client().readConcern?.level).toBe('majority');
  });

  it("given a URL that sets them, when opened, then the URL's values win (an operator tunes them in MONGODB_URL)", () => {
    const { client } = openCapturing(
      `${CLOSED}&serverSelectionTimeoutMS=200&socketTimeoutMS=0&w=1&readConcernLevel=local`,
    );
    expect(client().options).toMatchObject({ serverSelectionTimeoutMS: 200, socketTimeoutMS: 0 });
    expect(client().writeConcern?.w).toBe(1);
    expect(client().readConcern?.level).toBe('local');
  });

  it('when a read and a commit are made, then the read carries a server time limit and the transaction a commit time limit with a majority write concern', async () => {
    const { store } = openCapturing();
    const findOne = vi.spyOn(Collection.prototype, 'findOne').mockResolvedValue(null);
    const withTransaction = vi.spyOn(ClientSession.prototype, 'withTransaction').mockResolvedValue(undefined as never);
    await store.getCheckpoint('balances');
    expect(findOne.mock.calls[0]![1]).toMatchObject({ maxTimeMS: 15_000 });
    await store.commit([], { projection: 'balances', position: 1 });
    expect(withTransaction.mock.calls[0]![1]).toMatchObject({
      maxCommitTimeMS: 10_000,
      writeConcern: { w: 'majority', wtimeoutMS: 10_000 },
      readConcern: { level: 'snapshot' },
    });
  });
});
