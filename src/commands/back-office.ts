import { randomUUID } from 'node:crypto';
import type { EventStore } from '../ports/event-store.ts';
import type { Tracing } from '../ports/tracing.ts';
import { DomainError } from '../domain/errors.ts';
import type { UserRole } from '../domain/events.ts';
import { formatPartyRef, type PartyRef, type PartyType } from '../domain/parties.ts';
import { streams } from '../domain/streams.ts';
import { email as parseEmail, requiredText, shortCode as parseShortCode } from '../domain/text.ts';
import { normalizePhone } from '../domain/phone.ts';
import { hashPassword, MIN_PASSWORD_LENGTH } from '../domain/passwords.ts';
import { parseKeyTerms, type KeyTermsInput } from '../domain/api-key-terms.ts';
import {
  formatApiKey,
  hashSecret,
  isKeyID,
  newKeyID,
  newSecret,
  type ApiKeyEnvironment,
} from '../domain/api-key-secrets.ts';
import { apiKeyDecider, effectiveStatus, type ActingUser, type ApiKeyCommand, type ApiKeyState } from './api-keys.ts';
import { individualDecider, partyDecider, type PartyState } from './parties.ts';
import { userDecider, type UserState } from './users.ts';
import {
  lastPosition,
  loadState,
  runCommand,
  runDecisionCommitted,
  type CommandContext,
  type StateCache,
} from './pipeline.ts';
import type { Decider } from './decider.ts';
import type { ApiKeyEvent } from '../domain/events.ts';
import type { DeliveredSecret, HeldCredentials, Subject } from './held-credentials.ts';
import { endIfHolderLeft, holderLeftError } from './departures.ts';

/**
 * The back-office commands: onboarding parties and users, and the API-key lifecycle. Each validates its
 * input, makes the ids, time and secrets the pure deciders must not make, and runs the one pipeline. The
 * CLI and the web console call these; they never append events themselves.
 */
export interface BackOfficeDeps {
  store: EventStore;
  cache?: StateCache;
  clock: () => Date;
  /** Decimal places of the asset: amounts with more are refused. */
  assetScale: number;
  /** Tracing (src/ports/tracing.ts): an operation's approval continues the operation's trace. None: off. */
  tracing?: Tracing;
}

/** The commands that make a credential hold it here for its one owner, instead of returning it to their caller. */
export interface CredentialDeps extends BackOfficeDeps {
  credentials: HeldCredentials;
  /** API_KEY_ENVIRONMENT: the prefix of the keys issued, `wo_live_` or `wo_test_` (default live). */
  apiKeyEnvironment?: ApiKeyEnvironment;
}

/**
 * The commands that approve a secret rotation: SECRET_ROTATION_OVERLAP_HOURS, how long the previous secret keeps
 * working.
 */
export interface RotationDeps extends CredentialDeps {
  secretRotationOverlapHours: number;
}

const now = (deps: BackOfficeDeps) => deps.clock().toISOString();

export async function onboardParty(
  deps: BackOfficeDeps,
  input: { partyType: PartyType; name: unknown; shortCode: unknown },
  context: CommandContext,
): Promise<{ partyID: string }> {
  const name = requiredText('name', input.name, 100);
  const shortCode = parseShortCode('shortCode', input.shortCode);
  const partyID = randomUUID();
  await runCommand(deps, {
    stream: streams[input.partyType](partyID),
    decider: partyDecider,
    command: { type: 'OnboardParty', data: { partyType: input.partyType, partyID, name, shortCode, now: now(deps) } },
    context,
    // The claim stream can be created once only: that is what keeps short codes unique across processes.
    alsoAppend: () => [
      {
        stream: streams.shortCode(input.partyType, shortCode),
        expectedRevision: 'no_stream',
        events: [{ type: 'ShortCodeClaimed', data: { partyType: input.partyType, shortCode, partyID } }],
      },
    ],
    onConflict: () =>
      new DomainError(
        'SHORT_CODE_TAKEN',
        `short code ${shortCode} is already used by another ${input.partyType}`,
        'shortCode',
      ),
  });
  return { partyID };
}

