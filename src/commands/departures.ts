import type { EventStore } from '../ports/event-store.ts';
import { streamPrefixes, streams } from '../domain/streams.ts';
import { samePartyRef, type PartyRef } from '../domain/parties.ts';
import { apiKeyDecider, effectiveStatus, holdsPreviousSecret, type ApiKeyState } from './api-keys.ts';
import { foldStreamsUnder } from './stream-fold.ts';
import {
  loadState,
  runCommand,
  type CommandContext,
  type CommandPipelineDeps,
  type StreamRead,
  type StreamWrite,
} from './pipeline.ts';
import { userDecider } from './users.ts';
import { DomainError } from '../domain/errors.ts';
import { holdsPreviousSigningSecret, webhookEndpointDecider, type WebhookEndpointState } from './webhook-endpoints.ts';

/**
 * What a user leaves behind: the API keys and webhook endpoints whose secret only they hold (they requested
 * them, or a rotation they asked for, so the approval handed the secret to them alone: `secretHolder`). When an
 * administrator disables the user, or removes their maker role, these end in the same atomic append as the change
 * itself: active keys are revoked (their pending operations are then rejected by the key-revocation consumer), pending
 * requests are withdrawn, active endpoints disabled and pending ones rejected, each recorded as `system` with
 * `departedUserID`.
 * Nobody else ever held those secrets, so keeping them working would leave money movable by someone who left.
 * An integration that must keep running is rotated to another maker first (the rotation makes them the holder).
 * A secret they held before such a rotation, still accepted during its overlap, ends too (the current one, the
 * other maker's, keeps working), and a rotation they asked for is withdrawn: a leaver keeps no secret at all.
 */
export interface LiveCredential {
  kind: 'api-key' | 'webhook-endpoint';
  id: string;
  label: string;
  status: string;
  /**
   * What ends: the credential itself (they hold its current secret), or only its previous secret that they hold
   * and their pending rotation request (each when it applies).
   */
  ends: Array<'credential' | 'previous-secret' | 'rotation-request'>;
}

type Holdings = { secretHolder: string; rotation: { requestedBy: string } | null; status: string };

/** What of a key or endpoint the user knows or asked for, and so what their departure ends (empty: nothing). */
function endsOf(credential: Holdings, userID: string, holdsPrevious: boolean): LiveCredential['ends'] {
  if (!LIVE.includes(credential.status)) return [];
  if (credential.secretHolder === userID) return ['credential'];
  const ends: LiveCredential['ends'] = [];
  if (holdsPrevious) ends.push('previous-secret');
  if (credential.rotation?.requestedBy === userID) ends.push('rotation-request');
  return ends;
}

const LIVE = ['pending', 'active', 'revocation_pending'];

/** The user's keys and endpoints that are still pending or working, as the console lists them before a departure. */
export async function liveCredentialsOf(
  store: EventStore,
  user: { userID: string; party: PartyRef | null },
  now: string,
): Promise<LiveCredential[]> {
  if (!user.party) return [];
  // Folded with the keys' and endpoints' own deciders: their states know who holds the current secret after rotations.
  const keyStates = await foldStreamsUnder(store, streamPrefixes.apiKey, apiKeyDecider);
  const keys = [...keyStates.values()].flatMap((key): LiveCredential[] => {
    if (key.status === 'none' || !samePartyRef(key.party, user.party)) return [];
    const ends = endsOf(key, user.userID, holdsPreviousSecret(key, user.userID, now));
    return ends.length === 0
      ? []
      : [{ kind: 'api-key', id: key.keyID, label: key.label, status: effectiveStatus(key, now), ends }];
  });
  const states = await foldStreamsUnder(store, streamPrefixes.webhookEndpoint, webhookEndpointDecider);
  const endpoints = [...states.values()].flatMap((e): LiveCredential[] => {
    if (e.status === 'none' || !samePartyRef(e.party, user.party)) return [];
    const ends = endsOf(e, user.userID, holdsPreviousSigningSecret(e, user.userID, now));
    return ends.length === 0
      ? []
      : [{ kind: 'webhook-endpoint', id: e.endpointID, label: e.url, status: e.status, ends }];
  });
  return [...keys, ...endpoints];
}

/**
 * The streams a departure reads, keyed for runDecision, and the writes that end each credential as its state now needs.
 */
export function departureOf(userID: string, credentials: LiveCredential[], now: string, reason: string) {
  const read: Record<string, StreamRead<ApiKeyState> | StreamRead<WebhookEndpointState>> = {};
  for (const credential of credentials) {
    read[`${credential.kind}:${credential.id}`] =
      credential.kind === 'api-key'
        ? { stream: streams.apiKey(credential.id), ...apiKeyDecider }
        : { stream: streams.webhookEndpoint(credential.id), ...webhookEndpointDecider };
  }
  const writes = (states: Record<string, unknown>): StreamWrite[] =>
    credentials.map((credential) => {
      const state = states[`${credential.kind}:${credential.id}`];
      return credential.kind === 'api-key'
        ? {
            stream: streams.apiKey(credential.id),
            events: apiKeyDecider.decide(
              { type: 'RetireApiKeyOfDepartedUser', data: { keyID: credential.id, userID, now } },
              state as ApiKeyState,
            ),
          }
        : {
            stream: streams.webhookEndpoint(credential.id),
            events: webhookEndpointDecider.decide(
              { type: 'RetireWebhookEndpointOfDepartedUser', data: { endpointID: credential.id, userID, reason, now } },
              state as WebhookEndpointState,
            ),
          };
    });
  return { read, writes };
}

/**
 * The other half of a departure's atomicity, for approvals that raced it: the pipeline guards the streams a
 * decision writes, not the requester's user stream an approval only reads, so a maker may be disabled between
 * an approval's check and its commit. Called after the approval commits: if the user the new secret is for has
 * left by now, the key or endpoint ends at once, as the departure would have ended it. (The departure, for its
 * part, lists again after it commits: see `narrow` in user-admin.ts.)
 */
export async function endIfHolderLeft(
  deps: CommandPipelineDeps & { clock: () => Date },
  credential: { kind: LiveCredential['kind']; id: string },
  holderID: string,
  context: CommandContext,
): Promise<boolean> {
  const { state: holder } = await loadState(deps, streams.user(holderID), userDecider);
  if (holder.status === 'active' && holder.roles.includes('maker')) return false;
  const now = deps.clock().toISOString();
  const reason =
    `${holder.status === 'none' ? holderID : holder.email}, for whom its secret was made, left before the ` +
    'approval committed';
  if (credential.kind === 'api-key') {
    await runCommand(deps, {
      stream: streams.apiKey(credential.id),
      decider: apiKeyDecider,
      command: { type: 'RetireApiKeyOfDepartedUser', data: { keyID: credential.id, userID: holderID, now } },
      context,
    });
  } else {
    await runCommand(deps, {
      stream: streams.webhookEndpoint(credential.id),
      decider: webhookEndpointDecider,
      command: {
        type: 'RetireWebhookEndpointOfDepartedUser',
        data: { endpointID: credential.id, userID: holderID, reason, now },
      },
      context,
    });
  }
  return true;
}

/** What an approval that raced a departure answers, once `endIfHolderLeft` has ended what it approved. */
export const holderLeftError = (what: string) =>
  new DomainError(
    'WRONG_STATE',
    `${what} was approved, but the maker it was for has left meanwhile: it was ended at once, and no secret was ` +
      'handed out',
  );
