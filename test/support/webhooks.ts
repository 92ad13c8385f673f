import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { embeddedSecretsKey } from '../../src/adapters/secrets-key-file.ts';
import { findUserByEmail } from '../../src/commands/back-office.ts';
import { requestWebhookEndpoint, type WebhookCommandDeps } from '../../src/commands/webhooks.ts';
import { approveAndCollectEndpoint } from './credentials.ts';
import type { WebhookEventType } from '../../src/domain/events.ts';
import { approve, issue, waitUntilSettled, type PartsTestSystem } from './executor-system.ts';
import { call, type TestParty, type TestSystem } from './system.ts';
import { receiverAt } from './webhook-receiver.ts';

/** What the webhook tests set up again and again: a paying distributor, its endpoints, its cash-ins. */
export type PayingParty = TestParty & { apiKey: string; keyID: string; phone: string };

/** A distributor with a key, a registered phone to pay, and `float` issued and executed (an executor must run). */
export async function payingDistributor(sys: PartsTestSystem, phone: string, float = '1000'): Promise<PayingParty> {
  const distributor = await sys.party('distributor');
  const { apiKey, keyID } = await distributor.key();
  const registered = await sys.individual(phone);
  await waitUntilSettled(sys, await issue(sys, distributor.ref, float));
  return { ...distributor, apiKey, keyID, phone: registered };
}

/** The webhook commands on a test system (http://127.0.0.1 allowed), sealing with the key its processes use. */
export const webhookDeps = (sys: Pick<TestSystem, 'backOffice' | 'config'>): WebhookCommandDeps => ({
  ...sys.backOffice,
  secretsKey: sys.config.SECRETS_KEY ?? embeddedSecretsKey(sys.config.DATA_DIR),
  allowInsecureLocalhost: true,
});

/**
 * A maker of the party registers the endpoint, a checker approves it: its id and signing secret. The test
 * receiver at that URL, if any, then verifies every delivery with that secret (the standardwebhooks library).
 */
export async function registerEndpoint(
  sys: Pick<TestSystem, 'backOffice' | 'config'>,
  party: TestParty,
  url: string,
  eventTypes: WebhookEventType[],
): Promise<{ endpointID: string; secret: string }> {
  const maker = await findUserByEmail(sys.backOffice, party.makerEmail);
  const checker = await findUserByEmail(sys.backOffice, party.checkerEmail);
  const { endpointID } = await requestWebhookEndpoint(webhookDeps(sys), maker, { url, eventTypes }, randomUUID());
  const secret = await approveAndCollectEndpoint(webhookDeps(sys), checker, maker, endpointID);
  receiverAt(url)?.trust(secret);
  return { endpointID, secret };
}

/** A cash-in of `amount` to the party's phone (or as `body` says), created over HTTP: its operation id. */
export async function cashIn(
  sys: Pick<TestSystem, 'baseUrl'>,
  party: PayingParty,
  body: Record<string, unknown> = {},
): Promise<string> {
  const r = await call(sys.baseUrl, 'POST', `/api/v1/distributors/${party.ref.id}/operations`, {
    apiKey: party.apiKey,
    body: {
      operationType: 'cash-in',
      amount: '1',
      ...(body.merchantToShortCode === undefined ? { phoneTo: party.phone } : {}),
      ...body,
    },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.operationID as string;
}

/** A cash-in created, approved by the party's checker and carried out by the executor: completed. */
export async function completedCashIn(
  sys: PartsTestSystem,
  party: PayingParty,
  body?: Record<string, unknown>,
): Promise<string> {
  const operationID = await cashIn(sys, party, body);
  await approve(sys, party, operationID);
  expect((await waitUntilSettled(sys, operationID)).status).toBe('completed');
  return operationID;
}
