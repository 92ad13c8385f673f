import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { openSqliteReadStore } from '../../src/adapters/sqlite/sqlite-read-store.ts';
import {
  approveApiKey,
  collectCredential,
  type ActiveUser,
  type CredentialDeps,
} from '../../src/commands/back-office.ts';
import { HeldCredentials, SECRETS_COLLECTION } from '../../src/commands/held-credentials.ts';
import { approveWebhookEndpoint, type WebhookCommandDeps } from '../../src/commands/webhooks.ts';
import type { ReadStore } from '../../src/ports/read-store.ts';
import { tempDir } from './temp-dir.ts';

/**
 * The credential vault for tests that have an event store but no system: a real embedded read store in a
 * temporary directory, under a random secrets key. Credentials reach tests the way they reach anyone: the
 * approval holds them, and the owner collects them once.
 */
export async function testCredentials(
  clock: () => Date = () => new Date(),
): Promise<{ credentials: HeldCredentials; close(): Promise<void> }> {
  const dir = tempDir('credentials-');
  const store = openSqliteReadStore({ file: join(dir.path, 'read-models.sqlite') });
  await store.defineCollections([SECRETS_COLLECTION]);
  const credentials = new HeldCredentials({ store, key: randomBytes(32), clock, logger: { warn: () => {} } });
  return {
    credentials,
    async close() {
      await store.close();
      dir.cleanup();
    },
  };
}

/** A checker approves the key; the maker who asked collects its secret, once. */
export async function approveAndCollectKey(
  deps: CredentialDeps,
  checker: ActiveUser,
  maker: ActiveUser,
  keyID: string,
): Promise<string> {
  await approveApiKey(deps, checker, keyID, randomUUID());
  return (await collectCredential(deps, maker, { kind: 'api-key', id: keyID })).apiKey;
}

/** A checker approves the endpoint; the maker who registered it collects its signing secret, once. */
export async function approveAndCollectEndpoint(
  deps: WebhookCommandDeps,
  checker: ActiveUser,
  maker: ActiveUser,
  endpointID: string,
): Promise<string> {
  await approveWebhookEndpoint(deps, checker, endpointID, randomUUID());
  return (await collectCredential(deps, maker, { kind: 'webhook-endpoint', id: endpointID })).signingSecret;
}

/** The vault on a read store the test already has, under a random secrets key. */
export async function credentialsOn(store: ReadStore, clock: () => Date = () => new Date()): Promise<HeldCredentials> {
  await store.defineCollections([SECRETS_COLLECTION]);
  return new HeldCredentials({ store, key: randomBytes(32), clock, logger: { warn: () => {} } });
}