export async function registerIndividual(
  deps: BackOfficeDeps,
  input: { phone: unknown; name: unknown },
  context: CommandContext,
): Promise<{ phone: string }> {
  const phone = normalizePhone('phone', input.phone);
  const name = requiredText('name', input.name, 100);
  await runCommand(deps, {
    stream: streams.individual(phone),
    decider: individualDecider,
    command: { type: 'RegisterIndividual', data: { phone, name, now: now(deps) } },
    context,
  });
  return { phone };
}

export async function requireParty(deps: Pick<BackOfficeDeps, 'store' | 'cache'>, party: PartyRef) {
  const { state } = await loadState<PartyState, never>(deps, streams[party.type](party.id), partyDecider);
  if (state.status !== 'onboarded')
    throw new DomainError('NOT_FOUND', `${formatPartyRef(party)} does not exist`, 'party');
  return state;
}

const ROLES: UserRole[] = ['maker', 'checker'];

export function parsePassword(field: string, value: unknown): string {
  if (typeof value !== 'string' || value.length < MIN_PASSWORD_LENGTH || value.length > 1024) {
    throw new DomainError('INVALID_INPUT', `password must be ${MIN_PASSWORD_LENGTH} to 1024 characters`, field);
  }
  return value;
}

/** `maker`, `checker`, `maker,checker` or an array of them. */
export function parseRoles(field: string, value: unknown): UserRole[] {
  const raw =
    typeof value === 'string'
      ? value
          .split(',')
          .map((r) => r.trim())
          .filter(Boolean)
      : value;
  if (!Array.isArray(raw) || !raw.every((role): role is UserRole => ROLES.includes(role as UserRole))) {
    throw new DomainError('INVALID_INPUT', `${field} must be maker, checker, or both`, field);
  }
  return raw;
}

/**
 * Adds a user at once. Only the operator CLI (break-glass, direct store access: the first administrator,
 * scripts) and the demo seed call this; in the console a user is added through an access request that
 * another administrator approves (src/commands/user-admin.ts).
 */
export async function addUser(
  deps: BackOfficeDeps,
  input: { party: PartyRef | null; email: unknown; password: unknown; roles: unknown; platformAdmin?: boolean },
  context: CommandContext,
): Promise<{ userID: string }> {
  const email = parseEmail('email', input.email);
  const password = parsePassword('password', input.password);
  const roles = parseRoles('roles', input.roles);
  if (input.party) await requireParty(deps, input.party);
  const userID = randomUUID();
  const passwordHash = await hashPassword(password);
  await runCommand(deps, {
    stream: streams.user(userID),
    decider: userDecider,
    command: {
      type: 'AddUser',
      data: {
        userID,
        party: input.party,
        email,
        passwordHash,
        roles,
        platformAdmin: input.platformAdmin ?? false,
        mustChangePassword: false,
        now: now(deps),
      },
    },
    context,
    alsoAppend: () => [
      {
        stream: streams.userEmail(email),
        expectedRevision: 'no_stream',
        events: [{ type: 'EmailClaimed', data: { email, userID } }],
      },
    ],
    onConflict: () => new DomainError('EMAIL_TAKEN', `a user with email ${email} already exists`, 'email'),
  });
  return { userID };
}

export type ActiveUser = Extract<UserState, { status: 'active' }>;
export type ExistingUser = Exclude<UserState, { status: 'none' }>;

/** Finds a console user by email through the email's claim stream, whether active or disabled. */
export async function findAnyUserByEmail(
  deps: Pick<BackOfficeDeps, 'store' | 'cache'>,
  rawEmail: unknown,
): Promise<ExistingUser> {
  const email = parseEmail('email', rawEmail);
  const [claim] = await deps.store.readStream(streams.userEmail(email), { maxCount: 1 });
  if (!claim) throw new DomainError('NOT_FOUND', `no user with email ${email}`, 'email');
  const { state } = await loadState(deps, streams.user((claim.data as { userID: string }).userID), userDecider);
  if (state.status === 'none') throw new DomainError('NOT_FOUND', `no user with email ${email}`, 'email');
  return state;
}

