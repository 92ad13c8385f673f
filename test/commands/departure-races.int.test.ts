import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import {
  addUser,
  approveApiKey,
  approveApiKeyRotation,
  collectCredential,
  decideOnApiKeyRotation,
  findAnyUserByEmail,
  findUserByEmail,
  onboardParty,
  requestApiKey,
  type ActiveUser,
  type RotationDeps,
} from '../../src/commands/back-office.ts';
import { disableUser } from '../../src/commands/user-admin.ts';
import { streams } from '../../src/domain/streams.ts';
import type { EventStore, StreamAppend } from '../../src/ports/event-store.ts';
import { testCredentials } from '../support/credentials.ts';
import { tempDir } from '../support/temp-dir.ts';

/**
 * A departure and an approval racing each other, on the real embedded store. The pipeline guards the streams a
 * decision writes, not the requester's user stream an approval only reads; so the departure lists again after
 * it commits, and an approval checks the holder again after it commits. The races are staged at the store:
 * "the other process" commits its part just before this one's append reaches the store.
 */
let dir: ReturnType<typeof tempDir>;
let inner: EventStore;
let vault: Awaited<ReturnType<typeof testCredentials>>;
let deps: RotationDeps;
/** Run once, just before the next append whose events include this type reaches the store. */
let before: { type: string; run: () => Promise<void> } | undefined;

const operator = () => ({ actor: 'operator:test', correlationId: randomUUID() });
let maker: ActiveUser;
let otherMaker: ActiveUser;
let checker: ActiveUser;
let admin: ActiveUser;

