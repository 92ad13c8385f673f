import type { SealedWebhookSecret, WebhookEndpointEvent, WebhookSignatureScheme } from '../domain/events.ts';
import { DomainError } from '../domain/errors.ts';
import { samePartyRef } from '../domain/parties.ts';
import { requireMayVouch, type SecretKeepers } from '../domain/segregation.ts';
import {
  acceptedSecrets,
  checkRotationDecision,
  checkRotationRequest,
  checkRotationWithdrawal,
  overlapEnd,
} from '../domain/secret-rotation.ts';
import { CURRENT_SIGNATURE_SCHEME, signingAt, type EndpointSigning } from '../domain/webhook-secrets.ts';
import type { ActingUser } from './api-keys.ts';
import { assertNever, type Decider } from './decider.ts';
import {
  evolveEndpoint,
  type EndpointLifecycle,
  type EndpointTerms,
  type WebhookEndpointStatus,
} from './webhook-endpoint-lifecycle.ts';

/** Who disables: a user, or the delivery consumer giving up on an endpoint. */
export type Disabler = ActingUser | 'system';
export const SYSTEM_DISABLER = 'system';

/**
 * A webhook endpoint's lifecycle, with maker-checker like an API key's:
 *   (none) -request-> pending -approve-> active -disable-> disabled
 *                     pending -reject-> rejected
 * A maker requests; a checker of the same party, never the maker, approves or rejects. Disabling narrows what
 * the party receives, so any maker or checker of the party does it at once, and so does the system when
 * deliveries kept failing for a day. Rejected and disabled are final: a party registers a new endpoint.
 * An active endpoint's signing secret is rotated like an API key's (src/domain/secret-rotation.ts): a maker
 * requests, another checker approves (deliveries are signed with both secrets until the overlap ends) or
 * rejects, or the maker withdraws. Each secret has its signature scheme: an approval or a rotation records
 * today's (Standard Webhooks); an endpoint approved before schemes were recorded signs the legacy way until a
 * rotation switches it.
 */
export type WebhookEndpointCommand =
  | { type: 'RequestWebhookEndpoint'; data: EndpointTerms & { by: ActingUser; now: string } }
  | {
      type: 'ApproveWebhookEndpoint';
      data: { endpointID: string; by: ActingUser; secret: SealedWebhookSecret; now: string };
    }
  | { type: 'RejectWebhookEndpoint'; data: { endpointID: string; by: ActingUser; reason: string | null; now: string } }
  | { type: 'DisableWebhookEndpoint'; data: { endpointID: string; by: Disabler; reason: string; now: string } }
  /** The maker who registered it (and holds its secret) was disabled or lost the maker role (user-admin.ts). */
  | {
      type: 'RetireWebhookEndpointOfDepartedUser';
      data: { endpointID: string; userID: string; reason: string; now: string };
    }
  | { type: 'RequestWebhookSecretRotation'; data: { endpointID: string; by: ActingUser; reason: string; now: string } }
  | {
      type: 'ApproveWebhookSecretRotation';
      data: { endpointID: string; by: ActingUser; secret: SealedWebhookSecret; overlapHours: number; now: string };
    }
  | {
      type: 'RejectWebhookSecretRotation';
      data: { endpointID: string; by: ActingUser; reason: string | null; now: string };
    }
  | { type: 'WithdrawWebhookSecretRotation'; data: { endpointID: string; by: ActingUser; now: string } };

export type WebhookEndpointState = { status: 'none' } | EndpointLifecycle;

type ExistingEndpoint = Exclude<WebhookEndpointState, { status: 'none' }>;

function requireEndpoint(state: WebhookEndpointState, endpointID: string): ExistingEndpoint {
  if (state.status === 'none') throw new DomainError('NOT_FOUND', `webhook endpoint ${endpointID} does not exist`);
  return state;
}

function requireStatus(endpoint: ExistingEndpoint, expected: WebhookEndpointStatus, action: string): void {
  if (endpoint.status !== expected) {
    throw new DomainError(
      'WRONG_STATE',
      `cannot ${action}: webhook endpoint ${endpoint.endpointID} is ${endpoint.status}, not ${expected}`,
    );
  }
}

function requireSameParty(by: ActingUser, endpoint: ExistingEndpoint): void {
  if (!samePartyRef(by.party, endpoint.party))
    throw new DomainError('OTHER_PARTY', `webhook endpoint ${endpoint.endpointID} belongs to another party`);
}

/** The segregation rule of API keys: same party, checker role, never the maker of the request. */
function requireChecker(by: ActingUser, endpoint: ExistingEndpoint, action: string): void {
  if (!by.roles.includes('checker')) throw new DomainError('ROLE_REQUIRED', `${action} needs the checker role`);
  requireSameParty(by, endpoint);
  if (by.userID === endpoint.requestedBy)
    throw new DomainError('SAME_USER', `cannot ${action}: the maker of a request cannot also check it`);
}

