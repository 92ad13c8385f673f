import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStores, type Stores } from '../../src/adapters/open-stores.ts';
import {
  addUser,
  approveApiKey,
  findUserByEmail,
  onboardParty,
  requestApiKey,
  type CredentialDeps,
} from '../../src/commands/back-office.ts';
import { credentialsOn } from '../support/credentials.ts';
import { ApiKeyDirectory, catchUpApiKeyDirectory } from '../../src/projections/api-key-directory.ts';
import { tempDir } from '../support/temp-dir.ts';

describe('the API-key directory catching up', () => {
  let dir: ReturnType<typeof tempDir>;
  let stores: Stores;
  let backOffice: CredentialDeps;
  const operator = () => ({ actor: 'operator:test', correlationId: randomUUID() });

  beforeEach(async () => {
    dir = tempDir('key-directory-');
    stores = await openStores({ dataDir: dir.path });
    backOffice = {
      store: stores.eventStore,
      clock: () => new Date(),
      assetScale: 2,
      credentials: await credentialsOn(stores.readStore),
    };
  });
  afterEach(async () => {
    await stores.close();
    dir.cleanup();
  });

  async function keyOfNewParty(shortCode: string): Promise<string> {
    const { partyID } = await onboardParty(
      backOffice,
      { partyType: 'distributor', name: `Distributor ${shortCode}`, shortCode },
      operator(),
    );
    const party = { type: 'distributor' as const, id: partyID };
    await addUser(
      backOffice,
      { party, email: `maker-${shortCode}@test.example`, password: 'maker password 1', roles: ['maker'] },
      operator(),
    );
    await addUser(
      backOffice,
      { party, email: `checker-${shortCode}@test.example`, password: 'checker password 1', roles: ['checker'] },
      operator(),
    );
    const { keyID } = await requestApiKey(
      backOffice,
      await findUserByEmail(backOffice, `maker-${shortCode}@test.example`),
      { label: 'k', permissions: 'perform-operations' },
      randomUUID(),
    );
    await approveApiKey(
      backOffice,
      await findUserByEmail(backOffice, `checker-${shortCode}@test.example`),
      keyID,
      randomUUID(),
    );
    return keyID;
  }

  it('given other events after the last key event, when caught up, then it stands at the head, and a key approved later is found by the next catch-up', async () => {
    const first = await keyOfNewParty('8101');
    const lastKeyEvent = await stores.eventStore.headPosition();
    await onboardParty(backOffice, { partyType: 'merchant', name: 'Merchant 8102', shortCode: '8102' }, operator());
    const head = await stores.eventStore.headPosition();
    expect(head).toBeGreaterThan(lastKeyEvent);
    const directory = new ApiKeyDirectory();

    await catchUpApiKeyDirectory(stores.eventStore, directory);

    expect(directory.position).toBe(head);
    expect(directory.get(first)?.status).toBe('active');
    const second = await keyOfNewParty('8103');
    await catchUpApiKeyDirectory(stores.eventStore, directory);
    expect(directory.get(second)?.status).toBe('active');
    expect(directory.position).toBe(await stores.eventStore.headPosition());
  });
});
