import { describe, expect, it } from 'vitest';
import { lifecycle, type EndpointView } from '../../src/console/webhooks-pages.ts';

/** What an endpoint's page says of how its deliveries are signed (docs/webhooks.md). */
const view = (extra: Partial<EndpointView>): EndpointView => ({
  id: 'whe_AAAAAAAAAAAAAAAA',
  partyType: 'merchant',
  partyID: 'm-1',
  url: 'https://shop.example/h',
  eventTypes: ['payment.received'],
  status: 'active',
  requestedBy: 'u-maker',
  requestedAt: '2026-01-01T00:00:00.000Z',
  decidedBy: 'u-checker',
  decidedAt: '2026-01-02T00:00:00.000Z',
  reason: null,
  disabledBy: null,
  disabledAt: null,
  position: 2,
  requestedByEmail: 'maker@shop.example',
  decidedByEmail: 'checker@shop.example',
  disabledByEmail: '',
  rotationRequestedByEmail: '',
  ...extra,
});
const text = (extra: Partial<EndpointView>) => lifecycle(view(extra)).toString();

describe("an endpoint page's signature scheme", () => {
  it('when the endpoint signs with Standard Webhooks, then the page says so and names the headers', () => {
    expect(text({ signatureScheme: 'standard-webhooks' })).toMatch(
      /data-signature-scheme="standard-webhooks">Deliveries are signed with Standard Webhooks \(<code>webhook-id<\/code>/,
    );
  });

  it('when the endpoint signs the legacy way, then the page says so and that a rotation moves it to Standard Webhooks', () => {
    expect(text({ signatureScheme: 'stripe-v1' })).toContain('rotating the secret moves them to Standard Webhooks');
  });

  it('when a rotation switches a legacy endpoint, then the page says from when Standard Webhooks signs', () => {
    const page = text({
      signatureScheme: 'standard-webhooks',
      previousSignatureScheme: 'stripe-v1',
      rotatedAt: '2026-01-03T00:00:00.000Z',
      previousSecretValidUntil: '2026-01-04T00:00:00.000Z',
    });
    expect(page).toMatch(/Standard Webhooks .* from <time datetime="2026-01-04T00:00:00.000Z"/);
    expect(page).toContain('until then the legacy way, with both secrets');
  });

  it('when the endpoint is pending or disabled, then the page says nothing of signatures', () => {
    expect(text({ status: 'pending', signatureScheme: undefined })).not.toContain('data-signature-scheme');
    expect(text({ status: 'disabled', signatureScheme: 'standard-webhooks' })).not.toContain('data-signature-scheme');
  });
});
