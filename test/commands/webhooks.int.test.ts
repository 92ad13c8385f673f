import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { collectCredential, type ActiveUser } from '../../src/commands/back-office.ts';
import { testCredentials } from '../support/credentials.ts';
import {
  approveWebhookEndpoint,
  disableWebhookEndpoint,
  disableWebhookEndpointBySystem,
  rejectWebhookEndpoint,
  requestWebhookEndpoint,
  type WebhookCommandDeps,
} from '../../src/commands/webhooks.ts';
import { DomainError } from '../../src/domain/errors.ts';
import type { WebhookEndpointApproved } from '../../src/domain/events.ts';
import { streams } from '../../src/domain/streams.ts';
import { isWebhookSecret, openWebhookSecret } from '../../src/domain/webhook-secrets.ts';
import type { EventStore } from '../../src/ports/event-store.ts';
import { tempDir } from '../support/temp-dir.ts';

/** The webhook-endpoint handlers against the real embedded event store: validation, ids, time, the sealed secret. */
const party = { type: 'merchant', id: 'm-acme' } as const;
const user = (userID: string, roles: Array<'maker' | 'checker'>): ActiveUser => ({
  status: 'active',
  userID,
  party,
  email: `${userID}@acme.test`,
  passwordHash: 'x',
  roles,
  platformAdmin: false,
  mustChangePassword: false,
});
const maker = user('u-maker', ['maker']);
const checker = user('u-checker', ['checker']);

let dir: ReturnType<typeof tempDir>;
let store: EventStore;
let deps: WebhookCommandDeps;
let vault: Awaited<ReturnType<typeof testCredentials>>;

beforeEach(async () => {
  dir = tempDir();
  store = openSqliteEventStore({ file: join(dir.path, 'events.db') });
  vault = await testCredentials();
  deps = {
    store,
    clock: () => new Date('2026-03-01T12:00:00Z'),
    assetScale: 2,
    secretsKey: randomBytes(32),
    allowInsecureLocalhost: false,
    credentials: vault.credentials,
  };
  // Given the two users as the history knows them: an approval checks that its maker is still one.
  for (const { userID, email, roles } of [maker, checker]) {
    await store.append(
      streams.user(userID),
      [
        {
          type: 'UserAdded',
          data: {
            userID,
            party,
            email,
            passwordHash: 'x',
            roles,
            platformAdmin: false,
            mustChangePassword: false,
            addedAt: '2026-03-01T00:00:00.000Z',
          },
          metadata: { actor: 'operator:test' },
        },
      ],
      'no_stream',
    );
  }
});
afterEach(async () => {
  await vault.close();
  await store.close?.();
  dir.cleanup();
});

async function refused(action: Promise<unknown>): Promise<string> {
  const error = await action.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(DomainError);
  return (error as DomainError).code;
}

describe('webhook endpoint commands', () => {
  it('when a maker registers and a checker approves, then the secret is held for the maker alone, collected once, and the event keeps it only sealed', async () => {
    const { endpointID } = await requestWebhookEndpoint(
      deps,
      maker,
      { url: 'https://shop.example/hooks', eventTypes: 'operation.completed,payment.received' },
      'corr-1',
    );
    const approved = await approveWebhookEndpoint(deps, checker, endpointID, 'corr-2');
    expect(approved).toEqual({ endpointID, heldFor: 'u-maker' });
    expect(await refused(collectCredential(deps, checker, { kind: 'webhook-endpoint', id: endpointID }))).toBe(
      'NOT_FOUND',
    );
    const { signingSecret: secret } = await collectCredential(deps, maker, {
      kind: 'webhook-endpoint',
      id: endpointID,
    });
    expect(isWebhookSecret(secret)).toBe(true);
    expect(await refused(collectCredential(deps, maker, { kind: 'webhook-endpoint', id: endpointID }))).toBe(
      'NOT_FOUND',
    );

    const events = await store.readStream(streams.webhookEndpoint(endpointID));
    expect(events.map((event) => event.type)).toEqual(['WebhookEndpointRequested', 'WebhookEndpointApproved']);
    expect(events[0]!.data).toMatchObject({
      url: 'https://shop.example/hooks',
      eventTypes: ['operation.completed', 'payment.received'],
      requestedBy: 'u-maker',
      requestedAt: '2026-03-01T12:00:00.000Z',
    });
    expect(events[1]!.metadata).toMatchObject({ actor: 'user:u-checker', correlationId: 'corr-2' });
    expect(JSON.stringify(events)).not.toContain(secret.slice(6));
    expect(
      openWebhookSecret(deps.secretsKey, endpointID, (events[1]!.data as WebhookEndpointApproved['data']).secret),
    ).toBe(secret);
  });

  it('when the URL is http to localhost, then it is refused unless the deployment allows it', async () => {
    const input = { url: 'http://127.0.0.1:9999/hooks', eventTypes: ['operation.failed'] };
    expect(await refused(requestWebhookEndpoint(deps, maker, input, 'c'))).toBe('INVALID_INPUT');
    await expect(
      requestWebhookEndpoint({ ...deps, allowInsecureLocalhost: true }, maker, input, 'c'),
    ).resolves.toMatchObject({ endpointID: expect.stringMatching(/^whe_/) });
  });

  it('when a checker rejects, then approval is no longer possible', async () => {
    const { endpointID } = await requestWebhookEndpoint(
      deps,
      maker,
      { url: 'https://shop.example/h', eventTypes: ['api_key.revoked'] },
      'c',
    );
    await rejectWebhookEndpoint(deps, checker, endpointID, 'not our shop', 'c');
    expect(await refused(approveWebhookEndpoint(deps, checker, endpointID, 'c'))).toBe('WRONG_STATE');
  });

  it('when a maker disables an active endpoint, then the system cannot disable it again', async () => {
    const { endpointID } = await requestWebhookEndpoint(
      deps,
      maker,
      { url: 'https://shop.example/h', eventTypes: ['api_key.revoked'] },
      'c',
    );
    await approveWebhookEndpoint(deps, checker, endpointID, 'c');
    await disableWebhookEndpoint(deps, maker, endpointID, 'moving host', 'c');
    expect(
      await refused(
        disableWebhookEndpointBySystem(deps, endpointID, 'failing for a day', {
          actor: 'system:webhooks',
          correlationId: 'c',
        }),
      ),
    ).toBe('WRONG_STATE');
  });

  it('when an endpoint id is malformed, then it is not found without a lookup', async () => {
    expect(await refused(approveWebhookEndpoint(deps, checker, '../etc', 'c'))).toBe('NOT_FOUND');
  });
});