/** Whether the previous signing secret still signs at `now` (a rotation's overlap, not ended by a departure). */
const previousSigns = (endpoint: ExistingEndpoint, now: string): boolean =>
  acceptedSecrets(
    { current: endpoint.secret, previous: endpoint.previousSecret, previousValidUntil: endpoint.previousValidUntil },
    now,
  ).length > 1;

/**
 * Who has seen the endpoint's signing secrets, and whether the previous one still signs (src/domain/segregation.ts).
 */
export function endpointKeepers(endpoint: ExistingEndpoint, now: string): SecretKeepers {
  return {
    originalRequester: endpoint.requestedBy,
    holders: endpoint.secretHolders,
    previousAccepted: previousSigns(endpoint, now),
  };
}

/** Whether the user holds the endpoint's previous signing secret, still in use at `now`. */
export const holdsPreviousSigningSecret = (endpoint: ExistingEndpoint, userID: string, now: string): boolean =>
  endpoint.secretHolders.length > 1 && endpoint.secretHolders.at(-2) === userID && previousSigns(endpoint, now);

/** The endpoint's secrets and their schemes, as the signer takes them (`signingAt` says which sign at a time). */
export function endpointSigning(
  endpoint: Pick<
    ExistingEndpoint,
    'secret' | 'signatureScheme' | 'previousSecret' | 'previousSignatureScheme' | 'previousValidUntil'
  >,
): EndpointSigning<SealedWebhookSecret> {
  return {
    current: endpoint.secret,
    // Null only before the approval, when nothing is signed.
    scheme: endpoint.signatureScheme ?? CURRENT_SIGNATURE_SCHEME,
    previous: endpoint.previousSecret,
    previousScheme: endpoint.previousSignatureScheme,
    previousValidUntil: endpoint.previousValidUntil,
  };
}

/**
 * The sealed secrets a delivery at `now` is signed with, and how: the current one, and the previous one during an
 * overlap.
 */
export function signingSecrets(
  endpoint: Parameters<typeof endpointSigning>[0],
  now: string,
): { scheme: WebhookSignatureScheme; secrets: SealedWebhookSecret[] } {
  return signingAt(endpointSigning(endpoint), now);
}