beforeEach(async () => {
  dir = tempDir('departure-races-');
  inner = openSqliteEventStore({ file: join(dir.path, 'events.sqlite') });
  const store = new Proxy(inner, {
    get(target, property, receiver) {
      if (property === 'appendMulti') {
        return async (requests: StreamAppend[]) => {
          const staged = before;
          if (staged && requests.some((request) => request.events.some((event) => event.type === staged.type))) {
            before = undefined;
            await staged.run();
          }
          return target.appendMulti(requests);
        };
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  vault = await testCredentials();
  deps = {
    store,
    clock: () => new Date(),
    assetScale: 2,
    credentials: vault.credentials,
    secretRotationOverlapHours: 24,
  };
  const { partyID } = await onboardParty(
    deps,
    { partyType: 'distributor', name: 'Race Agents', shortCode: '4711' },
    operator(),
  );
  const party = { type: 'distributor' as const, id: partyID };
  for (const [email, roles] of [
    ['maker@race.test', ['maker']],
    ['maker2@race.test', ['maker']],
    ['checker@race.test', ['checker']],
  ] as const) {
    await addUser(deps, { party, email, password: 'race password 1', roles: [...roles] }, operator());
  }
  await addUser(
    deps,
    { party: null, email: 'admin@race.test', password: 'race password 1', roles: [], platformAdmin: true },
    operator(),
  );
  maker = await findUserByEmail(deps, 'maker@race.test');
  otherMaker = await findUserByEmail(deps, 'maker2@race.test');
  checker = await findUserByEmail(deps, 'checker@race.test');
  admin = await findUserByEmail(deps, 'admin@race.test');
});
afterEach(async () => {
  before = undefined;
  await vault.close();
  await inner.close();
  dir.cleanup();
});

const disabledEvent = (userID: string) => ({
  type: 'UserDisabled',
  data: { userID, disabledBy: admin.userID, reason: 'left', disabledAt: new Date().toISOString() },
  metadata: { actor: `user:${admin.userID}` },
});
const lastEventOf = async (stream: string) => (await inner.readStream(stream)).at(-1);

describe('a departure racing an approval', () => {
  it('given the maker disabled between the approval’s check and its commit, when the approval commits, then the key is revoked at once and no secret is held', async () => {
    const { keyID } = await requestApiKey(deps, maker, { label: 'raced', permissions: 'read-balance' }, 'c');
    before = {
      type: 'ApiKeyApproved',
      run: async () => void (await inner.append(streams.user(maker.userID), [disabledEvent(maker.userID)], 'any')),
    };

    await expect(approveApiKey(deps, checker, keyID, 'c')).rejects.toMatchObject({
      code: 'WRONG_STATE',
      message: expect.stringMatching(/left meanwhile/),
    });

    expect(await lastEventOf(streams.apiKey(keyID))).toMatchObject({
      type: 'ApiKeyRevoked',
      data: { approvedBy: 'system', departedUserID: maker.userID },
    });
    await expect(collectCredential(deps, maker, { kind: 'api-key', id: keyID })).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
  });

  it('given a key approved for the maker between the departure’s listing and its commit, when the departure commits, then it lists again and revokes that key too', async () => {
    const keyID = `key_${'R'.repeat(16)}`;
    const at = new Date().toISOString();
    before = {
      type: 'UserDisabled',
      run: async () => {
        await inner.append(
          streams.apiKey(keyID),
          [
            {
              type: 'ApiKeyRequested',
              data: {
                keyID,
                party: maker.party,
                label: 'late',
                permissions: ['Read Balance'],
                maxTransactionAmount: null,
                maxDailyVolume: null,
                allowedIPs: [],
                expiresInDays: 30,
                requestedBy: maker.userID,
                requestedAt: at,
              },
              metadata: { actor: `user:${maker.userID}` },
            },
            {
              type: 'ApiKeyApproved',
              data: {
                keyID,
                approvedBy: checker.userID,
                approvedAt: at,
                expiresAt: '2099-01-01T00:00:00.000Z',
                secretHash: 'ab'.repeat(32),
              },
              metadata: { actor: `user:${checker.userID}` },
            },
          ],
          'no_stream',
        );
      },
    };

    const { ended } = await disableUser(deps, admin, maker.userID, 'left the company', {
      actor: `user:${admin.userID}`,
      correlationId: 'c',
    });

    expect(ended.map((c) => c.id)).toContain(keyID);
    expect(await lastEventOf(streams.apiKey(keyID))).toMatchObject({
      type: 'ApiKeyRevoked',
      data: { approvedBy: 'system', departedUserID: maker.userID },
    });
  });

  it('given a rotation asked for by a maker who has since left, then the departure withdrew it, and the key keeps its holder', async () => {
    const { keyID } = await requestApiKey(deps, maker, { label: 'rotated', permissions: 'read-balance' }, 'c');
    await approveApiKey(deps, checker, keyID, 'c');
    await decideOnApiKeyRotation(deps, otherMaker, keyID, { type: 'request', reason: 'taking over' }, 'c');
    const { ended } = await disableUser(deps, admin, otherMaker.userID, 'left', {
      actor: `user:${admin.userID}`,
      correlationId: 'c',
    });
    // The key's secret is the first maker's, not theirs: only their request ends.
    expect(ended).toEqual([
      { kind: 'api-key', id: keyID, label: 'rotated', status: 'active', ends: ['rotation-request'] },
    ]);

    await expect(approveApiKeyRotation(deps, checker, keyID, 'c')).rejects.toMatchObject({
      code: 'WRONG_STATE',
      message: expect.stringMatching(/no rotation .* is pending/),
    });
    expect(await lastEventOf(streams.apiKey(keyID))).toMatchObject({
      type: 'ApiKeyRotationWithdrawn',
      data: { withdrawnBy: 'system', departedUserID: otherMaker.userID },
    });
    expect((await findAnyUserByEmail(deps, 'maker@race.test')).status).toBe('active');
  });

  it('given a departure that did not see a rotation request (written after its listing), when a checker approves it, then it is refused and the key keeps its holder', async () => {
    const { keyID } = await requestApiKey(deps, maker, { label: 'rotated late', permissions: 'read-balance' }, 'c');
    await approveApiKey(deps, checker, keyID, 'c');
    await decideOnApiKeyRotation(deps, otherMaker, keyID, { type: 'request', reason: 'taking over' }, 'c');
    await inner.append(streams.user(otherMaker.userID), [disabledEvent(otherMaker.userID)], 'any');

    await expect(approveApiKeyRotation(deps, checker, keyID, 'c')).rejects.toMatchObject({
      code: 'WRONG_STATE',
      message: expect.stringMatching(/disabled/),
    });
    expect(await lastEventOf(streams.apiKey(keyID))).toMatchObject({ type: 'ApiKeyRotationRequested' });
  });
});
