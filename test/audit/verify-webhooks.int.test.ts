/**
 * audit verify on webhook endpoints: the same maker-checker as API keys. A history made by the real commands
 * passes; forged ones (a self-approved endpoint, a disabling by another party's user) fail.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { withHashChain } from '../../src/audit/hash-chain.ts';
import { verifyHistory } from '../../src/audit/verify.ts';
import { addUser, findUserByEmail, onboardParty } from '../../src/commands/back-office.ts';
import {
  approveWebhookEndpoint,
  disableWebhookEndpoint,
  disableWebhookEndpointBySystem,
  rejectWebhookEndpoint,
  requestWebhookEndpoint,
  type WebhookCommandDeps,
} from '../../src/commands/webhooks.ts';
import type { EventStore, NewEvent } from '../../src/ports/event-store.ts';
import { tempDir } from '../support/temp-dir.ts';
import { testCredentials } from '../support/credentials.ts';

const party = { type: 'merchant' as const, id: 'm1' };
const at = '2026-01-01T00:00:00Z';
const meta = { actor: 'operator:test' };
const sealed = { sealedWith: '0'.repeat(16), iv: 'aXY=', tag: 'dGFn', data: 'ZA==' };

describe('audit verify: maker-checker on webhook endpoints', { timeout: 60_000 }, () => {
  let dir: ReturnType<typeof tempDir>;
  let store: EventStore;

  beforeEach(() => {
    dir = tempDir('verify-webhooks-');
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
  const user = (userID: string, roles: string[], of = party): NewEvent => ({
    type: 'UserAdded',
    data: {
      userID,
      party: of,
      email: `${userID}@x.test`,
      passwordHash: 'x',
      roles,
      platformAdmin: false,
      mustChangePassword: false,
      addedAt: at,
    },
    metadata: meta,
  });
  const requested = (endpointID: string, requestedBy: string): NewEvent => ({
    type: 'WebhookEndpointRequested',
    data: {
      endpointID,
      party,
      url: 'https://shop.example/h',
      eventTypes: ['operation.completed'],
      requestedBy,
      requestedAt: at,
    },
    metadata: meta,
  });

  it('when endpoints are registered, approved, rejected and disabled by the commands, then nothing is wrong', async () => {
    const vault = await testCredentials();
    const deps: WebhookCommandDeps = {
      store,
      clock: () => new Date(),
      assetScale: 2,
      secretsKey: randomBytes(32),
      allowInsecureLocalhost: false,
      credentials: vault.credentials,
    };
    const operator = { actor: 'operator:test', correlationId: 'c' };
    const { partyID } = await onboardParty(
      deps,
      { partyType: 'merchant', name: 'Hook Shop', shortCode: '7001' },
      operator,
    );
    const merchant = { type: 'merchant' as const, id: partyID };
    await addUser(
      deps,
      { party: merchant, email: 'maker@hooks.test', password: 'maker password 1', roles: ['maker'] },
      operator,
    );
    await addUser(
      deps,
      { party: merchant, email: 'checker@hooks.test', password: 'checker password 1', roles: ['checker'] },
      operator,
    );
    const [maker, checker] = [
      await findUserByEmail(deps, 'maker@hooks.test'),
      await findUserByEmail(deps, 'checker@hooks.test'),
    ];
    const a = await requestWebhookEndpoint(
      deps,
      maker,
      { url: 'https://shop.example/a', eventTypes: 'operation.completed' },
      'c',
    );
    await approveWebhookEndpoint(deps, checker, a.endpointID, 'c');
    await disableWebhookEndpoint(deps, maker, a.endpointID, 'moved', 'c');
    const b = await requestWebhookEndpoint(
      deps,
      maker,
      { url: 'https://shop.example/b', eventTypes: 'payment.received' },
      'c',
    );
    await rejectWebhookEndpoint(deps, checker, b.endpointID, null, 'c');
    const c = await requestWebhookEndpoint(
      deps,
      maker,
      { url: 'https://shop.example/c', eventTypes: 'api_key.revoked' },
      'c',
    );
    await approveWebhookEndpoint(deps, checker, c.endpointID, 'c');
    await disableWebhookEndpointBySystem(deps, c.endpointID, 'deliveries failed for a day', operator);
    await vault.close();
    expect(await problems()).toEqual([]);
  });

  it('when an endpoint is approved by its maker, or disabled by a user of another party, then maker-checker fails', async () => {
    await store.append('user-mc', [user('mc', ['maker', 'checker'])], 'no_stream');
    await store.append('user-x', [user('x', ['maker', 'checker'], { type: 'merchant', id: 'm2' })], 'no_stream');
    await store.append(
      'webhookEndpoint-w1',
      [
        requested('w1', 'mc'),
        {
          type: 'WebhookEndpointApproved',
          data: { endpointID: 'w1', approvedBy: 'mc', approvedAt: at, secret: sealed },
          metadata: meta,
        },
      ],
      'no_stream',
    );
    await store.append(
      'webhookEndpoint-w1',
      [
        {
          type: 'WebhookEndpointDisabled',
          data: { endpointID: 'w1', disabledBy: 'x', reason: 'r', disabledAt: at },
          metadata: meta,
        },
      ],
      1,
    );
    const details = await problems();
    expect(details.some((d) => d.includes('webhook endpoint approved of w1 by user mc, who requested it'))).toBe(true);
    expect(
      details.some((d) =>
        d.includes('webhook endpoint disabled of w1 by x, neither the system nor a maker or checker of merchant:m1'),
      ),
    ).toBe(true);
  });

  it('when a decision arrives for an endpoint never requested, or out of order, then the history is refused', async () => {
    await store.append('user-m', [user('m', ['maker'])], 'no_stream');
    await store.append(
      'webhookEndpoint-w2',
      [
        {
          type: 'WebhookEndpointDisabled',
          data: { endpointID: 'w2', disabledBy: 'system', reason: 'r', disabledAt: at },
          metadata: meta,
        },
      ],
      'no_stream',
    );
    await store.append(
      'webhookEndpoint-w3',
      [
        requested('w3', 'm'),
        {
          type: 'WebhookEndpointDisabled',
          data: { endpointID: 'w3', disabledBy: 'system', reason: 'r', disabledAt: at },
          metadata: meta,
        },
      ],
      'no_stream',
    );
    const details = await problems();
    expect(details.some((d) => d.includes('webhook endpoint w2, which was never requested'))).toBe(true);
    expect(
      details.some((d) => d.includes('WebhookEndpointDisabled of webhook endpoint w3 while it is pending, not active')),
    ).toBe(true);
  });
});
