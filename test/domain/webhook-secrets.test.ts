import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import {
  isWebhookSecret,
  newWebhookSecret,
  openWebhookSecret,
  sealWebhookSecret,
  signatureHeaders,
  signingAt,
  signStandardWebhook,
  signWebhook,
  verifyWebhookSignature,
} from '../../src/domain/webhook-secrets.ts';

const key = randomBytes(32);
const endpointID = 'whe_AAAAAAAAAAAAAAAA';

describe('webhook signing secrets', () => {
  it('when a secret is made, then it is whsec_ and the standard base64 of 256 random bits', () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    expect(isWebhookSecret(secret)).toBe(true);
    expect(newWebhookSecret()).not.toBe(secret);
  });

  it('when a secret made before Standard Webhooks (base64url) is checked, then it is still a secret', () => {
    expect(isWebhookSecret(`whsec_${randomBytes(32).toString('base64url')}`)).toBe(true);
    expect(isWebhookSecret('whsec_short')).toBe(false);
  });

  it('when a secret is sealed, then the sealed form does not contain it and opens to it under the same key and endpoint', () => {
    const secret = newWebhookSecret();
    const sealed = sealWebhookSecret(key, endpointID, secret);
    expect(JSON.stringify(sealed)).not.toContain(secret.slice(6));
    expect(openWebhookSecret(key, endpointID, sealed)).toBe(secret);
  });

  it('when a sealed secret is opened under another key, for another endpoint, or tampered with, then it does not open', () => {
    const sealed = sealWebhookSecret(key, endpointID, newWebhookSecret());
    expect(openWebhookSecret(randomBytes(32), endpointID, sealed)).toBeNull();
    expect(openWebhookSecret(key, 'whe_BBBBBBBBBBBBBBBB', sealed)).toBeNull();
    const data = Buffer.from(sealed.data, 'base64');
    data[0] = data[0]! ^ 1;
    expect(openWebhookSecret(key, endpointID, { ...sealed, data: data.toString('base64') })).toBeNull();
  });
});

