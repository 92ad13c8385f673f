import { DomainError } from '../domain/errors.ts';
import type { WebhookEndpointEvent } from '../domain/events.ts';
import { streams } from '../domain/streams.ts';
import { requiredText } from '../domain/text.ts';
import { isEndpointID, newEndpointID, parseWebhookEventTypes, parseWebhookUrl } from '../domain/webhook-endpoints.ts';
import { newWebhookSecret, sealWebhookSecret } from '../domain/webhook-secrets.ts';
import {
  actingUser,
  approveForItsMaker,
  requireRotationRequesterStillMaker,
  rotationReason,
  ROTATION_OUTCOME,
  userContext,
  type ActiveUser,
  type BackOfficeDeps,
  type CredentialDeps,
  type RotationDecision,
  type RotationDeps,
  type RotationOutcome,
} from './back-office.ts';
import { endIfHolderLeft, holderLeftError } from './departures.ts';
import { runCommand, type CommandContext } from './pipeline.ts';
import {
  SYSTEM_DISABLER,
  webhookEndpointDecider,
  type WebhookEndpointCommand,
  type WebhookEndpointState,
} from './webhook-endpoints.ts';

/**
 * The webhook-endpoint commands for the CLI (and later the console): validate the input, make the id, the
 * time and the signing secret the decider must not make, and run the one pipeline.
 */
export interface WebhookCommandDeps extends CredentialDeps {
  /** 32 bytes: seals each endpoint's signing secret in its approval event. */
  secretsKey: Buffer;
  /** WEBHOOK_ALLOW_INSECURE_LOCALHOST: http:// to the loopback host is accepted (development and tests). */
  allowInsecureLocalhost: boolean;
}

const now = (deps: BackOfficeDeps) => deps.clock().toISOString();

export async function requestWebhookEndpoint(
  deps: WebhookCommandDeps,
  user: ActiveUser,
  input: { url: unknown; eventTypes: unknown },
  correlationId: string,
): Promise<{ endpointID: string }> {
  if (!user.party)
    throw new DomainError('OTHER_PARTY', 'a platform administrator has no party to register a webhook endpoint for');
  const url = parseWebhookUrl('url', input.url, { allowInsecureLocalhost: deps.allowInsecureLocalhost });
  const eventTypes = parseWebhookEventTypes('eventTypes', input.eventTypes);
  const endpointID = newEndpointID();
  await run(
    deps,
    endpointID,
    {
      type: 'RequestWebhookEndpoint',
      data: { endpointID, party: user.party, url, eventTypes, by: actingUser(user), now: now(deps) },
    },
    userContext(user, correlationId),
  );
  return { endpointID };
}

/**
 * Approves a pending endpoint. Its signing secret is kept sealed in the approval event (the sender needs it)
 * and held for the maker who registered the endpoint, who collects it once; the checker never sees it.
 */
export async function approveWebhookEndpoint(
  deps: WebhookCommandDeps,
  user: ActiveUser,
  endpointID: string,
  correlationId: string,
): Promise<{ endpointID: string; heldFor: string }> {
  const secret = newWebhookSecret();
  const sealed = sealWebhookSecret(deps.secretsKey, endpointID, secret);
  if (!isEndpointID(endpointID))
    throw new DomainError('NOT_FOUND', `webhook endpoint ${endpointID.slice(0, 40)} does not exist`);
  const held = await approveForItsMaker<WebhookEndpointCommand, WebhookEndpointState, WebhookEndpointEvent>(deps, {
    subject: { kind: 'webhook-endpoint', id: endpointID, what: `webhook endpoint ${endpointID}` },
    stream: streams.webhookEndpoint(endpointID),
    decider: webhookEndpointDecider,
    command: {
      type: 'ApproveWebhookEndpoint',
      data: { endpointID, by: actingUser(user), secret: sealed, now: now(deps) },
    },
    credential: (endpoint) => ({ kind: 'webhook-endpoint', endpointID, url: endpoint.url, signingSecret: secret }),
    context: userContext(user, correlationId),
  });
  return { endpointID, heldFor: held.heldFor };
}

export async function rejectWebhookEndpoint(
  deps: WebhookCommandDeps,
  user: ActiveUser,
  endpointID: string,
  reason: unknown,
  correlationId: string,
): Promise<{ endpointID: string }> {
  const text = reason === undefined || reason === null ? null : requiredText('reason', reason, 500);
  await run(
    deps,
    endpointID,
    { type: 'RejectWebhookEndpoint', data: { endpointID, by: actingUser(user), reason: text, now: now(deps) } },
    userContext(user, correlationId),
  );
  return { endpointID };
}