/** Finds a console user who may act: a disabled user is refused (and cannot log in). */
export async function findUserByEmail(
  deps: Pick<BackOfficeDeps, 'store' | 'cache'>,
  rawEmail: unknown,
): Promise<ActiveUser> {
  const user = await findAnyUserByEmail(deps, rawEmail);
  if (user.status !== 'active') throw new DomainError('WRONG_STATE', `user ${user.email} is disabled`, 'email');
  return user;
}

export const actingUser = (user: ActiveUser): ActingUser => ({
  userID: user.userID,
  party: user.party,
  roles: user.roles,
});
export const userContext = (user: ActiveUser, correlationId: string): CommandContext => ({
  actor: `user:${user.userID}`,
  correlationId,
});

export async function requestApiKey(
  deps: BackOfficeDeps,
  user: ActiveUser,
  input: KeyTermsInput,
  correlationId: string,
): Promise<{ keyID: string; position: number }> {
  if (!user.party) throw new DomainError('OTHER_PARTY', 'a platform administrator has no party to request a key for');
  const terms = parseKeyTerms(input, deps.assetScale);
  const keyID = newKeyID();
  const { position } = await runApiKeyCommand(
    deps,
    keyID,
    { type: 'RequestApiKey', data: { ...terms, keyID, party: user.party, by: actingUser(user), now: now(deps) } },
    userContext(user, correlationId),
  );
  return { keyID, position };
}

/**
 * Approves a pending key. Its secret is held for the maker who asked for it, never returned to the checker:
 * segregation of duties rests on the checker never having held the key it approved. Held after the
 * approval commits, so that of two checkers approving at once only the winner's secret is held; should the
 * hold itself fail, the key works but nobody has its secret, and the maker rotates it.
 */
export async function approveApiKey(
  deps: CredentialDeps,
  user: ActiveUser,
  keyID: string,
  correlationId: string,
): Promise<{ keyID: string; heldFor: string; position: number }> {
  if (!isKeyID(keyID)) throw new DomainError('NOT_FOUND', `API key ${keyID.slice(0, 40)} does not exist`);
  const secret = newSecret();
  const { heldFor, position } = await approveForItsMaker<ApiKeyCommand, ApiKeyState, ApiKeyEvent>(deps, {
    subject: { kind: 'api-key', id: keyID, what: `API key ${keyID}` },
    stream: streams.apiKey(keyID),
    decider: apiKeyDecider,
    command: {
      type: 'ApproveApiKey',
      data: { keyID, by: actingUser(user), secretHash: hashSecret(secret), now: now(deps) },
    },
    credential: (key) => ({
      kind: 'api-key',
      keyID,
      label: key.label,
      apiKey: formatApiKey(keyID, secret, deps.apiKeyEnvironment),
    }),
    context: userContext(user, correlationId),
  });
  return { keyID, heldFor, position };
}

/**
 * A checker's approval of what a maker requested (an API key, a webhook endpoint), with the new secret held for
 * that maker alone: refused if the maker has left; decided on the subject's stream with the requester's state
 * read beside it; and, since the pipeline guards only what it writes, the holder checked again after the commit
 * (departures.ts: a departure that raced the approval ends it, and no secret is held). Returns for whom it waits,
 * and where the approval landed in the log.
 */
export async function approveForItsMaker<
  Command,
  State extends { status: string },
  Event extends { type: string; data: unknown },
