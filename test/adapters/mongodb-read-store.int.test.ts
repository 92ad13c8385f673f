/**
 * The ReadStore contract suite, unchanged, against a real MongoDB replica set (the adapter commits in
 * transactions). It runs when MONGODB_URL is set, e.g.
 *   MONGODB_URL='mongodb://localhost:27017/?replicaSet=rs0&directConnection=true' npx vitest run test/adapters/mongodb-read-store.int.test.ts
 * and is reported as skipped otherwise (test/adapters/server-contracts.test.ts prints why). No fake of the
 * server stands in for it. Each test gets a database of its own, dropped afterwards.
 */
import { randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { describe, it } from 'vitest';
import { openMongoReadStore } from '../../src/adapters/mongodb/mongodb-read-store.ts';
import { describeReadStoreContract } from '../contracts/read-store.contract.ts';

const url = process.env.MONGODB_URL;

if (url) {
  describeReadStoreContract('MongoDB', async () => {
    const database = `wallet_ops_test_${randomUUID().slice(0, 8)}`;
    const store = openMongoReadStore({ url, database });
    return {
      store,
      cleanup: async () => {
        await store.close();
        const client = new MongoClient(url);
        try {
          await client.db(database).dropDatabase();
        } finally {
          await client.close();
        }
      },
    };
  });
} else {
  describe.skip('ReadStore contract: MongoDB (skipped: MONGODB_URL is not set)', () => {
    it('runs against the MongoDB named by MONGODB_URL', () => {});
  });
}
