import type {
  SealedWebhookSecret,
  WebhookEndpointEvent,
  WebhookEndpointRequested,
  WebhookSignatureScheme,
} from '../domain/events.ts';
import type { PendingRotation } from '../domain/secret-rotation.ts';
import { LEGACY_SIGNATURE_SCHEME } from '../domain/webhook-secrets.ts';
import { assertNever } from './decider.ts';

/**
 * A webhook endpoint's lifecycle, folded once: the decider (webhook-endpoints.ts), the read model
 * (src/projections/webhook-endpoints.ts, and the outbox's routes through it) and the dispatcher's signing view
 * all take their state from `evolveEndpoint`. Only the auditor folds the events again, on purpose
 * (src/audit/verify-business.ts): an independent check must not share the code it checks.
 */
export type EndpointTerms = Omit<WebhookEndpointRequested['data'], 'requestedBy' | 'requestedAt'>;

export type WebhookEndpointStatus = 'pending' | 'active' | 'rejected' | 'disabled';

export type EndpointLifecycle = EndpointTerms & {
  status: WebhookEndpointStatus;
  requestedBy: string;
  requestedAt: string;
  /** The checker who approved or rejected it. */
  decidedBy: string | null;
  decidedAt: string | null;
  /** The rejection's or the disabling's reason. */
  reason: string | null;
  /** A user id, or `system` (deliveries failed for a day, or the maker holding its secret departed). */
  disabledBy: string | null;
  disabledAt: string | null;
  rotation: PendingRotation | null;
  /** The last rotation. */
  rotatedAt: string | null;
  /** The current secret's signature scheme (null until approved; an approval that names none: legacy). */
  signatureScheme: WebhookSignatureScheme | null;
  previousSignatureScheme: WebhookSignatureScheme | null;
  /** Until when the previous secret signs too: the rotation's overlap, or the moment its holder departed. */
  previousValidUntil: string | null;
} & EndpointKeys;

/**
 * What only the write side keeps: the sealed secrets and who was handed each. A read model folds with none
 * (`withoutKeys`): no other field is made from them, so it keeps the same lifecycle without any secret.
 */
export type EndpointKeys = {
  secret: SealedWebhookSecret | null;
  /** The secret a rotation replaced: deliveries are signed with it too until `previousValidUntil`. */
  previousSecret: SealedWebhookSecret | null;
  /** Who holds the signing secret: the maker who registered the endpoint, then the maker of its last rotation. */
  secretHolder: string;
  /** Who was handed each signing secret, by generation: [g - 1] holds generation g (empty until approved). */
  secretHolders: string[];
};

export const withoutKeys = (requestedBy: string): EndpointKeys => ({
  secret: null,
  previousSecret: null,
  secretHolder: requestedBy,
  secretHolders: [],
});

/** The lifecycle after an event; null before the registration (a stream always starts with it). */
export function evolveEndpoint(state: EndpointLifecycle | null, event: WebhookEndpointEvent): EndpointLifecycle | null {
  if (event.type === 'WebhookEndpointRequested') {
    const { requestedBy, requestedAt, ...terms } = event.data;
    return {
      ...terms,
      status: 'pending',
      requestedBy,
      requestedAt,
      decidedBy: null,
      decidedAt: null,
      reason: null,
      disabledBy: null,
      disabledAt: null,
      rotation: null,
      rotatedAt: null,
      signatureScheme: null,
      previousSignatureScheme: null,
      previousValidUntil: null,
      ...withoutKeys(requestedBy),
    };
  }
  if (state === null) return null;
  switch (event.type) {
    case 'WebhookEndpointApproved':
      return {
        ...state,
        status: 'active',
        decidedBy: event.data.approvedBy,
        decidedAt: event.data.approvedAt,
        signatureScheme: event.data.signatureScheme ?? LEGACY_SIGNATURE_SCHEME,
        secret: event.data.secret,
        secretHolder: state.requestedBy,
        secretHolders: [state.requestedBy],
      };
    case 'WebhookEndpointRejected':
      return {
        ...state,
        status: 'rejected',
        decidedBy: event.data.rejectedBy,
        decidedAt: event.data.rejectedAt,
        reason: event.data.reason,
      };
    case 'WebhookEndpointDisabled':
      // A rotation waiting on a disabled endpoint can no longer be decided: it goes with the endpoint.
      return {
        ...state,
        status: 'disabled',
        disabledBy: event.data.disabledBy,
        disabledAt: event.data.disabledAt,
        reason: event.data.reason,
        rotation: null,
      };
    case 'WebhookSecretRotationRequested': {
      const { requestedBy, reason, requestedAt } = event.data;
      return { ...state, rotation: { requestedBy, reason, requestedAt } };
    }
    case 'WebhookSecretRotationRejected':
    case 'WebhookSecretRotationWithdrawn':
      return { ...state, rotation: null };
    case 'WebhookSecretRotated':
      return {
        ...state,
        rotation: null,
        rotatedAt: event.data.rotatedAt,
        signatureScheme: event.data.signatureScheme ?? LEGACY_SIGNATURE_SCHEME,
        // A read-model document stored before schemes were kept has none: it signed the legacy way.
        previousSignatureScheme: state.signatureScheme ?? LEGACY_SIGNATURE_SCHEME,
        previousValidUntil: event.data.previousValidUntil,
        secret: event.data.secret,
        previousSecret: state.secret,
        secretHolder: event.data.secretHolder,
        secretHolders: [...state.secretHolders, event.data.secretHolder],
      };
    case 'WebhookEndpointPreviousSecretEnded':
      // Its holder left: the previous secret stopped signing then, before its overlap's end.
      return { ...state, previousValidUntil: event.data.endedAt, previousSecret: null };
    default:
      return assertNever(event);
  }
}