>(
  deps: CredentialDeps,
  options: {
    subject: { kind: 'api-key' | 'webhook-endpoint'; id: string; what: string };
    stream: string;
    decider: Decider<Command, State, Event>;
    command: Command;
    credential: (asked: Exclude<State, { status: 'none' }>) => DeliveredSecret;
    context: CommandContext;
  },
): Promise<{ heldFor: string; position: number }> {
  const { subject, stream, decider, command, context } = options;
  const { state: asked } = await loadState(deps, stream, decider);
  if (asked.status === 'none') throw new DomainError('NOT_FOUND', `${subject.what} does not exist`);
  const existing = asked as Exclude<State, { status: 'none' }>;
  const requestedBy = (existing as unknown as { requestedBy: string }).requestedBy;
  const { positions } = await runDecisionCommitted<{ subject: State; requester: UserState }, void>(deps, {
    read: { subject: { stream, ...decider }, requester: { stream: streams.user(requestedBy), ...userDecider } },
    decide: ({ subject: state, requester }) => {
      const events = decider.decide(command, state);
      requireStillMaker(requester, `approve ${subject.what}`);
      return { writes: [{ stream, events }], result: undefined };
    },
    context,
  });
  if (await endIfHolderLeft(deps, subject, requestedBy, context)) throw holderLeftError(subject.what);
  await deps.credentials.hold(requestedBy, options.credential(existing));
  return { heldFor: requestedBy, position: lastPosition(positions) };
}

/** A rotation asked for by a maker who has since left is not approved: its new secret would go to them. */
export async function requireRotationRequesterStillMaker<S extends { status: string }>(
  deps: BackOfficeDeps,
  stream: string,
  decider: { evolve: (state: S, event: any) => S; initialState: () => S },
  action: string,
): Promise<void> {
  const { state } = await loadState(deps, stream, decider);
  const requestedBy = (state as { rotation?: { requestedBy: string } | null }).rotation?.requestedBy;
  if (!requestedBy) return; // the decider refuses: no rotation pending
  requireStillMaker((await loadState(deps, streams.user(requestedBy), userDecider)).state, action);
}

/**
 * A request whose maker has since been disabled or lost the maker role is not approved: the secret would go to someone
 * who left.
 */
export function requireStillMaker(requester: UserState, action: string): void {
  if (requester.status !== 'active' || !requester.roles.includes('maker')) {
    throw new DomainError(
      'WRONG_STATE',
      `cannot ${action}: the maker who requested it is ` +
        `${requester.status === 'active' ? 'no longer a maker' : 'disabled'}`,
    );
  }
}

/**
 * Approves a pending rotation of a key's secret: a new secret, held for the maker who asked for the rotation
 * (never for the checker), like an approval's; the previous secret keeps working until `previousValidUntil`.
 * The vault keeps one secret per user and key, so a newer rotation's secret replaces one still uncollected.
 */
export async function approveApiKeyRotation(
  deps: RotationDeps,
  user: ActiveUser,
  keyID: string,
  correlationId: string,
): Promise<{ keyID: string; heldFor: string; previousValidUntil: string; position: number }> {
  const secret = newSecret();
  await requireRotationRequesterStillMaker(
    deps,
    streams.apiKey(keyID),
    apiKeyDecider,
    `approve the rotation of API key ${keyID}`,
  );
  const command: ApiKeyCommand = {
    type: 'ApproveApiKeyRotation',
    data: {
      keyID,
      by: actingUser(user),
      secretHash: hashSecret(secret),
      overlapHours: deps.secretRotationOverlapHours,
      now: now(deps),
    },
  };
  const { state, position } = await runApiKeyCommand(deps, keyID, command, userContext(user, correlationId));
  if (state.status === 'none') throw new DomainError('NOT_FOUND', `API key ${keyID} does not exist`);
  if (await endIfHolderLeft(deps, { kind: 'api-key', id: keyID }, state.secretHolder, userContext(user, correlationId)))
    throw holderLeftError(`the rotation of API key ${keyID}`);
  await deps.credentials.hold(state.secretHolder, {
    kind: 'api-key',
    keyID,
    label: state.label,
    apiKey: formatApiKey(keyID, secret, deps.apiKeyEnvironment),
  });
  return { keyID, heldFor: state.secretHolder, previousValidUntil: state.previousValidUntil!, position };
}

