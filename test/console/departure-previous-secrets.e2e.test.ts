import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  approveApiKeyRotation,
  collectCredential,
  decideOnApiKey,
  decideOnApiKeyRotation,
  findUserByEmail,
  requestApiKey,
} from '../../src/commands/back-office.ts';
import { approveWebhookSecretRotation, decideOnWebhookSecretRotation } from '../../src/commands/webhooks.ts';
import { streams } from '../../src/domain/streams.ts';
import { getRoute } from '../../src/webhooks/deliveries.ts';
import { approveAndCollectKey } from '../support/credentials.ts';
import { call, startTestSystem, waitFor, type TestParty, type TestSystem } from '../support/system.ts';
import { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { registerEndpoint, webhookDeps } from '../support/webhooks.ts';
import { ConsoleClient, createCashIn, extraUser, newPhone, OTHER_PASSWORD } from './console-client.ts';

/**
 * A maker leaves after another maker rotated their key and their webhook endpoint: the departure ends every
 * secret the leaver knows. Their old key secret gets 401 at once (the overlap had hours left), no delivery after
 * the departure verifies with their old signing secret (the standardwebhooks library, as a receiver verifies),
 * and a rotation they had asked for is withdrawn. The administrator's page lists all of it before the click.
 */
let sys: TestSystem;
let dist: TestParty;
let receiver: WebhookReceiver;
let adminEmail: string;
let phone: string;

beforeAll(async () => {
  // Every part: the key-revocation consumer (with the executor) rejects what the leaver's ended secret left pending.
  // Nothing here is approved, so credit()'s funds (no ledger transfer behind them) never reach the executor.
  sys = await startTestSystem({
    WEBHOOK_ALLOW_INSECURE_LOCALHOST: 'true',
    WEBHOOK_POLL_INTERVAL_MS: '100',
    SECRET_ROTATION_OVERLAP_HOURS: '24',
  });
  dist = await sys.party('distributor');
  await sys.credit(dist.wallet, '1000.00');
  phone = await sys.individual(newPhone());
  adminEmail = await extraUser(sys.backOffice, null, [], 'departure-admin');
  receiver = await startWebhookReceiver('/hooks');
});
afterAll(async () => {
  await receiver?.close(); // fails if any delivery verified with no trusted secret
  await sys?.close();
});

/** The standardwebhooks library's verdict on a delivery, with this secret. */
function verifies(secret: string, delivery: ReceivedWebhook): boolean {
  try {
    new Webhook(secret).verify(
      delivery.body,
      Object.fromEntries(Object.entries(delivery.headers).map(([k, v]) => [k, String(v)])),
    );
    return true;
  } catch {
    return false;
  }
}

/** An api_key.revoked delivery, caused now: a key of the party requested, approved and revoked. */
async function nextDelivery(): Promise<ReceivedWebhook> {
  const { keyID } = await dist.key();
  const maker = await findUserByEmail(sys.backOffice, dist.makerEmail);
  const checker = await findUserByEmail(sys.backOffice, dist.checkerEmail);
  await decideOnApiKey(
    sys.backOffice,
    maker,
    keyID,
    { type: 'RequestApiKeyRevocation', reason: 'till retired' },
    randomUUID(),
  );
  await decideOnApiKey(sys.backOffice, checker, keyID, { type: 'ApproveApiKeyRevocation' }, randomUUID());
  await waitFor(() => receiver.received.some((r) => r.json.data.apiKey?.keyID === keyID), 15_000);
  return receiver.received.find((r) => r.json.data.apiKey?.keyID === keyID)!;
}

const balance = (apiKey: string) => call(sys.baseUrl, 'GET', `/api/v1/distributors/${dist.ref.id}/balance`, { apiKey });

describe('a maker who leaves after another maker rotated their secrets', { timeout: 90_000 }, () => {
  it('when the administrator disables them, then their old key secret gets 401 at once, no later delivery verifies with their old signing secret, and their rotation request is withdrawn', async () => {
    const leaverEmail = await extraUser(sys.backOffice, dist.ref, ['maker'], 'departure-leaver');
    const leaver = await findUserByEmail(sys.backOffice, leaverEmail);
    const successor = await findUserByEmail(sys.backOffice, dist.makerEmail);
    const checker = await findUserByEmail(sys.backOffice, dist.checkerEmail);
    const deps = webhookDeps(sys);

    // The leaver's key and endpoint.
    const { keyID } = await requestApiKey(
      sys.backOffice,
      leaver,
      { label: 'leaver till', permissions: 'read-balance,perform-operations' },
      'departure',
    );
    const leaverKey = await approveAndCollectKey(sys.backOffice, checker, leaver, keyID);
    const { endpointID, secret: leaverSecret } = await registerEndpoint(
      sys,
      { ...dist, makerEmail: leaverEmail },
      receiver.url,
      ['api_key.revoked'],
    );

    // The successor rotates both; the checker approves; the successor collects the new secrets.
    await decideOnApiKeyRotation(
      sys.backOffice,
      successor,
      keyID,
      { type: 'request', reason: 'handover' },
      randomUUID(),
    );
    await approveApiKeyRotation(sys.backOffice, checker, keyID, randomUUID());
    const { apiKey: successorKey } = await collectCredential(sys.backOffice, successor, { kind: 'api-key', id: keyID });
    await decideOnWebhookSecretRotation(
      deps,
      successor,
      endpointID,
      { type: 'request', reason: 'handover' },
      randomUUID(),
    );
    await approveWebhookSecretRotation({ ...deps, secretRotationOverlapHours: 24 }, checker, endpointID, randomUUID());
    const { signingSecret: successorSecret } = await collectCredential(deps, successor, {
      kind: 'webhook-endpoint',
      id: endpointID,
    });
    receiver.trust(successorSecret);
    await waitFor(async () => (await getRoute(sys.system.stores.readStore, endpointID))?.rotatedAt != null);
    await waitFor(() => sys.system.directory.get(keyID)?.previousSecretHash != null);

    // The leaver also asked to rotate another maker's key: that request must not outlive them.
    const { keyID: otherKey } = await dist.key({ label: 'another till' });
    await decideOnApiKeyRotation(
      sys.backOffice,
      leaver,
      otherKey,
      { type: 'request', reason: 'mine now' },
      randomUUID(),
    );

    // Before the departure, the overlap: both secrets work and sign. The leaver makes a cash-in with theirs.
    expect((await balance(leaverKey)).status).toBe(200);
    const leftPending = await createCashIn(sys, dist.ref.id, leaverKey, phone, '25.00', 'made before leaving');
    const successorPending = await createCashIn(
      sys,
      dist.ref.id,
      successorKey,
      phone,
      '26.00',
      'made by the successor',
    );
    const before = await nextDelivery();
    expect(verifies(leaverSecret, before)).toBe(true);
    expect(verifies(successorSecret, before)).toBe(true);

    // The administrator's page lists what ends, before the click.
    const admin = new ConsoleClient(sys.baseUrl);
    await admin.loginOk(adminEmail, OTHER_PASSWORD);
    const page = await admin.get(`/console/admin/users/${leaver.userID}`);
    expect(page.text).toContain(`data-credential="${keyID}" data-ends="previous-secret"`);
    expect(page.text).toContain(`data-credential="${endpointID}" data-ends="previous-secret"`);
    expect(page.text).toContain(`data-credential="${otherKey}" data-ends="rotation-request"`);
    const disabled = await admin.post(`/console/admin/users/${leaver.userID}/disable`, { reason: 'left the company' });
    expect(disabled.status, disabled.text).toBe(303);

    // One atomic append ended all three, as the system naming the leaver.
    const last = async (stream: string) => (await sys.system.stores.eventStore.readStream(stream)).at(-1);
    expect(await last(streams.apiKey(keyID))).toMatchObject({
      type: 'ApiKeyPreviousSecretEnded',
      data: { departedUserID: leaver.userID },
    });
    expect(await last(streams.webhookEndpoint(endpointID))).toMatchObject({
      type: 'WebhookEndpointPreviousSecretEnded',
      data: { departedUserID: leaver.userID },
    });
    expect(await last(streams.apiKey(otherKey))).toMatchObject({
      type: 'ApiKeyRotationWithdrawn',
      data: { withdrawnBy: 'system', departedUserID: leaver.userID },
    });

    await waitFor(() => sys.system.directory.get(keyID)?.previousSecretHash === null);
    expect((await balance(leaverKey)).status).toBe(401);
    expect((await balance(successorKey)).status).toBe(200);
    expect(sys.system.directory.get(otherKey)?.rotation).toBeNull();
    // What the leaver's ended secret made waits for no checker: the key-revocation consumer rejects it; the successor's stays.
    const events = (operationID: string) => sys.system.stores.eventStore.readStream(streams.operation(operationID));
    await waitFor(async () => (await events(leftPending)).some((e) => e.type === 'OperationRejected'), 10_000);
    expect((await events(leftPending)).at(-1)).toMatchObject({
      data: { rejectedBy: 'system:key-revocation', reason: expect.stringMatching(/ended with its holder’s departure/) },
    });
    expect((await events(successorPending)).map((e) => e.type)).toEqual(['OperationRequested']);

    const after = await nextDelivery();
    expect(String(after.headers['webhook-signature'])).toMatch(/^v1,\S+$/);
    expect(verifies(successorSecret, after)).toBe(true);
    expect(verifies(leaverSecret, after)).toBe(false);
    // Every delivery made after the departure, whatever its event: none verifies with the leaver's secret.
    const departedAt = receiver.received.indexOf(before) + 1;
    for (const delivery of receiver.received.slice(departedAt)) expect(verifies(leaverSecret, delivery)).toBe(false);
  });
});
