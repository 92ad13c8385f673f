import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  approveApiKeyRotation,
  collectCredential,
  decideOnApiKeyRotation,
  findUserByEmail,
} from '../../src/commands/back-office.ts';
import { hashSecret, parseApiKey } from '../../src/domain/api-key-secrets.ts';
import {
  call,
  startTestSystem,
  waitFor,
  WITHOUT_EXECUTOR,
  type TestParty,
  type TestSystem,
} from '../support/system.ts';

/**
 * Rotating an API key's secret over HTTP, with a clock the test moves: after the checker's approval the new
 * secret works at once, the old one until the overlap (SECRET_ROTATION_OVERLAP_HOURS, 2 here) ends, then gets
 * the 401 of any wrong key.
 */
describe('API key rotation, with a fake clock', () => {
  let now = new Date('2030-06-01T08:00:00.000Z');
  let sys: TestSystem;
  let party: TestParty;

  beforeAll(async () => {
    sys = await startTestSystem({ SECRET_ROTATION_OVERLAP_HOURS: '2' }, () => now, WITHOUT_EXECUTOR);
    party = await sys.party('distributor');
  });
  afterAll(async () => sys?.close());

  const balance = (apiKey: string) =>
    call(sys.baseUrl, 'GET', `/api/v1/distributors/${party.ref.id}/balance`, { apiKey });
  const users = async () => ({
    maker: await findUserByEmail(sys.backOffice, party.makerEmail),
    checker: await findUserByEmail(sys.backOffice, party.checkerEmail),
  });

  /** The maker asks, the checker approves: the directory serving the API has the new secret. */
  async function rotate(keyID: string): Promise<void> {
    const { maker, checker } = await users();
    expect(
      await decideOnApiKeyRotation(
        sys.backOffice,
        maker,
        keyID,
        { type: 'request', reason: 'yearly rotation' },
        randomUUID(),
      ),
    ).toEqual({ keyID, rotation: 'pending', position: expect.any(Number) });
    const before = sys.system.directory.get(keyID)!.secretHash;
    const approved = await approveApiKeyRotation(sys.backOffice, checker, keyID, randomUUID());
    expect(approved).toEqual({
      keyID,
      heldFor: maker.userID,
      previousValidUntil: new Date(now.getTime() + 2 * 3_600_000).toISOString(),
      position: expect.any(Number),
    });
    await waitFor(() => sys.system.directory.get(keyID)!.secretHash !== before);
  }

  it('when a rotation is approved, then the new key works, the old one until the overlap ends, and after it the old one gets 401', async () => {
    const { keyID, apiKey: oldKey } = await party.key();
    const { maker, checker } = await users();
    const expiresAt = sys.system.directory.get(keyID)!.expiresAt;

    await rotate(keyID);
    // The checker never holds the new secret; the maker who asked collects it, once.
    await expect(collectCredential(sys.backOffice, checker, { kind: 'api-key', id: keyID })).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    const { apiKey: newKey } = await collectCredential(sys.backOffice, maker, { kind: 'api-key', id: keyID });
    expect(parseApiKey(newKey)?.keyID).toBe(keyID);
    expect(newKey).not.toBe(oldKey);
    expect(sys.system.directory.get(keyID)).toMatchObject({ status: 'active', expiresAt, secretHolder: maker.userID });

    expect((await balance(newKey)).status).toBe(200);
    expect((await balance(oldKey)).status).toBe(200);
    now = new Date(now.getTime() + 2 * 3_600_000 - 1000);
    expect((await balance(oldKey)).status).toBe(200);

    now = new Date(now.getTime() + 1000);
    const refused = await balance(oldKey);
    const wrong = await balance(`${keyID}.${'A'.repeat(43)}`);
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({ ...wrong.body, instance: refused.body.instance, requestId: refused.body.requestId });
    expect((await balance(newKey)).status).toBe(200);
  });

  it('when a second rotation is approved before the first secret was collected, then the maker collects only the newest, which works', async () => {
    now = new Date('2030-07-01T08:00:00.000Z');
    const { keyID } = await party.key();
    await rotate(keyID);
    await rotate(keyID);
    const { maker } = await users();
    const { apiKey } = await collectCredential(sys.backOffice, maker, { kind: 'api-key', id: keyID });
    expect(hashSecret(parseApiKey(apiKey)!.secret)).toBe(sys.system.directory.get(keyID)!.secretHash);
    expect((await balance(apiKey)).status).toBe(200);
    await expect(collectCredential(sys.backOffice, maker, { kind: 'api-key', id: keyID })).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
  });
});
