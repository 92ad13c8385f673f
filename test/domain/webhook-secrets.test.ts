import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isWebhookSecret, newWebhookSecret, openWebhookSecret, sealWebhookSecret, signWebhook, verifyWebhookSignature } from '../../src/domain/webhook-secrets.ts';

const key = randomBytes(32);
const endpointID = 'whe_AAAAAAAAAAAAAAAA';

describe('webhook signing secrets', () => {
  it('when a secret is made, then it is whsec_ and 256 random bits', () => {
    const secret = newWebhookSecret();
    expect(isWebhookSecret(secret)).toBe(true);
    expect(newWebhookSecret()).not.toBe(secret);
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
    expect(verifyWebhookSignature(secret, header.replace('t=1700000000', 't=1700000001'), body, 1_700_000_000)).toBe(false);
    expect(verifyWebhookSignature(secret, header, body, 1_700_001_000)).toBe(false);
    expect(verifyWebhookSignature(secret, 'garbage', body, 1_700_000_000)).toBe(false);
  });

  it('when a body is signed with two secrets (a rotation\'s overlap), then there is one v1 per secret, the first one first, and each secret verifies', () => {
    const previous = newWebhookSecret();
    const header = signWebhook([secret, previous], 1_700_000_000, body);
    expect(header).toMatch(/^t=1700000000,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(header.startsWith(signWebhook(secret, 1_700_000_000, body))).toBe(true);
    expect(verifyWebhookSignature(secret, header, body, 1_700_000_000)).toBe(true);
    expect(verifyWebhookSignature(previous, header, body, 1_700_000_000)).toBe(true);
    expect(verifyWebhookSignature(newWebhookSecret(), header, body, 1_700_000_000)).toBe(false);
  });
});
