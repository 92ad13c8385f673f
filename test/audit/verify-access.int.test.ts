/**
 * audit verify on console users and maker-checker on access: a history made by the real commands passes;
 * forged histories (a self-approved request, a widening without a request, a disabled checker) fail.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { withHashChain } from '../../src/audit/hash-chain.ts';
import { verifyHistory } from '../../src/audit/verify.ts';
import { addUser, findUserByEmail, onboardParty, type CredentialDeps } from '../../src/commands/back-office.ts';
import { testCredentials } from '../support/credentials.ts';
import { approveAccessRequest, disableUser, requestAccessChange } from '../../src/commands/user-admin.ts';
import type { EventStore, NewEvent } from '../../src/ports/event-store.ts';
import { tempDir } from '../support/temp-dir.ts';

const party = { type: 'distributor' as const, id: 'd1' };
const at = '2026-01-01T00:00:00Z';
const meta = { actor: 'operator:test' };

describe('audit verify: maker-checker on access', { timeout: 120_000 }, () => {
  let dir: ReturnType<typeof tempDir>;
  let store: EventStore;

  beforeEach(() => {
    dir = tempDir('verify-access-');
    store = withHashChain(openSqliteEventStore({ file: join(dir.path, 'events.sqlite') }));
  });
  afterEach(async () => {
    await store.close();
    dir.cleanup();
  });

  const problems = async () =>
    (await verifyHistory({ eventStore: store, ledger: null, assetScale: 2 })).problems
      .filter((p) => p.check === 'maker-checker')
      .map((p) => p.detail);
  const user = (userID: string, roles: string[], platformAdmin = false): NewEvent => ({
    type: 'UserAdded',
    data: {
      userID,
      party: platformAdmin ? null : party,
      email: `${userID}@x.test`,
      passwordHash: 'x',
      roles,
      platformAdmin,
      mustChangePassword: false,
      addedAt: at,
    },
    metadata: meta,
  });
  const requested = (requestID: string, requestedBy: string, change: Record<string, unknown>): NewEvent => ({
    type: 'AccessRequested',
    data: { requestID, change, reason: null, requestedBy, requestedAt: at },
    metadata: meta,
  });
  const keyRequestedAndApproved = (approvedBy: string) =>
    store.append(
      'apikey-k1',
      [
        {
          type: 'ApiKeyRequested',
          data: {
            keyID: 'k1',
            party,
            label: 'till',
            permissions: ['Read Balance'],
            maxTransactionAmount: null,
            maxDailyVolume: null,
            allowedIPs: [],
            expiresInDays: 30,
            requestedBy: 'maker',
            requestedAt: at,
          },
          metadata: meta,
        },
        {
          type: 'ApiKeyApproved',
          data: { keyID: 'k1', approvedBy, approvedAt: at, expiresAt: '2099-01-01T00:00:00Z', secretHash: 'x' },
          metadata: meta,
        },
      ],
      'no_stream',
    );

  it('when two administrators add a user, give a role, and one disables and the other re-enables, then nothing is wrong', async () => {
    const vault = await testCredentials();
    const deps: CredentialDeps = { store, clock: () => new Date(), assetScale: 2, credentials: vault.credentials };
    const operator = () => ({ actor: 'operator:test', correlationId: randomUUID() });
    const { partyID } = await onboardParty(
      deps,
      { partyType: 'distributor', name: 'Acme', shortCode: '1001' },
      operator(),
    );
    await addUser(
      deps,
      { party: null, email: 'a@platform.test', password: 'admin password 1', roles: [], platformAdmin: true },
      operator(),
    );
    await addUser(
      deps,
      { party: null, email: 'b@platform.test', password: 'admin password 2', roles: [], platformAdmin: true },
      operator(),
    );
    const [a, b] = [await findUserByEmail(deps, 'a@platform.test'), await findUserByEmail(deps, 'b@platform.test')];
    const context = (who: typeof a) => ({ actor: `user:${who.userID}`, correlationId: randomUUID() });
    const add = await requestAccessChange(
      deps,
      a,
      { kind: 'add-user', party: { type: 'distributor', id: partyID }, email: 'new@acme.test', roles: 'maker' },
      null,
      context(a),
    );
    await approveAccessRequest(deps, b, add.requestID, context(b));
    const added = await findUserByEmail(deps, 'new@acme.test');
    await approveAccessRequest(
      deps,
      a,
      (
        await requestAccessChange(
          deps,
          b,
          { kind: 'add-role', userID: added.userID, role: 'checker' },
          'cover',
          context(b),
        )
      ).requestID,
      context(a),
    );
    await disableUser(deps, a, added.userID, 'on leave', context(a));
    await approveAccessRequest(
      deps,
      a,
      (await requestAccessChange(deps, b, { kind: 'enable-user', userID: added.userID }, null, context(b))).requestID,
      context(a),
    );
    await vault.close();
    expect(await problems()).toEqual([]);
  });

  it('when an access request is approved by its own requester, or by the subject of the change, then maker-checker fails', async () => {
    await store.append('user-a', [user('a', [], true)], 'no_stream');
    await store.append('user-b', [user('b', [], true)], 'no_stream');
    await store.append('user-u', [user('u', ['maker'])], 'no_stream');
    await store.append(
      'accessRequest-r1',
      [
        requested('r1', 'a', { kind: 'add-role', userID: 'u', email: 'u@x.test', role: 'checker' }),
        { type: 'AccessRequestApproved', data: { requestID: 'r1', approvedBy: 'a', approvedAt: at }, metadata: meta },
      ],
      'no_stream',
    );
    await store.append(
      'accessRequest-r2',
      [
        requested('r2', 'a', { kind: 'reset-password', userID: 'b', email: 'b@x.test' }),
        { type: 'AccessRequestApproved', data: { requestID: 'r2', approvedBy: 'b', approvedAt: at }, metadata: meta },
      ],
      'no_stream',
    );
    const details = await problems();
    expect(details.some((d) => d.includes('access request r1 by user a, who requested it'))).toBe(true);
    expect(details.some((d) => d.includes('access request r2 by user b, whose own access it changes'))).toBe(true);
  });

  it('when a party user requests access, or a user is widened without an approved request for exactly that, then maker-checker fails', async () => {
    await store.append('user-a', [user('a', [], true)], 'no_stream');
    await store.append('user-u', [user('u', ['maker'])], 'no_stream');
    await store.append(
      'accessRequest-r1',
      [requested('r1', 'u', { kind: 'add-role', userID: 'a', email: 'a@x.test', role: 'checker' })],
      'no_stream',
    );
    await store.append(
      'accessRequest-r2',
      [requested('r2', 'a', { kind: 'add-role', userID: 'u', email: 'u@x.test', role: 'maker' })],
      'no_stream',
    );
    await store.append(
      'user-u',
      [
        {
          type: 'UserRoleAdded',
          data: { userID: 'u', role: 'checker', requestID: 'r2', approvedBy: 'a', addedAt: at },
          metadata: meta,
        },
        {
          type: 'UserEnabled',
          data: { userID: 'u', requestID: 'none', approvedBy: 'a', enabledAt: at },
          metadata: meta,
        },
      ],
      0,
    );
    const details = await problems();
    expect(
      details.some((d) =>
        d.includes('AccessRequested of access request r1 by user u, who is not a platform administrator'),
      ),
    ).toBe(true);
    expect(
      details.some((d) => d.includes('UserRoleAdded of user u without an approved access request for it (r2)')),
    ).toBe(true);
    expect(
      details.some((d) => d.includes('UserEnabled of user u without an approved access request for it (none)')),
    ).toBe(true);
  });

  it('when a checker got the role through an approved request, then their approvals pass; once disabled, an approval of theirs fails', async () => {
    await store.append('user-a', [user('a', [], true)], 'no_stream');
    await store.append('user-b', [user('b', [], true)], 'no_stream');
    await store.append('user-maker', [user('maker', ['maker'])], 'no_stream');
    await store.append('user-c', [user('c', ['maker'])], 'no_stream');
    await store.appendMulti([
      {
        stream: 'accessRequest-r1',
        expectedRevision: 'no_stream',
        events: [
          requested('r1', 'a', { kind: 'add-role', userID: 'c', email: 'c@x.test', role: 'checker' }),
          { type: 'AccessRequestApproved', data: { requestID: 'r1', approvedBy: 'b', approvedAt: at }, metadata: meta },
        ],
      },
      {
        stream: 'user-c',
        expectedRevision: 0,
        events: [
          {
            type: 'UserRoleAdded',
            data: { userID: 'c', role: 'checker', requestID: 'r1', approvedBy: 'b', addedAt: at },
            metadata: meta,
          },
        ],
      },
    ]);
    await keyRequestedAndApproved('c');
    expect(await problems()).toEqual([]);

    await store.append(
      'user-c',
      [
        {
          type: 'UserDisabled',
          data: { userID: 'c', disabledBy: 'a', reason: 'left', disabledAt: at },
          metadata: meta,
        },
      ],
      1,
    );
    await store.append(
      'apikey-k2',
      [
        {
          type: 'ApiKeyRequested',
          data: {
            keyID: 'k2',
            party,
            label: 'till 2',
            permissions: ['Read Balance'],
            maxTransactionAmount: null,
            maxDailyVolume: null,
            allowedIPs: [],
            expiresInDays: 30,
            requestedBy: 'maker',
            requestedAt: at,
          },
          metadata: meta,
        },
        {
          type: 'ApiKeyApproved',
          data: { keyID: 'k2', approvedBy: 'c', approvedAt: at, expiresAt: '2099-01-01T00:00:00Z', secretHash: 'x' },
          metadata: meta,
        },
      ],
      'no_stream',
    );
    expect(await problems()).toEqual([expect.stringContaining('by user c, who is disabled')]);
  });

  it('when a departure ends a key by the system, then it passes only for the key of the maker who was just disabled', async () => {
    await store.append('user-a', [user('a', [], true)], 'no_stream');
    await store.append('user-maker', [user('maker', ['maker'])], 'no_stream');
    await store.append('user-c', [user('c', ['checker'])], 'no_stream');
    await keyRequestedAndApproved('c');
    const revokedBySystem = (departedUserID: string): NewEvent => ({
      type: 'ApiKeyRevoked',
      data: { keyID: 'k1', approvedBy: 'system', revokedAt: at, departedUserID },
      metadata: meta,
    });
    // Forged: the maker is still active, and c is not the key's maker.
    await store.append('apikey-k1', [revokedBySystem('c')], 1);
    expect(await problems()).toEqual([expect.stringContaining('is not its maker who left')]);
  });

  it('when the maker is disabled and their key revoked by the system in the same append, then nothing is wrong', async () => {
    await store.append('user-a', [user('a', [], true)], 'no_stream');
    await store.append('user-maker', [user('maker', ['maker'])], 'no_stream');
    await store.append('user-c', [user('c', ['checker'])], 'no_stream');
    await keyRequestedAndApproved('c');
    await store.appendMulti([
      {
        stream: 'user-maker',
        expectedRevision: 0,
        events: [
          {
            type: 'UserDisabled',
            data: { userID: 'maker', disabledBy: 'a', reason: 'left', disabledAt: at },
            metadata: meta,
          },
        ],
      },
      {
        stream: 'apikey-k1',
        expectedRevision: 1,
        events: [
          {
            type: 'ApiKeyRevoked',
            data: { keyID: 'k1', approvedBy: 'system', revokedAt: at, departedUserID: 'maker' },
            metadata: meta,
          },
        ],
      },
    ]);
    expect(await problems()).toEqual([]);
  });
});
