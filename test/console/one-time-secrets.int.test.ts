import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteReadStore } from '../../src/adapters/sqlite/sqlite-read-store.ts';
import { HeldCredentials, SECRETS_COLLECTION } from '../../src/commands/held-credentials.ts';
import { createLogger } from '../../src/logger.ts';
import type { ReadStore } from '../../src/ports/read-store.ts';
import { tempDir } from '../support/temp-dir.ts';

/**
 * The one-time secrets on the embedded read store: two handles on one file stand for two processes.
 * Sealed at rest, delivered once, bound to the maker and the key, dropped when stale or unreadable.
 */
const MAKER = '11111111-1111-4111-8111-111111111111';
const OTHER = '22222222-2222-4222-8222-222222222222';
const API_KEY = `key_abc.${randomBytes(32).toString('base64url')}`;
const secret = { kind: 'api-key' as const, keyID: 'key_abc', label: 'Till 1', apiKey: API_KEY };

let dir: ReturnType<typeof tempDir>;
let stores: ReadStore[];
let now: number;
let logLines: string[];
const clock = () => new Date(now);

async function openStore(): Promise<ReadStore> {
  const store = openSqliteReadStore({ file: join(dir.path, 'read-models.sqlite') });
  await store.defineCollections([SECRETS_COLLECTION]);
  stores.push(store);
  return store;
}

function secrets(store: ReadStore, key: Buffer, ttlMs?: number): HeldCredentials {
  const logger = createLogger('info', { write: (line: string) => void logLines.push(line) });
  return new HeldCredentials({ store, key, clock, logger, ...(ttlMs === undefined ? {} : { ttlMs }) });
}

const KEY = randomBytes(32);

beforeEach(() => {
  dir = tempDir('one-time-secrets-');
  stores = [];
  now = Date.parse('2025-01-01T00:00:00Z');
  logLines = [];
});
afterEach(async () => {
  for (const store of stores) await store.close();
  dir.cleanup();
});

describe('one-time secrets in the read store', () => {
  it('given a secret held for a maker, when another handle with the same key takes it, then the maker gets it once and the store is empty', async () => {
    await secrets(await openStore(), KEY).hold(MAKER, secret);
    const elsewhere = secrets(await openStore(), KEY);
    expect(await elsewhere.take(MAKER)).toEqual([secret]);
    expect(await elsewhere.take(MAKER)).toEqual([]);
    expect(await stores[0]!.count(SECRETS_COLLECTION.name)).toBe(0);
  });

  it('given a secret held, when the store is read, then it holds only ciphertext with a 96-bit IV, and two holds of one secret differ', async () => {
    const store = await openStore();
    await secrets(store, KEY).hold(MAKER, secret);
    await secrets(store, KEY).hold(OTHER, secret);
    const docs = await store.find(SECRETS_COLLECTION.name);
    expect(JSON.stringify(docs)).not.toContain(API_KEY.split('.')[1]);
    expect(docs.map((d) => Buffer.from(d.iv as string, 'base64').length)).toEqual([12, 12]);
    expect(docs[0]!.data).not.toEqual(docs[1]!.data);
  });

  it('given page views of one maker in two processes at once, when both take, then exactly one gets the secret', async () => {
    await secrets(await openStore(), KEY).hold(MAKER, secret);
    const [a, b] = [secrets(await openStore(), KEY), secrets(await openStore(), KEY)];
    const results = await Promise.all([a.take(MAKER), b.take(MAKER), a.take(MAKER), b.take(MAKER)]);
    expect(results.flat()).toEqual([secret]);
  });

  it('given a secret held for one maker, when another user takes, then they get nothing and the secret still waits', async () => {
    const one = secrets(await openStore(), KEY);
    await one.hold(MAKER, secret);
    expect(await one.take(OTHER)).toEqual([]);
    expect(await one.take(MAKER)).toEqual([secret]);
  });

  it('given a sealed secret moved to another user in the store, when that user takes it, then it does not open and is dropped', async () => {
    const store = await openStore();
    const one = secrets(store, KEY);
    await one.hold(MAKER, secret);
    const [doc] = await store.find(SECRETS_COLLECTION.name);
    await store.commit([
      { op: 'delete', collection: SECRETS_COLLECTION.name, id: doc!.id },
      { op: 'upsert', collection: SECRETS_COLLECTION.name, doc: { ...doc!, id: `${OTHER}/key_abc`, userID: OTHER } },
    ]);
    expect(await one.take(OTHER)).toEqual([]);
    expect(await store.count(SECRETS_COLLECTION.name)).toBe(0);
  });

  it('given a secret sealed under another key, when taken, then it is dropped and logged by key id, never by value', async () => {
    await secrets(await openStore(), randomBytes(32)).hold(MAKER, secret);
    expect(await secrets(await openStore(), KEY).take(MAKER)).toEqual([]);
    const log = logLines.join('');
    expect(log).toContain('could not be opened');
    expect(log).toContain('key_abc');
    expect(log).not.toContain(API_KEY.split('.')[1]);
  });

  it('given a secret not collected within the time to live, when taken, then it is gone; and a later hold sweeps stale secrets of other makers', async () => {
    const store = await openStore();
    const one = secrets(store, KEY, 60_000);
    await one.hold(MAKER, secret);
    await one.hold(OTHER, { ...secret, keyID: 'key_other' });
    now += 60_000;
    expect(await one.take(MAKER)).toEqual([]);
    await one.hold(MAKER, { ...secret, keyID: 'key_new' });
    expect((await store.find(SECRETS_COLLECTION.name)).map((d) => d.keyID)).toEqual(['key_new']);
  });

  it('given several secrets for one maker, when taken, then all come at once', async () => {
    const one = secrets(await openStore(), KEY);
    await one.hold(MAKER, secret);
    await one.hold(MAKER, { ...secret, keyID: 'key_two', label: 'Till 2' });
    expect((await one.take(MAKER)).map((s) => (s.kind === 'api-key' ? s.keyID : s.kind)).sort()).toEqual([
      'key_abc',
      'key_two',
    ]);
  });
});
