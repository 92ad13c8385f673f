import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectCredential, decideOnApiKey, findUserByEmail } from '../../src/commands/back-office.ts';
import { approveWebhookSecretRotation, decideOnWebhookSecretRotation } from '../../src/commands/webhooks.ts';
import { verifyWebhookSignature } from '../../src/domain/webhook-secrets.ts';
import { getRoute } from '../../src/webhooks/deliveries.ts';
import { startTestSystem, waitFor, WITHOUT_EXECUTOR, type TestParty, type TestSystem } from '../support/system.ts';
import { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { registerEndpoint, webhookDeps } from '../support/webhooks.ts';

/**
 * A webhook endpoint's signing-secret rotation end to end, with a clock the test moves: before it deliveries
 * carry one `v1` signature; during the overlap (SECRET_ROTATION_OVERLAP_HOURS, 1 here) two, the new secret's
 * first, so a receiver verifying with either secret succeeds; after it only the new one's.
 */
describe('webhook signing-secret rotation, with a fake clock', () => {
  let now = new Date();
  let sys: TestSystem;
  let receiver: WebhookReceiver;
  let party: TestParty;

  beforeAll(async () => {
    sys = await startTestSystem({ WEBHOOK_ALLOW_INSECURE_LOCALHOST: 'true', WEBHOOK_POLL_INTERVAL_MS: '100', SECRET_ROTATION_OVERLAP_HOURS: '1' }, () => now, WITHOUT_EXECUTOR);
    receiver = await startWebhookReceiver();
    party = await sys.party('merchant');
  });
  afterAll(async () => {
    await receiver?.close();
    await sys?.close();
  });

  /** An api_key.revoked delivery: a key of the party requested, approved and revoked. */
  async function nextDelivery(): Promise<ReceivedWebhook> {
    const { keyID } = await party.key();
    const maker = await findUserByEmail(sys.backOffice, party.makerEmail);
    const checker = await findUserByEmail(sys.backOffice, party.checkerEmail);
    await decideOnApiKey(sys.backOffice, maker, keyID, { type: 'RequestApiKeyRevocation', reason: 'till retired' }, randomUUID());
    await decideOnApiKey(sys.backOffice, checker, keyID, { type: 'ApproveApiKeyRevocation' }, randomUUID());
    await waitFor(() => receiver.received.some((r) => r.json.data.apiKey?.keyID === keyID), 15_000);
    return receiver.received.find((r) => r.json.data.apiKey?.keyID === keyID)!;
  }
  const signatures = (r: ReceivedWebhook) => String(r.headers['webhook-signature']).split(',').filter((part) => part.startsWith('v1='));
  const verifies = (secret: string, r: ReceivedWebhook) => verifyWebhookSignature(secret, String(r.headers['webhook-signature']), r.body, Math.floor(now.getTime() / 1000));

  it('when a rotation is approved, then deliveries are signed with both secrets during the overlap and with the new one only after it', async () => {
    const { endpointID, secret: oldSecret } = await registerEndpoint(sys, party, receiver.url, ['api_key.revoked']);
    const before = await nextDelivery();
    expect(signatures(before)).toHaveLength(1);
    expect(verifies(oldSecret, before)).toBe(true);

    const maker = await findUserByEmail(sys.backOffice, party.makerEmail);
    const checker = await findUserByEmail(sys.backOffice, party.checkerEmail);
    const deps = webhookDeps(sys);
    expect(await decideOnWebhookSecretRotation(deps, maker, endpointID, { type: 'request', reason: 'secret seen in a log' }, randomUUID())).toEqual({ endpointID, rotation: 'pending' });
    const approved = await approveWebhookSecretRotation({ ...deps, secretRotationOverlapHours: 1 }, checker, endpointID, randomUUID());
    expect(approved).toEqual({ endpointID, heldFor: maker.userID, previousValidUntil: new Date(now.getTime() + 3_600_000).toISOString() });
    await expect(collectCredential(deps, checker, { kind: 'webhook-endpoint', id: endpointID })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const { signingSecret: newSecret } = await collectCredential(deps, maker, { kind: 'webhook-endpoint', id: endpointID });
    expect(newSecret).not.toBe(oldSecret);
    await waitFor(async () => (await getRoute(sys.system.stores.readStore, endpointID))?.rotatedAt != null);

    const during = await nextDelivery();
    expect(signatures(during)).toHaveLength(2);
    expect(verifies(newSecret, during)).toBe(true);
    expect(verifies(oldSecret, during)).toBe(true);

    now = new Date(now.getTime() + 3_600_000);
    const after = await nextDelivery();
    expect(signatures(after)).toHaveLength(1);
    expect(verifies(newSecret, after)).toBe(true);
    expect(verifies(oldSecret, after)).toBe(false);
  }, 60_000);
});
