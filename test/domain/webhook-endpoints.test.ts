import { describe, expect, it } from 'vitest';
import { DomainError } from '../../src/domain/errors.ts';
import {
  isEndpointID,
  newEndpointID,
  parseWebhookEventTypes,
  parseWebhookUrl,
} from '../../src/domain/webhook-endpoints.ts';

const strict = { allowInsecureLocalhost: false };
const dev = { allowInsecureLocalhost: true };

function refusal(parse: () => unknown): string {
  try {
    parse();
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe('INVALID_INPUT');
    return (error as Error).message;
  }
  throw new Error('the input was accepted');
}

describe('webhook endpoint URLs', () => {
  it('when the URL is https, then it is accepted, normalized', () => {
    expect(parseWebhookUrl('url', ' https://Shop.Example:8443/hooks?x=1 ', strict)).toBe(
      'https://shop.example:8443/hooks?x=1',
    );
  });

  it('when the URL is http to a public host, then it is refused, with or without the localhost allowance', () => {
    expect(refusal(() => parseWebhookUrl('url', 'http://shop.example/hooks', strict))).toMatch(/https/);
    expect(refusal(() => parseWebhookUrl('url', 'http://shop.example/hooks', dev))).toMatch(/https/);
  });

  it('when the URL is http to the loopback host, then it is accepted only with WEBHOOK_ALLOW_INSECURE_LOCALHOST, which the refusal names', () => {
    for (const url of ['http://127.0.0.1:8080/h', 'http://localhost:8080/h', 'http://[::1]:8080/h']) {
      expect(parseWebhookUrl('url', url, dev)).toBe(url);
      expect(refusal(() => parseWebhookUrl('url', url, strict))).toMatch(
        /must use https; http:\/\/.+ is accepted only where the operator sets WEBHOOK_ALLOW_INSECURE_LOCALHOST=true/,
      );
    }
    expect(refusal(() => parseWebhookUrl('url', 'http://shop.example/hooks', strict))).not.toMatch(
      /WEBHOOK_ALLOW_INSECURE_LOCALHOST/,
    );
  });

  it('when the URL is not absolute, has another scheme, credentials or a fragment, then it is refused', () => {
    for (const url of [
      '/hooks',
      'ftp://shop.example/h',
      'https://user:pw@shop.example/h',
      'https://shop.example/h#frag',
      '',
      42,
      'x'.repeat(3000),
    ]) {
      refusal(() => parseWebhookUrl('url', url, dev));
    }
  });
});

describe('webhook event types', () => {
  it('when event types are given as a list or comma-separated, then they are deduplicated in catalog order', () => {
    expect(
      parseWebhookEventTypes('eventTypes', ['payment.received', 'operation.completed', 'payment.received']),
    ).toEqual(['operation.completed', 'payment.received']);
    expect(parseWebhookEventTypes('eventTypes', 'api_key.revoked, operation.failed')).toEqual([
      'operation.failed',
      'api_key.revoked',
    ]);
  });

  it('when an event type is unknown or none is given, then it is refused', () => {
    expect(refusal(() => parseWebhookEventTypes('eventTypes', ['operation.created']))).toMatch(/unknown event type/);
    refusal(() => parseWebhookEventTypes('eventTypes', []));
    refusal(() => parseWebhookEventTypes('eventTypes', ''));
  });
});

describe('webhook endpoint ids', () => {
  it('when an id is made, then it has the whe_ form and is recognized', () => {
    const id = newEndpointID();
    expect(isEndpointID(id)).toBe(true);
    expect(isEndpointID('key_AAAAAAAAAAAAAAAA')).toBe(false);
    expect(newEndpointID()).not.toBe(id);
  });
});
