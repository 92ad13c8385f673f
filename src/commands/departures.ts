import type { EventStore, RecordedEvent } from '../ports/event-store.ts';
import { streamPrefixes, streams } from '../domain/streams.ts';
import { samePartyRef, type PartyRef } from '../domain/parties.ts';
import { ApiKeyDirectory, catchUpApiKeyDirectory } from '../projections/api-key-directory.ts';
import { apiKeyDecider, type ApiKeyState } from './api-keys.ts';
import type { StreamRead, StreamWrite } from './pipeline.ts';
import { webhookEndpointDecider, type WebhookEndpointState } from './webhook-endpoints.ts';

/**
 * What a user leaves behind: the API keys and webhook endpoints whose secret only they hold (they requested
 * them, or a rotation they asked for, so the approval handed the secret to them alone: `secretHolder`). When an administrator disables the user, or removes
 * their maker role, these end in the same atomic append as the change itself: active keys are revoked (their
 * pending operations are then rejected by the key-revocation consumer), pending requests are withdrawn,
 * active endpoints disabled and pending ones rejected, each recorded as `system` with `departedUserID`.
 * Nobody else ever held those secrets, so keeping them working would leave money movable by someone who left.
 * An integration that must keep running is rotated to another maker first (the rotation makes them the holder).
 */
export interface LiveCredential {
  kind: 'api-key' | 'webhook-endpoint';
  id: string;
  label: string;
  status: string;
}

const LIVE = ['pending', 'active', 'revocation_pending'];
const PAGE = 1000;

/** The user's keys and endpoints that are still pending or working, as the console lists them before a departure. */
export async function liveCredentialsOf(store: EventStore, user: { userID: string; party: PartyRef | null }, now: string): Promise<LiveCredential[]> {
  if (!user.party) return [];
  const directory = new ApiKeyDirectory();
  await catchUpApiKeyDirectory(store, directory);
  const keys = directory
    .listByParty(user.party, now)
    .filter((key) => directory.get(key.keyID)?.secretHolder === user.userID && LIVE.includes(directory.get(key.keyID)!.status))
    .map((key): LiveCredential => ({ kind: 'api-key', id: key.keyID, label: key.label, status: key.state }));
  const events: RecordedEvent[] = [];
  for (let from = 1; ; ) {
    const page = await store.readAll({ fromPosition: from, maxCount: PAGE, filter: { streamPrefixes: [streamPrefixes.webhookEndpoint] } });
    events.push(...page);
    if (page.length < PAGE) break;
    from = page.at(-1)!.position + 1;
  }
  // Folded with the endpoint's own decider: its state knows who holds the current secret after rotations.
  const states = new Map<string, WebhookEndpointState>();
  for (const event of events) states.set(event.stream, webhookEndpointDecider.evolve(states.get(event.stream) ?? webhookEndpointDecider.initialState(), event as never));
  const endpoints = [...states.values()]
    .flatMap((e) => (e.status !== 'none' && e.secretHolder === user.userID && samePartyRef(e.party, user.party) && LIVE.includes(e.status) ? [e] : []))
    .map((e): LiveCredential => ({ kind: 'webhook-endpoint', id: e.endpointID, label: e.url, status: e.status }));
  return [...keys, ...endpoints];
}

/** The streams a departure reads, keyed for runDecision, and the writes that end each credential as its state now needs. */
export function departureOf(userID: string, credentials: LiveCredential[], now: string, reason: string) {
  const read: Record<string, StreamRead<ApiKeyState> | StreamRead<WebhookEndpointState>> = {};
  for (const credential of credentials) {
    read[`${credential.kind}:${credential.id}`] = credential.kind === 'api-key'
      ? { stream: streams.apiKey(credential.id), ...apiKeyDecider }
      : { stream: streams.webhookEndpoint(credential.id), ...webhookEndpointDecider };
  }
  const writes = (states: Record<string, unknown>): StreamWrite[] =>
    credentials.map((credential) => {
      const state = states[`${credential.kind}:${credential.id}`];
      return credential.kind === 'api-key'
        ? { stream: streams.apiKey(credential.id), events: apiKeyDecider.decide({ type: 'RetireApiKeyOfDepartedUser', data: { keyID: credential.id, userID, now } }, state as ApiKeyState) }
        : { stream: streams.webhookEndpoint(credential.id), events: webhookEndpointDecider.decide({ type: 'RetireWebhookEndpointOfDepartedUser', data: { endpointID: credential.id, userID, reason, now } }, state as WebhookEndpointState) };
    });
  return { read, writes };
}
