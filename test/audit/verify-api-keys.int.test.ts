/**
 * audit verify on the API-key lifecycle's withdrawal: a request taken back by its maker through the command
 * passes; one "withdrawn" by somebody else, or after a decision, is named. And on secret rotations (keys and
 * webhook endpoints alike): made with the commands they pass; decided by their requester they are named.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { withHashChain } from '../../src/audit/hash-chain.ts';
import { keyHistory } from '../../src/audit/queries.ts';
import { verifyHistory } from '../../src/audit/verify.ts';
import {
  addUser,
  approveApiKey,
  approveApiKeyRotation,
  decideOnApiKey,
  decideOnApiKeyRotation,
  findUserByEmail,
  onboardParty,
  requestApiKey,
  type BackOfficeDeps,
} from '../../src/commands/back-office.ts';
import {
  approveWebhookEndpoint,
  approveWebhookSecretRotation,
  decideOnWebhookSecretRotation,
  requestWebhookEndpoint,
} from '../../src/commands/webhooks.ts';
import { testCredentials } from '../support/credentials.ts';
import type { EventStore, NewEvent } from '../../src/ports/event-store.ts';
import { tempDir } from '../support/temp-dir.ts';

const party = { type: 'merchant' as const, id: 'm1' };
const at = '2026-01-01T00:00:00Z';
const meta = { actor: 'operator:test' };

describe('audit verify: withdrawn API-key requests', { timeout: 60_000 }, () => {
  let dir: ReturnType<typeof tempDir>;
  let store: EventStore;

  beforeEach(() => {
    dir = tempDir('verify-keys-');
    store = withHashChain(openSqliteEventStore({ file: join(dir.path, 'events.sqlite') }));
  });
  afterEach(async () => {
    await store.close();
    dir.cleanup();
  });

  const problems = async () =>
    (await verifyHistory({ eventStore: store, ledger: null, assetScale: 2 })).problems
      .filter((p) => p.check === 'maker-checker' || p.check === 'operation')
      .map((p) => p.detail);
  const user = (userID: string, roles: string[]): NewEvent => ({
    type: 'UserAdded',
    data: {
      userID,
      party,
      email: `${userID}@x.test`,
      passwordHash: 'x',
      roles,
      platformAdmin: false,
      mustChangePassword: false,
      addedAt: at,
    },
    metadata: meta,
  });
  const requested = (keyID: string, requestedBy: string): NewEvent => ({
    type: 'ApiKeyRequested',
    data: {
      keyID,
      party,
      label: 'till',
      permissions: ['read-balance'],
      maxTransactionAmount: null,
      maxDailyVolume: null,
      allowedIPs: [],
      expiresInDays: 30,
      requestedBy,
      requestedAt: at,
    },
    metadata: meta,
  });
  /** Approved by checker `c`, expiring a month after `at`. */
  const keyApproved = (keyID: string): NewEvent => ({
    type: 'ApiKeyApproved',
    data: { keyID, approvedBy: 'c', approvedAt: at, expiresAt: '2026-02-01T00:00:00Z', secretHash: 'ab'.repeat(32) },
    metadata: meta,
  });
  const withdrawn = (keyID: string, withdrawnBy: string): NewEvent => ({
    type: 'ApiKeyRequestWithdrawn',
    data: { keyID, withdrawnBy, withdrawnAt: at },
    metadata: meta,
  });

  it('when a maker withdraws their own pending request with the command, then nothing is wrong', async () => {
    const deps: BackOfficeDeps = { store, clock: () => new Date(), assetScale: 2 };
    const operator = { actor: 'operator:test', correlationId: 'c' };
    const { partyID } = await onboardParty(
      deps,
      { partyType: 'merchant', name: 'Key Shop', shortCode: '7101' },
      operator,
    );
    await addUser(
      deps,
      {
        party: { type: 'merchant', id: partyID },
        email: 'maker@keys.test',
        password: 'maker password 1',
        roles: ['maker'],
      },
      operator,
    );
    const maker = await findUserByEmail(deps, 'maker@keys.test');
    const { keyID } = await requestApiKey(deps, maker, { label: 'till 9', permissions: ['read-balance'] }, 'c');
    expect(await decideOnApiKey(deps, maker, keyID, { type: 'WithdrawApiKeyRequest' }, 'c')).toEqual({
      keyID,
      state: 'withdrawn',
      position: await store.headPosition(),
    });
    expect(await problems()).toEqual([]);
    const history = await keyHistory(store, keyID);
    expect(history.status).toBe('withdrawn');
    expect(history.lifecycle.map((e) => [e.type, e.role, e.by])).toEqual([
      ['ApiKeyRequested', 'maker', 'maker@keys.test'],
      ['ApiKeyRequestWithdrawn', 'maker', 'maker@keys.test'],
    ]);
  });

  it('when a request is withdrawn by another user, or after it was approved, then verify names it', async () => {
    await store.append('user-m', [user('m', ['maker'])], 'no_stream');
    await store.append('user-c', [user('c', ['checker'])], 'no_stream');
    await store.append('apikey-key_A', [requested('key_A', 'm'), withdrawn('key_A', 'c')], 'no_stream');
    await store.append(
      'apikey-key_B',
      [
        requested('key_B', 'm'),
        {
          type: 'ApiKeyApproved',
          data: {
            keyID: 'key_B',
            approvedBy: 'c',
            approvedAt: at,
            expiresAt: '2026-02-01T00:00:00Z',
            secretHash: 'ab'.repeat(32),
          },
          metadata: meta,
        },
        withdrawn('key_B', 'm'),
      ],
      'no_stream',
    );
    const details = await problems();
    expect(
      details.some((d) => d.includes('key requestwithdrawn of key_A by c, not the maker who requested it (m)')),
    ).toBe(true);
    expect(
      details.some((d) => d.includes('ApiKeyRequestWithdrawn of API key key_B while it is active, not pending')),
    ).toBe(true);
  });

  it('when a key is requested by a stranger, a non-maker, a maker of another party or twice, or its revocation by a checker, then verify names each', async () => {
    const elsewhere = user('o', ['maker']);
    await store.append('user-m', [user('m', ['maker'])], 'no_stream');
    await store.append('user-c', [user('c', ['checker'])], 'no_stream');
    await store.append(
      'user-o',
      [{ ...elsewhere, data: { ...(elsewhere.data as object), party: { type: 'merchant', id: 'm2' } } }],
      'no_stream',
    );
    await store.append('apikey-key_S', [requested('key_S', 'nobody')], 'no_stream');
    await store.append('apikey-key_C', [requested('key_C', 'c')], 'no_stream');
    await store.append('apikey-key_O', [requested('key_O', 'o')], 'no_stream');
    await store.append('apikey-key_T', [requested('key_T', 'm'), requested('key_T', 'm')], 'no_stream');
    await store.append(
      'apikey-key_R',
      [
        requested('key_R', 'm'),
        keyApproved('key_R'),
        {
          type: 'ApiKeyRevocationRequested',
          data: { keyID: 'key_R', requestedBy: 'c', reason: 'lost', requestedAt: at },
          metadata: meta,
        },
      ],
      'no_stream',
    );
    expect(await problems()).toEqual([
      'key requested of key_S by nobody, who is not a user at that point',
      'key requested of key_C by user c, who does not have the maker role',
      'key requested of key_O by user o of merchant:m2, not of merchant:m1',
      'API key key_T requested twice',
      'key revocationrequested of key_R by c, not a maker of merchant:m1',
    ]);
  });

  it('when a key and a webhook endpoint are rotated with the commands, then nothing is wrong and the key history shows the rotation', async () => {
    const vault = await testCredentials();
    try {
      const deps = {
        store,
        clock: () => new Date(),
        assetScale: 2,
        credentials: vault.credentials,
        secretRotationOverlapHours: 24,
      };
      const operator = { actor: 'operator:test', correlationId: 'c' };
      const { partyID } = await onboardParty(
        deps,
        { partyType: 'merchant', name: 'Rotating Shop', shortCode: '7102' },
        operator,
      );
      const shop = { type: 'merchant' as const, id: partyID };
      await addUser(
        deps,
        { party: shop, email: 'maker@rot.test', password: 'maker password 1', roles: ['maker'] },
        operator,
      );
      await addUser(
        deps,
        { party: shop, email: 'checker@rot.test', password: 'checker password 1', roles: ['checker'] },
        operator,
      );
      const maker = await findUserByEmail(deps, 'maker@rot.test');
      const checker = await findUserByEmail(deps, 'checker@rot.test');
      const { keyID } = await requestApiKey(deps, maker, { label: 'till 9', permissions: ['read-balance'] }, 'c');
      await approveApiKey(deps, checker, keyID, 'c');
      await decideOnApiKeyRotation(deps, maker, keyID, { type: 'request', reason: 'yearly' }, 'c');
      await decideOnApiKeyRotation(deps, checker, keyID, { type: 'reject', reason: null }, 'c');
      await decideOnApiKeyRotation(deps, maker, keyID, { type: 'request', reason: 'yearly' }, 'c');
      await decideOnApiKeyRotation(deps, maker, keyID, { type: 'withdraw' }, 'c');
      await decideOnApiKeyRotation(deps, maker, keyID, { type: 'request', reason: 'yearly' }, 'c');
      await approveApiKeyRotation(deps, checker, keyID, 'c');
      const webhooks = { ...deps, secretsKey: randomBytes(32), allowInsecureLocalhost: false };
      const { endpointID } = await requestWebhookEndpoint(
        webhooks,
        maker,
        { url: 'https://shop.example/hooks', eventTypes: 'api_key.revoked' },
        'c',
      );
      await approveWebhookEndpoint(webhooks, checker, endpointID, 'c');
      await decideOnWebhookSecretRotation(webhooks, maker, endpointID, { type: 'request', reason: 'leaked' }, 'c');
      await approveWebhookSecretRotation(webhooks, checker, endpointID, 'c');

      expect(await problems()).toEqual([]);
      const history = await keyHistory(store, keyID);
      expect(history.status).toBe('active');
      expect(history.lifecycle.slice(-2).map((e) => [e.type, e.role, e.by])).toEqual([
        ['ApiKeyRotationRequested', 'maker', 'maker@rot.test'],
        ['ApiKeyRotated', 'checker', 'checker@rot.test'],
      ]);
    } finally {
      await vault.close();
    }
  });

  describe('who held a secret (src/domain/segregation.ts)', () => {
    const approvedKey: NewEvent = {
      type: 'ApiKeyApproved',
      data: {
        keyID: 'key_S',
        approvedBy: 'c',
        approvedAt: at,
        expiresAt: '2026-02-01T00:00:00Z',
        secretHash: 'ab'.repeat(32),
      },
      metadata: meta,
    };
    const rotationBy = (maker: string): NewEvent[] => [
      {
        type: 'ApiKeyRotationRequested',
        data: { keyID: 'key_S', requestedBy: maker, reason: 'handover', requestedAt: at },
        metadata: meta,
      },
      {
        type: 'ApiKeyRotated',
        data: {
          keyID: 'key_S',
          approvedBy: 'c',
          rotatedAt: at,
          secretHash: 'cd'.repeat(32),
          previousValidUntil: '2026-01-02T00:00:00Z',
          secretHolder: maker,
        },
        metadata: meta,
      },
    ];
    const operation = (operationID: string, secretGeneration?: number): NewEvent => ({
      type: 'OperationRequested',
      data: {
        operationID,
        party,
        keyID: 'key_S',
        ...(secretGeneration === undefined ? {} : { secretGeneration }),
        operationType: 'cash-in',
        amount: '1.00',
        fee: '0.00',
        payer: { kind: 'merchant', id: 'm1' },
        payee: { kind: 'individual', id: '+2348000000001' },
        payerName: 'Shop',
        payerShortCode: '7100',
        counterparty: { kind: 'individual', id: '+2348000000001', name: 'Ada' },
        memo: null,
        cashOutFulfillmentType: null,
        cashOutFulfillmentID: null,
        volumeDay: null,
        createdAt: at,
      },
      metadata: { actor: 'apikey:key_S' },
    });
    const approvedOp = (operationID: string, approvedBy: string, approvedAt = '2026-01-01T01:00:00Z'): NewEvent => ({
      type: 'OperationApproved',
      data: { operationID, approvedBy, approvedAt },
      metadata: meta,
    });

    beforeEach(async () => {
      await store.append('user-m', [user('m', ['maker'])], 'no_stream');
      await store.append('user-r', [user('r', ['maker', 'checker'])], 'no_stream');
      await store.append('user-c', [user('c', ['checker'])], 'no_stream');
      await store.append('apikey-key_S', [requested('key_S', 'm'), approvedKey, ...rotationBy('r')], 'no_stream');
    });

    it('when the maker of a rotation approves an operation made with the new secret, then verify names it; one that recorded no secret keeps the old rule', async () => {
      await store.append('operation-op_1', [operation('op_1', 2), approvedOp('op_1', 'r')], 'no_stream');
      await store.append('operation-op_2', [operation('op_2'), approvedOp('op_2', 'r')], 'no_stream');
      await store.append('operation-op_3', [operation('op_3', 1), approvedOp('op_3', 'c')], 'no_stream');
      const details = await problems();
      expect(details).toEqual([
        'approval of operation op_1 by user r, who held a secret of the API key key_S that created it (used-secret)',
      ]);
    });

    it('when a departure ends the previous secret of its holder, then nothing is wrong; ended for someone who stayed, it is named', async () => {
      const ended = (departedUserID: string): NewEvent => ({
        type: 'ApiKeyPreviousSecretEnded',
        data: { keyID: 'key_S', endedAt: '2026-01-01T02:00:00Z', departedUserID },
        metadata: meta,
      });
      const admin: NewEvent = {
        type: 'UserAdded',
        data: {
          userID: 'admin',
          party: null,
          email: 'admin@x.test',
          passwordHash: 'x',
          roles: [],
          platformAdmin: true,
          mustChangePassword: false,
          addedAt: at,
        },
        metadata: meta,
      };
      await store.append('user-admin', [admin], 'no_stream');
      await store.append(
        'user-m',
        [
          {
            type: 'UserDisabled',
            data: { userID: 'm', disabledBy: 'admin', reason: 'left', disabledAt: '2026-01-01T02:00:00Z' },
            metadata: meta,
          },
        ],
        'any',
      );
      await store.append('apikey-key_S', [ended('m')], 'any');
      // What the ended secret made is the system's to reject, never a checker's to approve.
      const rejectedBySystem: NewEvent = {
        type: 'OperationRejected',
        data: {
          operationID: 'op_4',
          rejectedBy: 'system:key-revocation',
          reason: 'ended',
          rejectedAt: '2026-01-01T02:00:01Z',
        },
        metadata: meta,
      };
      await store.append('operation-op_4', [operation('op_4', 1), rejectedBySystem], 'no_stream');
      expect(await problems()).toEqual([]);
      await store.append(
        'operation-op_5',
        [operation('op_5', 1), approvedOp('op_5', 'c', '2026-01-01T03:00:00Z')],
        'no_stream',
      );
      expect(await problems()).toEqual([
        "approval of operation op_5, whose API key secret had ended with its holder's departure",
      ]);
      await store.append('apikey-key_S', [ended('c')], 'any');
      expect((await problems()).some((d) => d.includes('by the system, but c is not its maker who left'))).toBe(true);
    });
  });

  it('when a rotation is approved by its requester, held for someone else, or decided with none pending, then verify names it', async () => {
    await store.append('user-m', [user('m', ['maker', 'checker'])], 'no_stream');
    await store.append('user-c', [user('c', ['checker'])], 'no_stream');
    const approved = keyApproved('key_R');
    const rotationRequested: NewEvent = {
      type: 'ApiKeyRotationRequested',
      data: { keyID: 'key_R', requestedBy: 'm', reason: 'yearly', requestedAt: at },
      metadata: meta,
    };
    const rotated = (approvedBy: string, secretHolder: string): NewEvent => ({
      type: 'ApiKeyRotated',
      data: {
        keyID: 'key_R',
        approvedBy,
        rotatedAt: at,
        secretHash: 'cd'.repeat(32),
        previousValidUntil: '2026-01-02T00:00:00Z',
        secretHolder,
      },
      metadata: meta,
    });
    await store.append(
      'apikey-key_R',
      [
        requested('key_R', 'm'),
        approved,
        rotationRequested,
        rotated('m', 'm'),
        rotationRequested,
        rotated('c', 'c'),
        rotated('c', 'm'),
      ],
      'no_stream',
    );
    const endpoint = (type: string, data: Record<string, unknown>): NewEvent => ({
      type,
      data: { endpointID: 'whe_R', ...data },
      metadata: meta,
    });
    await store.append(
      'webhookEndpoint-whe_R',
      [
        endpoint('WebhookEndpointRequested', {
          party,
          url: 'https://x.test/h',
          eventTypes: ['api_key.revoked'],
          requestedBy: 'm',
          requestedAt: at,
        }),
        endpoint('WebhookEndpointApproved', {
          approvedBy: 'c',
          approvedAt: at,
          secret: { sealedWith: 'x', iv: 'x', tag: 'x', data: 'x' },
        }),
        endpoint('WebhookSecretRotationRequested', { requestedBy: 'm', reason: 'leaked', requestedAt: at }),
        endpoint('WebhookSecretRotationWithdrawn', { withdrawnBy: 'c', withdrawnAt: at }),
      ],
      'no_stream',
    );
    const details = await problems();
    expect(details).toContain(
      'approval of the secret rotation of API key key_R by user m, who requested it (maker and checker must differ)',
    );
    expect(details).toContain(
      'secret rotation of API key key_R: new secret held for c, not for the maker who requested it (m)',
    );
    expect(details).toContain('ApiKeyRotated of API key key_R without a pending rotation');
    expect(details).toContain(
      'secret rotation of webhook endpoint whe_R withdrawn by c, not the maker who requested it (m)',
    );
  });
});
