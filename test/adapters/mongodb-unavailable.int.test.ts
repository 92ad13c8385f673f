import { describe, expect, it } from 'vitest';
import { openMongoReadStore } from '../../src/adapters/mongodb/mongodb-read-store.ts';
import { ReadStoreUnavailableError } from '../../src/ports/read-store.ts';

/**
 * No MongoDB server runs here, which is exactly the outage to test: a real driver against a closed port
 * (nothing is faked). The adapter must answer with the port's unavailable error (a 503, a retry), not the
 * driver's raw error (a 500).
 */
describe('MongoDB read store when the server cannot be reached', () => {
  it('when a read or a commit is attempted, then it fails with ReadStoreUnavailableError carrying the driver error', async () => {
    const store = openMongoReadStore({
      url: 'mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=200&directConnection=true',
      database: 'wallet_ops_test',
    });
    try {
      const read = await store.getCheckpoint('balances').catch((error: unknown) => error);
      expect(read).toBeInstanceOf(ReadStoreUnavailableError);
      expect((read as Error).cause).toBeInstanceOf(Error);
      const commit = await store.commit([], { projection: 'balances', position: 1 }).catch((error: unknown) => error);
      expect(commit).toBeInstanceOf(ReadStoreUnavailableError);
    } finally {
      await store.close();
    }
  });
});
