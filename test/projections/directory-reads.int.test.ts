import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { embedded, openStores, type Stores } from '../../src/adapters/open-stores.ts';
import {
  addUser,
  approveApiKey,
  findUserByEmail,
  onboardParty,
  requestApiKey,
  type CredentialDeps,
} from '../../src/commands/back-office.ts';
import { approveAccessRequest, requestAccessChange } from '../../src/commands/user-admin.ts';
import { API_KEY_FILTER, ApiKeyDirectory, followApiKeys } from '../../src/projections/api-key-directory.ts';
import { directoryReads, followDirectory, followToHead } from '../../src/projections/directory-reads.ts';
import type { RecordedEvent } from '../../src/ports/event-store.ts';
import { followUsers, USER_DIRECTORY_FILTER, UserDirectory } from '../../src/projections/user-directory.ts';
import type { Follower } from '../../src/shared/follower.ts';
import { credentialsOn } from '../support/credentials.ts';
import { waitFor } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';

/**
 * The directories in memory are read through their followers only: after a write of one's own, until the
 * follower has its position; for another process's write of a moment ago, until the follower has the head.
 */
describe('reading a directory through its follower', () => {
  let dir: ReturnType<typeof tempDir>;
  let stores: Stores;
  /** Another process's connection to the same data directory, as the CLI or another instance has. */
  let other: Stores;
  let backOffice: CredentialDeps;
  let otherOffice: CredentialDeps;
  const followers: Follower[] = [];
  const operator = () => ({ actor: 'operator:test', correlationId: randomUUID() });
  const quiet = { info: () => {}, warn: () => {} };

  beforeEach(async () => {
    dir = tempDir('directory-reads-');
    stores = await openStores(embedded(dir.path));
    other = await openStores(embedded(dir.path));
    backOffice = {
      store: stores.eventStore,
      clock: () => new Date(),
      assetScale: 2,
      credentials: await credentialsOn(stores.readStore),
    };
    otherOffice = { ...backOffice, store: other.eventStore, credentials: await credentialsOn(other.readStore) };
  });
  afterEach(async () => {
    for (const follower of followers.splice(0)) await follower.stop();
    await other.close();
    await stores.close();
    dir.cleanup();
  });

  /** A party with a maker and a checker, written by `deps`; returns the maker's request for a key and the checker. */
  async function partyWithKeyRequest(deps: CredentialDeps, shortCode: string) {
    const { partyID } = await onboardParty(
      deps,
      { partyType: 'distributor', name: `Distributor ${shortCode}`, shortCode },
      operator(),
    );
    const party = { type: 'distributor' as const, id: partyID };
    for (const role of ['maker', 'checker'] as const)
      await addUser(
        deps,
        { party, email: `${role}-${shortCode}@test.example`, password: `${role} password 1`, roles: [role] },
        operator(),
      );
    const requested = await requestApiKey(
      deps,
      await findUserByEmail(deps, `maker-${shortCode}@test.example`),
      { label: 'k', permissions: 'perform-operations' },
      randomUUID(),
    );
    return { ...requested, checker: await findUserByEmail(deps, `checker-${shortCode}@test.example`) };
  }

  function keysFollowed(timeoutMs = 2000) {
    const directory = new ApiKeyDirectory();
    const follower = followApiKeys(stores.eventStore, directory, quiet, { baseDelayMs: 20, maxDelayMs: 100 });
    followers.push(follower);
    return { directory, follower, reads: directoryReads(follower, stores.eventStore, API_KEY_FILTER, timeoutMs) };
  }

  it('given key events and other events after them, when a one-shot command runs the follower to the head, then the directory has every key and the follower is stopped', async () => {
    const first = await partyWithKeyRequest(backOffice, '8101');
    await approveApiKey(backOffice, first.checker, first.keyID, randomUUID());
    await onboardParty(backOffice, { partyType: 'merchant', name: 'Merchant 8102', shortCode: '8102' }, operator());
    const directory = new ApiKeyDirectory();
    const follower = followApiKeys(stores.eventStore, directory, quiet);

    await followToHead(follower, stores.eventStore, API_KEY_FILTER);

    expect(directory.get(first.keyID)?.status).toBe('active');
    expect(follower.consumer.status().state).toBe('stopped');
  });

  it('given a following directory, when this process approves a key, then written(its position) resolves true with the key active in the directory', async () => {
    const { directory, reads } = keysFollowed();
    const { keyID, checker } = await partyWithKeyRequest(backOffice, '8201');

    const { position } = await approveApiKey(backOffice, checker, keyID, randomUUID());

    expect(await reads.written(position)).toBe(true);
    expect(directory.get(keyID)?.status).toBe('active');
  });

  it('given a following directory, when another process approves a key, then current() resolves true with the key active in the directory', async () => {
    const { directory, reads } = keysFollowed();
    expect(await reads.current()).toBe(true);
    const { keyID, checker } = await partyWithKeyRequest(otherOffice, '8301');
    await approveApiKey(otherOffice, checker, keyID, randomUUID());
    // Later events the directory does not follow: the head is beyond its last key event.
    await onboardParty(otherOffice, { partyType: 'merchant', name: 'Merchant 8302', shortCode: '8302' }, operator());

    expect(await reads.current()).toBe(true);

    expect(directory.get(keyID)?.status).toBe('active');
  });

  it('given a follower that has stopped, when a key is requested, then current() and written() resolve false after their bound, and the directory never had it', async () => {
    const { directory, follower, reads } = keysFollowed(200);
    expect(await reads.current()).toBe(true);
    await follower.stop();
    const { keyID, position } = await partyWithKeyRequest(otherOffice, '8401');

    const started = performance.now();
    expect(await reads.current()).toBe(false);
    expect(await reads.written(position)).toBe(false);

    expect(performance.now() - started).toBeLessThan(2000);
    expect(directory.get(keyID)).toBeUndefined();
  });

  it('given a stalled follower whose wait ran out, when it is waited on again, then the wait fails at once until the follower moves, and then waits as before', async () => {
    // A directory that fails to apply while `failing`: its follower retries, stalled at the event it cannot apply.
    const directory = new ApiKeyDirectory();
    let failing = false;
    const faulty = {
      get position() {
        return directory.position;
      },
      apply(event: RecordedEvent) {
        if (failing) throw new Error('injected: the directory cannot apply');
        directory.apply(event);
      },
    };
    const follower = followDirectory('keys', stores.eventStore, API_KEY_FILTER, faulty, quiet, {
      baseDelayMs: 20,
      maxDelayMs: 100,
    });
    followers.push(follower);
    const reads = directoryReads(follower, stores.eventStore, API_KEY_FILTER, 1000);
    expect(await reads.current()).toBe(true);
    failing = true;
    const first = await partyWithKeyRequest(otherOffice, '8501');
    expect(await reads.current()).toBe(false);

    const started = performance.now();
    expect(await reads.current()).toBe(false);
    expect(await reads.written(first.position)).toBe(false);
    // Not a bound each (2 s for the two): a look at what is left, one index read each.
    expect(performance.now() - started).toBeLessThan(1000);

    // When it applies again and has moved, the waits are bounded waits again and see the keys.
    failing = false;
    await waitFor(() => directory.get(first.keyID) !== undefined);
    expect(await reads.written(first.position)).toBe(true);
    expect(directory.get(first.keyID)?.status).toBe('pending');
    const second = await partyWithKeyRequest(otherOffice, '8502');
    expect(await reads.current()).toBe(true);
    expect(directory.get(second.keyID)?.status).toBe('pending');
  });

  it('given the user directory following the store, when this process approves a new user (its last event a claim of the email, which the directory does not follow), then written(its position) resolves true with the user listed', async () => {
    const directory = new UserDirectory();
    const follower = followUsers(stores.eventStore, directory, quiet);
    followers.push(follower);
    const reads = directoryReads(follower, stores.eventStore, USER_DIRECTORY_FILTER, 2000);
    for (const name of ['a', 'b'])
      await addUser(
        backOffice,
        {
          party: null,
          email: `admin-${name}@test.example`,
          password: 'admin password 1',
          roles: [],
          platformAdmin: true,
        },
        operator(),
      );
    const a = await findUserByEmail(backOffice, 'admin-a@test.example');
    const b = await findUserByEmail(backOffice, 'admin-b@test.example');
    const { requestID } = await requestAccessChange(
      backOffice,
      a,
      { kind: 'add-user', party: null, email: 'admin-c@test.example', roles: [] },
      'a third',
      operator(),
    );

    const { position } = await approveAccessRequest(backOffice, b, requestID, operator());

    const [claim] = await stores.eventStore.readAll({ fromPosition: position, toPosition: position });
    expect(claim?.type).toBe('EmailClaimed');
    expect(await reads.written(position)).toBe(true);
    expect(directory.administrators().map((user) => user.email)).toContain('admin-c@test.example');
    expect(directory.request(requestID)?.status).toBe('approved');
  });

  it('given the user directory following the store, when another process adds an administrator, then current() resolves true with them listed', async () => {
    const directory = new UserDirectory();
    const follower = followUsers(stores.eventStore, directory, quiet);
    followers.push(follower);
    const reads = directoryReads(follower, stores.eventStore, USER_DIRECTORY_FILTER, 2000);
    expect(await reads.current()).toBe(true);
    expect(directory.administrators()).toEqual([]);

    await addUser(
      otherOffice,
      { party: null, email: 'first-admin@test.example', password: 'admin password 1', roles: [], platformAdmin: true },
      operator(),
    );

    expect(await reads.current()).toBe(true);
    expect(directory.administrators().map((user) => user.email)).toEqual(['first-admin@test.example']);
  });
});
