import { randomBytes, randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectCredential, decideOnApiKey, findUserByEmail } from '../../src/commands/back-office.ts';
import {
  approveWebhookSecretRotation,
  decideOnWebhookSecretRotation,
  requestWebhookEndpoint,
} from '../../src/commands/webhooks.ts';
import { streams } from '../../src/domain/streams.ts';
import { sealWebhookSecret, verifyWebhookSignature } from '../../src/domain/webhook-secrets.ts';
import { getRoute } from '../../src/webhooks/deliveries.ts';
import { startTestSystem, waitFor, WITHOUT_EXECUTOR, type TestParty, type TestSystem } from '../support/system.ts';
import { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { registerEndpoint, webhookDeps } from '../support/webhooks.ts';

/**
 * A webhook endpoint's signing-secret rotation end to end, with a clock the test moves. A Standard Webhooks
 * endpoint: before it deliveries carry one `v1,` signature; during the overlap (SECRET_ROTATION_OVERLAP_HOURS,
 * 1 here) two, space-separated, the new secret's first, so the standardwebhooks library verifies with either
 * secret; after it only the new one's. A legacy endpoint (approved before schemes were recorded) keeps the
 * Stripe-style header until a rotation switches it: legacy with both secrets during the overlap, Standard
 * Webhooks with the new secret after it.
 */
describe('webhook signing-secret rotation, with a fake clock', () => {
  let now = new Date();
  let sys: TestSystem;
  let receiver: WebhookReceiver;
  let party: TestParty;

  beforeAll(async () => {
    sys = await startTestSystem(
      { WEBHOOK_ALLOW_INSECURE_LOCALHOST: 'true', WEBHOOK_POLL_INTERVAL_MS: '100', SECRET_ROTATION_OVERLAP_HOURS: '1' },
      () => now,
      WITHOUT_EXECUTOR,
    );
    party = await sys.party('merchant');
  });
  afterAll(async () => {
    await sys?.close();
  });

  /** An api_key.revoked delivery: a key of the party requested, approved and revoked. */
  async function nextDelivery(): Promise<ReceivedWebhook> {
    const { keyID } = await party.key();
    const maker = await findUserByEmail(sys.backOffice, party.makerEmail);
    const checker = await findUserByEmail(sys.backOffice, party.checkerEmail);
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
  /** The standardwebhooks library's verdict, at the test's clock (its 5-minute window reads Date.now). */
  function standardVerifies(secret: string, r: ReceivedWebhook): boolean {
    const realNow = Date.now;
    Date.now = () => now.getTime();
    try {
      new Webhook(secret).verify(r.body, Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, String(v)])));
      return true;
    } catch {
      return false;
    } finally {
      Date.now = realNow;
    }
  }
  const legacyVerifies = (secret: string, r: ReceivedWebhook) =>
    verifyWebhookSignature(secret, String(r.headers['webhook-signature']), r.body, Math.floor(now.getTime() / 1000));

  /** A maker asks, a checker approves, the maker collects the new secret; the outbox has seen the rotation. */
  async function rotate(endpointID: string): Promise<string> {
    const maker = await findUserByEmail(sys.backOffice, party.makerEmail);
    const checker = await findUserByEmail(sys.backOffice, party.checkerEmail);
    const deps = webhookDeps(sys);
    expect(
      await decideOnWebhookSecretRotation(
        deps,
        maker,
        endpointID,
        { type: 'request', reason: 'secret seen in a log' },
        randomUUID(),
      ),
    ).toEqual({ endpointID, rotation: 'pending' });
    const approved = await approveWebhookSecretRotation(
      { ...deps, secretRotationOverlapHours: 1 },
      checker,
      endpointID,
      randomUUID(),
    );
    expect(approved).toEqual({
      endpointID,
      heldFor: maker.userID,
      previousValidUntil: new Date(now.getTime() + 3_600_000).toISOString(),
    });
    await expect(collectCredential(deps, checker, { kind: 'webhook-endpoint', id: endpointID })).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    const { signingSecret } = await collectCredential(deps, maker, { kind: 'webhook-endpoint', id: endpointID });
    await waitFor(
      async () => (await getRoute(sys.system.stores.readStore, endpointID))?.rotatedAt === now.toISOString(),
    );
    return signingSecret;
  }

  it("when a rotation of a Standard Webhooks endpoint is approved, then deliveries carry both secrets' signatures during the overlap and the new one's only after it", async () => {
    receiver = await startWebhookReceiver('/hooks', 0, { now: () => now });
    try {
      const { endpointID, secret: oldSecret } = await registerEndpoint(sys, party, receiver.url, ['api_key.revoked']);
      const before = await nextDelivery();
      expect(String(before.headers['webhook-signature'])).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
      expect(before.headers['webhook-timestamp']).toBe(String(Math.floor(now.getTime() / 1000)));
      expect(standardVerifies(oldSecret, before)).toBe(true);

      const newSecret = await rotate(endpointID);
      expect(newSecret).not.toBe(oldSecret);
      receiver.trust(newSecret);

      const during = await nextDelivery();
      expect(String(during.headers['webhook-signature'])).toMatch(/^v1,\S+ v1,\S+$/);
      expect(standardVerifies(newSecret, during)).toBe(true);
      expect(standardVerifies(oldSecret, during)).toBe(true);

      now = new Date(now.getTime() + 3_600_000);
      const after = await nextDelivery();
      expect(String(after.headers['webhook-signature'])).toMatch(/^v1,\S+$/);
      expect(standardVerifies(newSecret, after)).toBe(true);
      expect(standardVerifies(oldSecret, after)).toBe(false);
    } finally {
      await receiver.close(); // fails if any delivery did not verify with a trusted secret
    }
  }, 60_000);

  it('given a legacy endpoint, then its deliveries keep the Stripe-style header, and a rotation switches it to Standard Webhooks when the overlap ends', async () => {
    receiver = await startWebhookReceiver('/legacy', 0, { now: () => now });
    try {
      // An endpoint approved before schemes were recorded: its approval event names none, its secret is base64url.
      const maker = await findUserByEmail(sys.backOffice, party.makerEmail);
      const checker = await findUserByEmail(sys.backOffice, party.checkerEmail);
      const deps = webhookDeps(sys);
      const { endpointID } = await requestWebhookEndpoint(
        deps,
        maker,
        { url: receiver.url, eventTypes: ['api_key.revoked'] },
        randomUUID(),
      );
      const legacySecret = `whsec_${randomBytes(32).toString('base64url')}`;
      await sys.system.stores.eventStore.append(
        streams.webhookEndpoint(endpointID),
        [
          {
            type: 'WebhookEndpointApproved',
            data: {
              endpointID,
              approvedBy: checker.userID,
              approvedAt: now.toISOString(),
              secret: sealWebhookSecret(deps.secretsKey, endpointID, legacySecret),
            },
          },
        ],
        'stream_exists',
      );
      await waitFor(async () => (await getRoute(sys.system.stores.readStore, endpointID))?.status === 'active');

      const before = await nextDelivery();
      expect(
        Object.keys(before.headers)
          .filter((name) => name.startsWith('webhook-'))
          .sort(),
      ).toEqual(['webhook-id', 'webhook-signature']);
      expect(String(before.headers['webhook-signature'])).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
      expect(legacyVerifies(legacySecret, before)).toBe(true);

      const newSecret = await rotate(endpointID);
      expect(newSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      // During the overlap: still the legacy header (one header cannot carry both schemes), signed with both secrets.
      const during = await nextDelivery();
      expect(during.headers['webhook-timestamp']).toBeUndefined();
      expect(String(during.headers['webhook-signature'])).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
      expect(legacyVerifies(newSecret, during)).toBe(true);
      expect(legacyVerifies(legacySecret, during)).toBe(true);

      // After it: Standard Webhooks, with the new secret only; the receiver's oracle checks it from here on.
      receiver.trust(newSecret);
      now = new Date(now.getTime() + 3_600_000);
      const after = await nextDelivery();
      expect(after.headers['webhook-id']).toBe(after.json.id);
      expect(after.headers['webhook-timestamp']).toBe(String(Math.floor(now.getTime() / 1000)));
      expect(standardVerifies(newSecret, after)).toBe(true);
      expect(after.verifiedWith).toBe(newSecret);
    } finally {
      await receiver.close();
    }
  }, 60_000);
});
