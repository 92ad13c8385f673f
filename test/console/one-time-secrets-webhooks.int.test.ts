import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteReadStore } from '../../src/adapters/sqlite/sqlite-read-store.ts';
import { HeldCredentials, SECRETS_COLLECTION } from '../../src/commands/held-credentials.ts';
import { createLogger } from '../../src/logger.ts';
import type { ReadStore } from '../../src/ports/read-store.ts';
import { tempDir } from '../support/temp-dir.ts';

/**
 * A webhook endpoint's signing secret waits for its maker in the same one-time store as an API key's:
 * sealed, bound to the maker, the endpoint and its kind, taken once, and never mistaken for an API key.
 */
const MAKER = '11111111-1111-4111-8111-111111111111';
const OTHER = '22222222-2222-4222-8222-222222222222';
const SIGNING_SECRET = `whsec_${randomBytes(32).toString('base64url')}`;
const webhook = {
  kind: 'webhook-endpoint' as const,
  endpointID: 'whe_AAAAAAAAAAAAAAAA',
  url: 'https://hooks.example.com/in',
  signingSecret: SIGNING_SECRET,
};
const apiKey = {
  kind: 'api-key' as const,
  keyID: 'key_abc',
  label: 'Till 1',
  apiKey: `key_abc.${randomBytes(32).toString('base64url')}`,
};
const KEY = randomBytes(32);

let dir: ReturnType<typeof tempDir>;
let store: ReadStore;
let logLines: string[];

function secrets(key = KEY): HeldCredentials {
  const logger = createLogger('info', { write: (line: string) => void logLines.push(line) });
  return new HeldCredentials({ store, key, clock: () => new Date('2025-01-01T00:00:00Z'), logger });
}

beforeEach(async () => {
  dir = tempDir('one-time-webhook-secrets-');
  store = openSqliteReadStore({ file: join(dir.path, 'read-models.sqlite') });
  await store.defineCollections([SECRETS_COLLECTION]);
  logLines = [];
});
afterEach(async () => {
  await store.close();
  dir.cleanup();
});

describe('webhook signing secrets in the one-time store', () => {
  it('given a signing secret and an API key held for one maker, when taken, then both come once, each as its kind, and the store held only ciphertext', async () => {
    await secrets().hold(MAKER, webhook);
    await secrets().hold(MAKER, apiKey);
    expect(JSON.stringify(await store.find(SECRETS_COLLECTION.name))).not.toContain(SIGNING_SECRET.slice(6));
    const taken = await secrets().take(MAKER);
    expect(taken).toHaveLength(2);
    expect(taken).toContainEqual(webhook);
    expect(taken).toContainEqual(apiKey);
    expect(await secrets().take(MAKER)).toEqual([]);
  });

  it('given a signing secret held for the maker, when another user takes, then they get nothing and it still waits', async () => {
    await secrets().hold(MAKER, webhook);
    expect(await secrets().take(OTHER)).toEqual([]);
    expect(await secrets().take(MAKER)).toEqual([webhook]);
  });

  it('given a sealed signing secret passed off as an API key in the store, when taken, then it does not open and is dropped', async () => {
    await secrets().hold(MAKER, webhook);
    const [doc] = await store.find(SECRETS_COLLECTION.name);
    const { kind: _kind, endpointID, url: _url, ...rest } = doc!;
    await store.commit([
      { op: 'upsert', collection: SECRETS_COLLECTION.name, doc: { ...rest, keyID: endpointID, label: 'forged' } },
    ]);
    expect(await secrets().take(MAKER)).toEqual([]);
    expect(await store.count(SECRETS_COLLECTION.name)).toBe(0);
  });

  it('given a signing secret moved to another endpoint, when taken, then it does not open', async () => {
    await secrets().hold(MAKER, webhook);
    const [doc] = await store.find(SECRETS_COLLECTION.name);
    await store.commit([
      { op: 'upsert', collection: SECRETS_COLLECTION.name, doc: { ...doc!, endpointID: 'whe_BBBBBBBBBBBBBBBB' } },
    ]);
    expect(await secrets().take(MAKER)).toEqual([]);
  });

  it('given a signing secret sealed under another key, when taken, then it is dropped and logged by endpoint id, never by value', async () => {
    await secrets(randomBytes(32)).hold(MAKER, webhook);
    expect(await secrets().take(MAKER)).toEqual([]);
    const log = logLines.join('');
    expect(log).toContain('webhook signing secret could not be opened');
    expect(log).toContain(webhook.endpointID);
    expect(log).not.toContain(SIGNING_SECRET.slice(6));
  });
});