function decide(command: WebhookEndpointCommand, state: WebhookEndpointState): WebhookEndpointEvent[] {
  switch (command.type) {
    case 'RequestWebhookEndpoint': {
      const { by, now, ...terms } = command.data;
      if (state.status !== 'none')
        throw new DomainError('ALREADY_EXISTS', `webhook endpoint ${terms.endpointID} already exists`);
      if (!by.roles.includes('maker'))
        throw new DomainError('ROLE_REQUIRED', 'registering a webhook endpoint needs the maker role');
      if (!samePartyRef(by.party, terms.party))
        throw new DomainError('OTHER_PARTY', 'a webhook endpoint can only be registered for the maker’s own party');
      return [{ type: 'WebhookEndpointRequested', data: { ...terms, requestedBy: by.userID, requestedAt: now } }];
    }
    case 'ApproveWebhookEndpoint': {
      const { endpointID, by, secret, now } = command.data;
      const endpoint = requireEndpoint(state, endpointID);
      requireChecker(by, endpoint, 'approve the webhook endpoint');
      requireMayVouch(
        by.userID,
        { maker: endpoint.requestedBy, keepers: endpointKeepers(endpoint, now) },
        'approve the webhook endpoint',
        `webhook endpoint ${endpointID}`,
      );
      requireStatus(endpoint, 'pending', 'approve the webhook endpoint');
      return [
        {
          type: 'WebhookEndpointApproved',
          data: {
            endpointID,
            approvedBy: by.userID,
            approvedAt: now,
            secret,
            signatureScheme: CURRENT_SIGNATURE_SCHEME,
          },
        },
      ];
    }
    case 'RejectWebhookEndpoint': {
      const { endpointID, by, reason, now } = command.data;
      const endpoint = requireEndpoint(state, endpointID);
      requireChecker(by, endpoint, 'reject the webhook endpoint');
      requireStatus(endpoint, 'pending', 'reject the webhook endpoint');
      return [
        { type: 'WebhookEndpointRejected', data: { endpointID, rejectedBy: by.userID, reason, rejectedAt: now } },
      ];
    }
    case 'DisableWebhookEndpoint': {
      const { endpointID, by, reason, now } = command.data;
      const endpoint = requireEndpoint(state, endpointID);
      if (by !== SYSTEM_DISABLER) {
        if (!by.roles.includes('maker') && !by.roles.includes('checker'))
          throw new DomainError('ROLE_REQUIRED', 'disabling a webhook endpoint needs the maker or checker role');
        requireSameParty(by, endpoint);
      }
      requireStatus(endpoint, 'active', 'disable the webhook endpoint');
      return [
        {
          type: 'WebhookEndpointDisabled',
          data: {
            endpointID,
            disabledBy: by === SYSTEM_DISABLER ? SYSTEM_DISABLER : by.userID,
            reason,
            disabledAt: now,
          },
        },
      ];
    }
    case 'RetireWebhookEndpointOfDepartedUser': {
      const { endpointID, userID, reason, now } = command.data;
      if (state.status === 'none') return [];
      if (state.secretHolder === userID) {
        if (state.status === 'pending')
          return [
            {
              type: 'WebhookEndpointRejected',
              data: { endpointID, rejectedBy: SYSTEM_DISABLER, reason, rejectedAt: now, departedUserID: userID },
            },
          ];
        if (state.status === 'active')
          return [
            {
              type: 'WebhookEndpointDisabled',
              data: { endpointID, disabledBy: SYSTEM_DISABLER, reason, disabledAt: now, departedUserID: userID },
            },
          ];
        return [];
      }
      // As an API key's (api-keys.ts): the previous secret they hold stops signing, their pending rotation is
      // withdrawn.
      const events: WebhookEndpointEvent[] = [];
      if (holdsPreviousSigningSecret(state, userID, now)) {
        events.push({
          type: 'WebhookEndpointPreviousSecretEnded',
          data: { endpointID, endedAt: now, departedUserID: userID },
        });
      }
      if (state.rotation?.requestedBy === userID) {
        events.push({
          type: 'WebhookSecretRotationWithdrawn',
          data: { endpointID, withdrawnBy: SYSTEM_DISABLER, withdrawnAt: now, departedUserID: userID },
        });
      }
      return events;
    }
    case 'RequestWebhookSecretRotation': {
      const { endpointID, by, reason, now } = command.data;
      const endpoint = requireEndpoint(state, endpointID);
      requireSameParty(by, endpoint);
      checkRotationRequest(by, endpoint.rotation, `webhook endpoint ${endpointID}`);
      requireStatus(endpoint, 'active', 'request a secret rotation');
      return [
        {
          type: 'WebhookSecretRotationRequested',
          data: { endpointID, requestedBy: by.userID, reason, requestedAt: now },
        },
      ];
    }
    case 'ApproveWebhookSecretRotation': {
      const { endpointID, by, secret, overlapHours, now } = command.data;
      const endpoint = requireEndpoint(state, endpointID);
      requireSameParty(by, endpoint);
      const rotation = checkRotationDecision(by, endpoint.rotation, `webhook endpoint ${endpointID}`, 'approve');
      requireMayVouch(
        by.userID,
        { maker: rotation.requestedBy, keepers: endpointKeepers(endpoint, now) },
        'approve the rotation',
        `webhook endpoint ${endpointID}`,
      );
      requireStatus(endpoint, 'active', 'approve the secret rotation'); // disabled meanwhile
      // The new secret is made in today's form, so a rotation is also how a legacy endpoint moves to Standard Webhooks.
      return [
        {
          type: 'WebhookSecretRotated',
          data: {
            endpointID,
            approvedBy: by.userID,
            rotatedAt: now,
            secret,
            previousValidUntil: overlapEnd(now, overlapHours),
            secretHolder: rotation.requestedBy,
            signatureScheme: CURRENT_SIGNATURE_SCHEME,
          },
        },
      ];
    }
    case 'RejectWebhookSecretRotation': {
      const { endpointID, by, reason, now } = command.data;
      const endpoint = requireEndpoint(state, endpointID);
      requireSameParty(by, endpoint);
      checkRotationDecision(by, endpoint.rotation, `webhook endpoint ${endpointID}`, 'reject');
      return [
        { type: 'WebhookSecretRotationRejected', data: { endpointID, rejectedBy: by.userID, reason, rejectedAt: now } },
      ];
    }
    case 'WithdrawWebhookSecretRotation': {
      const { endpointID, by, now } = command.data;
      const endpoint = requireEndpoint(state, endpointID);
      requireSameParty(by, endpoint);
      checkRotationWithdrawal(by, endpoint.rotation, `webhook endpoint ${endpointID}`);
      return [
        { type: 'WebhookSecretRotationWithdrawn', data: { endpointID, withdrawnBy: by.userID, withdrawnAt: now } },
      ];
    }
    default:
      return assertNever(command);
  }
}

/** The one lifecycle fold (webhook-endpoint-lifecycle.ts); before the registration the state stays none. */
const evolve = (state: WebhookEndpointState, event: WebhookEndpointEvent): WebhookEndpointState =>
  evolveEndpoint(state.status === 'none' ? null : state, event) ?? state;

export const webhookEndpointDecider: Decider<WebhookEndpointCommand, WebhookEndpointState, WebhookEndpointEvent> = {
  initialState: () => ({ status: 'none' }),
  decide,
  evolve,
};