describe('webhook signatures', () => {
  const secret = newWebhookSecret();
  const body = JSON.stringify({ id: 'evt_1', type: 'operation.completed' });

  it('when a body is signed, then the header is t=<seconds>,v1=<64 hex> and verifies within the tolerance', () => {
    const header = signWebhook(secret, 1_700_000_000, body);
    expect(header).toMatch(/^t=1700000000,v1=[0-9a-f]{64}$/);
    expect(verifyWebhookSignature(secret, header, body, 1_700_000_100)).toBe(true);
  });

  it('when the body, the secret or the timestamp differ, or the timestamp is too old, then it does not verify', () => {
    const header = signWebhook(secret, 1_700_000_000, body);
    expect(verifyWebhookSignature(secret, header, `${body} `, 1_700_000_000)).toBe(false);
    expect(verifyWebhookSignature(newWebhookSecret(), header, body, 1_700_000_000)).toBe(false);
    expect(verifyWebhookSignature(secret, header.replace('t=1700000000', 't=1700000001'), body, 1_700_000_000)).toBe(
      false,
    );
    expect(verifyWebhookSignature(secret, header, body, 1_700_001_000)).toBe(false);
    expect(verifyWebhookSignature(secret, 'garbage', body, 1_700_000_000)).toBe(false);
  });

  it("when a body is signed with two secrets (a rotation's overlap), then there is one v1 per secret, the first one first, and each secret verifies", () => {
    const previous = newWebhookSecret();
    const header = signWebhook([secret, previous], 1_700_000_000, body);
    expect(header).toMatch(/^t=1700000000,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(header.startsWith(signWebhook(secret, 1_700_000_000, body))).toBe(true);
    expect(verifyWebhookSignature(secret, header, body, 1_700_000_000)).toBe(true);
    expect(verifyWebhookSignature(previous, header, body, 1_700_000_000)).toBe(true);
    expect(verifyWebhookSignature(newWebhookSecret(), header, body, 1_700_000_000)).toBe(false);
  });
});

describe('legacy (stripe-v1) signatures, byte for byte', () => {
  it('when a known secret signs a known body, then the header is the one integrators have always received', () => {
    const header = signWebhook('whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8', 1_700_000_000, '{"id":"evt_1"}');
    expect(header).toBe('t=1700000000,v1=7f6fc253b714785571657c872d6ef171b73ec917a9052d78a427a6d37b9df922');
    expect(
      signatureHeaders(
        'stripe-v1',
        ['whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8'],
        'evt_1',
        1_700_000_000,
        '{"id":"evt_1"}',
      ),
    ).toEqual({ 'webhook-id': 'evt_1', 'webhook-signature': header });
  });
});

describe('Standard Webhooks signatures', () => {
  const body = JSON.stringify({
    id: 'evt_abcdefghijklmnopqrstuvwx',
    type: 'operation.completed',
    data: { memo: 'naïve café' },
  });
  const nowSeconds = () => Math.floor(Date.now() / 1000);

  it("when the specification's example is signed, then the signature is its published one", () => {
    expect(
      signStandardWebhook(
        'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        'msg_p5jXN8AQM9LWM0D4loKWxJek',
        1614265330,
        '{"test": 2432232314}',
      ),
    ).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('when a delivery is signed, then the standardwebhooks library verifies its headers, and refuses another secret or body', () => {
    const secret = newWebhookSecret();
    const headers = signatureHeaders('standard-webhooks', [secret], 'evt_abcdefghijklmnopqrstuvwx', nowSeconds(), body);
    expect(Object.keys(headers)).toEqual(['webhook-id', 'webhook-timestamp', 'webhook-signature']);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow('No matching signature');
    expect(() => new Webhook(secret).verify(body.replace('café', 'cafe'), headers)).toThrow('No matching signature');
  });

  it("when a delivery is signed with two secrets (a rotation's overlap), then the header has one v1 per secret, space-separated, and each verifies", () => {
    const [current, previous] = [newWebhookSecret(), newWebhookSecret()];
    const headers = signatureHeaders(
      'standard-webhooks',
      [current, previous],
      'evt_abcdefghijklmnopqrstuvwx',
      nowSeconds(),
      body,
    );
    expect(headers['webhook-signature']).toMatch(/^v1,\S+ v1,\S+$/);
    expect(headers['webhook-signature']!.split(' ')[0]).toBe(
      signStandardWebhook(current, 'evt_abcdefghijklmnopqrstuvwx', Number(headers['webhook-timestamp']), body),
    );
    expect(new Webhook(current).verify(body, headers)).toBeTruthy();
    expect(new Webhook(previous).verify(body, headers)).toBeTruthy();
  });
});

describe('which scheme and secrets sign a delivery', () => {
  const T = '2026-01-03T00:00:00.000Z';
  const until = '2026-01-03T02:00:00.000Z';
  const during = '2026-01-03T01:00:00.000Z';

  it("given no rotation, then the endpoint's scheme and its one secret", () => {
    expect(
      signingAt(
        { current: 'new', previous: null, previousValidUntil: null, scheme: 'stripe-v1', previousScheme: null },
        T,
      ),
    ).toEqual({ scheme: 'stripe-v1', secrets: ['new'] });
    expect(
      signingAt(
        { current: 'new', previous: null, previousValidUntil: null, scheme: 'standard-webhooks', previousScheme: null },
        T,
      ),
    ).toEqual({ scheme: 'standard-webhooks', secrets: ['new'] });
  });

  it('given a rotation within one scheme, then that scheme with both secrets during the overlap, the new one only after it', () => {
    const signing = {
      current: 'new',
      previous: 'old',
      previousValidUntil: until,
      scheme: 'standard-webhooks',
      previousScheme: 'standard-webhooks',
    } as const;
    expect(signingAt(signing, during)).toEqual({ scheme: 'standard-webhooks', secrets: ['new', 'old'] });
    expect(signingAt(signing, until)).toEqual({ scheme: 'standard-webhooks', secrets: ['new'] });
  });

  it('given a rotation that switched a legacy endpoint, then the legacy scheme with both secrets during the overlap, Standard Webhooks with the new one after it', () => {
    const signing = {
      current: 'new',
      previous: 'old',
      previousValidUntil: until,
      scheme: 'standard-webhooks',
      previousScheme: 'stripe-v1',
    } as const;
    expect(signingAt(signing, during)).toEqual({ scheme: 'stripe-v1', secrets: ['new', 'old'] });
    expect(signingAt(signing, until)).toEqual({ scheme: 'standard-webhooks', secrets: ['new'] });
  });
});