/** The one collection of a credential held for `user`: the second attempt, or anyone else's, finds nothing. */
export async function collectCredential<K extends Subject['kind']>(
  deps: CredentialDeps,
  user: ActiveUser,
  subject: { kind: K; id: string },
): Promise<Extract<DeliveredSecret, { kind: K }>> {
  const secret = await deps.credentials.takeOne(user.userID, subject);
  if (!secret || secret.kind !== subject.kind) {
    throw new DomainError(
      'NOT_FOUND',
      `no ${subject.kind} secret of ${subject.id.slice(0, 60)} waits for ${user.email}: it is collected once, by ` +
        'its owner, within 24 hours of the approval',
    );
  }
  return secret as Extract<DeliveredSecret, { kind: K }>;
}

export type KeyDecision =
  | { type: 'RejectApiKey'; reason: string | null }
  | { type: 'WithdrawApiKeyRequest' }
  | { type: 'RequestApiKeyRevocation'; reason: unknown }
  | { type: 'ApproveApiKeyRevocation' }
  | { type: 'RejectApiKeyRevocation'; reason: string | null };

/** Every other step of the lifecycle: returns the key's state after it. */
export async function decideOnApiKey(
  deps: BackOfficeDeps,
  user: ActiveUser,
  keyID: string,
  decision: KeyDecision,
  correlationId: string,
): Promise<{ keyID: string; state: string; position: number }> {
  const base = { keyID, by: actingUser(user), now: now(deps) };
  const command: ApiKeyCommand =
    decision.type === 'RequestApiKeyRevocation'
      ? { type: decision.type, data: { ...base, reason: requiredText('reason', decision.reason, 500) } }
      : decision.type === 'ApproveApiKeyRevocation' || decision.type === 'WithdrawApiKeyRequest'
        ? { type: decision.type, data: base }
        : {
            type: decision.type,
            data: { ...base, reason: decision.reason === null ? null : requiredText('reason', decision.reason, 500) },
          };
  const { state, position } = await runApiKeyCommand(deps, keyID, command, userContext(user, correlationId));
  return { keyID, state: state.status === 'none' ? 'none' : effectiveStatus(state, base.now), position };
}

/**
 * A step of a secret rotation other than its approval (which makes a secret: approveApiKeyRotation /
 * approveWebhookSecretRotation).
 */
export type RotationDecision =
  { type: 'request'; reason: unknown } | { type: 'reject'; reason: unknown } | { type: 'withdraw' };
export type RotationOutcome = { rotation: 'pending' | 'rejected' | 'withdrawn' };

/** A reason the decision needs (required to request, optional to reject), validated once for keys and endpoints. */
export function rotationReason(decision: RotationDecision): string | null {
  if (decision.type === 'request') return requiredText('reason', decision.reason, 500);
  if (decision.type === 'reject')
    return decision.reason === undefined || decision.reason === null || decision.reason === ''
      ? null
      : requiredText('reason', decision.reason, 500);
  return null;
}

export const ROTATION_OUTCOME: Record<RotationDecision['type'], RotationOutcome['rotation']> = {
  request: 'pending',
  reject: 'rejected',
  withdraw: 'withdrawn',
};

export async function decideOnApiKeyRotation(
  deps: BackOfficeDeps,
  user: ActiveUser,
  keyID: string,
  decision: RotationDecision,
  correlationId: string,
): Promise<{ keyID: string; position: number } & RotationOutcome> {
  const base = { keyID, by: actingUser(user), now: now(deps) };
  const reason = rotationReason(decision);
  const command: ApiKeyCommand =
    decision.type === 'request'
      ? { type: 'RequestApiKeyRotation', data: { ...base, reason: reason! } }
      : decision.type === 'reject'
        ? { type: 'RejectApiKeyRotation', data: { ...base, reason } }
        : { type: 'WithdrawApiKeyRotation', data: base };
  const { position } = await runApiKeyCommand(deps, keyID, command, userContext(user, correlationId));
  return { keyID, rotation: ROTATION_OUTCOME[decision.type], position };
}

function runApiKeyCommand(deps: BackOfficeDeps, keyID: string, command: ApiKeyCommand, context: CommandContext) {
  if (!isKeyID(keyID)) throw new DomainError('NOT_FOUND', `API key ${keyID.slice(0, 40)} does not exist`);
  return runCommand(deps, { stream: streams.apiKey(keyID), decider: apiKeyDecider, command, context });
}