export async function disableWebhookEndpoint(
  deps: WebhookCommandDeps,
  user: ActiveUser,
  endpointID: string,
  reason: unknown,
  correlationId: string,
): Promise<{ endpointID: string }> {
  const text = requiredText('reason', reason, 500);
  await run(
    deps,
    endpointID,
    { type: 'DisableWebhookEndpoint', data: { endpointID, by: actingUser(user), reason: text, now: now(deps) } },
    userContext(user, correlationId),
  );
  return { endpointID };
}

/**
 * Approves a pending rotation of the endpoint's signing secret: a new secret, sealed in the event like the
 * approval's and held for the maker who asked for the rotation. Deliveries are signed with both secrets until
 * `previousValidUntil`, so the receiver can switch to the new one meanwhile.
 */
export async function approveWebhookSecretRotation(
  deps: WebhookCommandDeps & Pick<RotationDeps, 'secretRotationOverlapHours'>,
  user: ActiveUser,
  endpointID: string,
  correlationId: string,
): Promise<{ endpointID: string; heldFor: string; previousValidUntil: string }> {
  const secret = newWebhookSecret();
  const sealed = sealWebhookSecret(deps.secretsKey, endpointID, secret);
  if (isEndpointID(endpointID))
    await requireRotationRequesterStillMaker(
      deps,
      streams.webhookEndpoint(endpointID),
      webhookEndpointDecider,
      `approve the secret rotation of webhook endpoint ${endpointID}`,
    );
  const command: WebhookEndpointCommand = {
    type: 'ApproveWebhookSecretRotation',
    data: {
      endpointID,
      by: actingUser(user),
      secret: sealed,
      overlapHours: deps.secretRotationOverlapHours,
      now: now(deps),
    },
  };
  const { state } = await run(deps, endpointID, command, userContext(user, correlationId));
  if (state.status === 'none') throw new DomainError('NOT_FOUND', `webhook endpoint ${endpointID} does not exist`);
  if (
    await endIfHolderLeft(
      deps,
      { kind: 'webhook-endpoint', id: endpointID },
      state.secretHolder,
      userContext(user, correlationId),
    )
  )
    throw holderLeftError(`the secret rotation of webhook endpoint ${endpointID}`);
  await deps.credentials.hold(state.secretHolder, {
    kind: 'webhook-endpoint',
    endpointID,
    url: state.url,
    signingSecret: secret,
  });
  return { endpointID, heldFor: state.secretHolder, previousValidUntil: state.previousValidUntil! };
}

/** Requesting, rejecting or withdrawing a rotation of the signing secret. */
export async function decideOnWebhookSecretRotation(
  deps: BackOfficeDeps,
  user: ActiveUser,
  endpointID: string,
  decision: RotationDecision,
  correlationId: string,
): Promise<{ endpointID: string } & RotationOutcome> {
  const base = { endpointID, by: actingUser(user), now: now(deps) };
  const reason = rotationReason(decision);
  const command: WebhookEndpointCommand =
    decision.type === 'request'
      ? { type: 'RequestWebhookSecretRotation', data: { ...base, reason: reason! } }
      : decision.type === 'reject'
        ? { type: 'RejectWebhookSecretRotation', data: { ...base, reason } }
        : { type: 'WithdrawWebhookSecretRotation', data: base };
  await run(deps, endpointID, command, userContext(user, correlationId));
  return { endpointID, rotation: ROTATION_OUTCOME[decision.type] };
}

/** The delivery consumer's verdict on an endpoint that kept failing. */
export async function disableWebhookEndpointBySystem(
  deps: BackOfficeDeps,
  endpointID: string,
  reason: string,
  context: CommandContext,
): Promise<void> {
  await run(
    deps,
    endpointID,
    { type: 'DisableWebhookEndpoint', data: { endpointID, by: SYSTEM_DISABLER, reason, now: now(deps) } },
    context,
  );
}

function run(deps: BackOfficeDeps, endpointID: string, command: WebhookEndpointCommand, context: CommandContext) {
  if (!isEndpointID(endpointID))
    throw new DomainError('NOT_FOUND', `webhook endpoint ${endpointID.slice(0, 40)} does not exist`);
  return runCommand(deps, {
    stream: streams.webhookEndpoint(endpointID),
    decider: webhookEndpointDecider,
    command,
    context,
  });
}
