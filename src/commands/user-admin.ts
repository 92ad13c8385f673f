import { randomBytes, randomUUID } from 'node:crypto';
import type { AccessChange, UserRole } from '../domain/events.ts';
import { DomainError } from '../domain/errors.ts';
import type { PartyRef } from '../domain/parties.ts';
import { hashPassword, verifyPassword } from '../domain/passwords.ts';
import { streams } from '../domain/streams.ts';
import { newTemporaryPassword } from '../domain/temporary-passwords.ts';
import { email as parseEmail, requiredText } from '../domain/text.ts';
import {
  accessRequestDecider,
  changeCommand,
  needsTemporaryPassword,
  type AccessRequestState,
} from './access-requests.ts';
import {
  parsePassword,
  parseRoles,
  requireParty,
  type ActiveUser,
  type BackOfficeDeps,
  type CredentialDeps,
  type ExistingUser,
} from './back-office.ts';
import {
  lastPosition,
  loadState,
  runCommand,
  runDecision,
  runDecisionCommitted,
  type CommandContext,
} from './pipeline.ts';
import { userDecider, type ActingAdmin, type UserCommand, type UserState } from './users.ts';
import { departureOf, liveCredentialsOf, type LiveCredential } from './departures.ts';

/**
 * User administration: access requests (request, approve, reject), the narrowing changes that take effect at
 * once (disable, remove a role) and a user's own password change. Each validates its input, makes the ids,
 * time and password hashes the pure deciders must not make, and runs the one pipeline.
 */
const now = (deps: BackOfficeDeps) => deps.clock().toISOString();
const actingAdmin = (user: ActiveUser): ActingAdmin => ({ userID: user.userID, platformAdmin: user.platformAdmin });

export const isRequestID = (value: string): boolean => /^acr_[0-9a-f]{32}$/.test(value);
const newRequestID = () => `acr_${randomBytes(16).toString('hex')}`;

/** What an administrator asks for; the user is named by id (the console) once it exists. */
export type AccessChangeInput =
  | { kind: 'add-user'; party: PartyRef | null; email: unknown; roles: unknown }
  | { kind: 'add-role'; userID: string; role: unknown }
  | { kind: 'enable-user'; userID: string }
  | { kind: 'reset-password'; userID: string };

export async function loadUserState(
  deps: Pick<BackOfficeDeps, 'store' | 'cache'>,
  userID: string,
): Promise<ExistingUser> {
  if (!/^[0-9a-f-]{36}$/.test(userID)) throw new DomainError('NOT_FOUND', `user ${userID.slice(0, 40)} does not exist`);
  const { state } = await loadState(deps, streams.user(userID), userDecider);
  if (state.status === 'none') throw new DomainError('NOT_FOUND', `user ${userID} does not exist`);
  return state;
}

function parseRole(value: unknown): UserRole {
  const [role, ...more] = parseRoles('role', value);
  if (!role || more.length > 0) throw new DomainError('INVALID_INPUT', 'role must be maker or checker', 'role');
  return role;
}

const optionalReason = (value: unknown): string | null =>
  typeof value !== 'string' || value.trim() === '' ? null : requiredText('reason', value, 500);

async function toChange(deps: BackOfficeDeps, input: AccessChangeInput): Promise<AccessChange> {
  if (input.kind === 'add-user') {
    const email = parseEmail('email', input.email);
    const roles = input.party === null ? [] : parseRoles('roles', input.roles);
    if (input.party) await requireParty(deps, input.party);
    return {
      kind: 'add-user',
      userID: randomUUID(),
      party: input.party,
      email,
      roles,
      platformAdmin: input.party === null,
    };
  }
  const { userID, email } = await loadUserState(deps, input.userID);
  return input.kind === 'add-role'
    ? { kind: 'add-role', userID, email, role: parseRole(input.role) }
    : { kind: input.kind, userID, email };
}

/** An administrator asks for a change that grants or widens access; it waits for another administrator. */
export async function requestAccessChange(
  deps: BackOfficeDeps,
  admin: ActiveUser,
  input: AccessChangeInput,
  reason: unknown,
  context: CommandContext,
): Promise<{ requestID: string; change: AccessChange; position: number }> {
  const change = await toChange(deps, input);
  const requestID = newRequestID();
  const at = now(deps);
  const data = { requestID, change, reason: optionalReason(reason), by: actingAdmin(admin), now: at };
  const { positions } = await runDecisionCommitted<
    { request: AccessRequestState; subject: UserState; email: boolean },
    void
  >(deps, {
    read: {
      request: { stream: streams.accessRequest(requestID), ...accessRequestDecider },
      subject: { stream: streams.user(change.userID), ...userDecider },
      email: {
        stream: streams.userEmail(change.kind === 'add-user' ? change.email : '-'),
        initialState: () => false,
        evolve: () => true,
      },
    },
    decide: ({ request, subject, email }) => {
      const events = accessRequestDecider.decide({ type: 'RequestAccess', data }, request);
      // The change as it would be applied now: what cannot be approved is refused now, by the same rules.
      userDecider.decide(
        changeCommand(change, { requestID, approvedBy: admin.userID, passwordHash: '-', now: at }),
        subject,
      );
      if (change.kind === 'add-user' && email)
        throw new DomainError('EMAIL_TAKEN', `a user with email ${change.email} already exists`, 'email');
      return { writes: [{ stream: streams.accessRequest(requestID), events }], result: undefined };
    },
    context,
  });
  return { requestID, change, position: lastPosition(positions) };
}

async function loadRequest(
  deps: BackOfficeDeps,
  requestID: string,
): Promise<Exclude<AccessRequestState, { status: 'none' }>> {
  if (!isRequestID(requestID))
    throw new DomainError('NOT_FOUND', `access request ${requestID.slice(0, 40)} does not exist`);
  const { state } = await loadState(deps, streams.accessRequest(requestID), accessRequestDecider);
  if (state.status === 'none') throw new DomainError('NOT_FOUND', `access request ${requestID} does not exist`);
  return state;
}

/**
 * Another administrator approves: the request's approval and the change itself are appended atomically.
 * Adding a user and resetting a password make a one-time temporary password in two halves
 * (domain/temporary-passwords.ts): the first is held for the requesting administrator, the second for the
 * approving one, each to be collected once by its owner and handed to the user, who must change the
 * password at their next login. Neither half is returned here: the caller learns only that they exist.
 */
export async function approveAccessRequest(
  deps: CredentialDeps,
  admin: ActiveUser,
  requestID: string,
  context: CommandContext,
): Promise<{
  requestID: string;
  change: AccessChange;
  temporaryPassword: { firstHalfFor: string; secondHalfFor: string } | null;
  /** Where the approval landed in the log. */
  position: number;
}> {
  const { change, requestedBy } = await loadRequest(deps, requestID);
  const temporary = needsTemporaryPassword(change) ? newTemporaryPassword() : null;
  const passwordHash = temporary ? await hashPassword(temporary.password) : '';
  const userStream = streams.user(change.userID);
  const { positions } = await runDecisionCommitted<
    { request: AccessRequestState; subject: UserState; requester: UserState },
    void
  >(deps, {
    read: {
      request: { stream: streams.accessRequest(requestID), ...accessRequestDecider },
      subject: { stream: userStream, ...userDecider },
      requester: { stream: streams.user(requestedBy), ...userDecider },
    },
    decide: ({ request, subject, requester }) => {
      const at = now(deps);
      const requesterActive = requester.status === 'active' && requester.platformAdmin;
      const approved = accessRequestDecider.decide(
        { type: 'ApproveAccessRequest', data: { requestID, by: actingAdmin(admin), requesterActive, now: at } },
        request,
      );
      const applied = userDecider.decide(
        changeCommand(change, { requestID, approvedBy: admin.userID, passwordHash, now: at }),
        subject,
      );
      const claim =
        change.kind === 'add-user'
          ? [
              {
                stream: streams.userEmail(change.email),
                expectedRevision: 'no_stream' as const,
                events: [{ type: 'EmailClaimed', data: { email: change.email, userID: change.userID } }],
              },
            ]
          : [];
      return {
        writes: [
          { stream: streams.accessRequest(requestID), events: approved },
          { stream: userStream, events: applied },
          ...claim,
        ],
        result: undefined,
      };
    },
    context,
    finalConflict: (conflict) =>
      change.kind === 'add-user' && conflict.stream === streams.userEmail(change.email)
        ? new DomainError('EMAIL_TAKEN', `a user with email ${change.email} already exists`, 'email')
        : undefined,
  });
  const position = lastPosition(positions);
  if (!temporary) return { requestID, change, temporaryPassword: null, position };
  const forUser = { kind: 'password-half' as const, requestID, email: change.email };
  await deps.credentials.hold(requestedBy, { ...forUser, half: 'first', value: temporary.first });
  await deps.credentials.hold(admin.userID, { ...forUser, half: 'second', value: temporary.second });
  return {
    requestID,
    change,
    temporaryPassword: { firstHalfFor: requestedBy, secondHalfFor: admin.userID },
    position,
  };
}

/** Any administrator rejects a pending request; its own requester thereby withdraws it. */
export async function rejectAccessRequest(
  deps: BackOfficeDeps,
  admin: ActiveUser,
  requestID: string,
  reason: unknown,
  context: CommandContext,
): Promise<{ requestID: string; change: AccessChange; position: number }> {
  const { change } = await loadRequest(deps, requestID);
  const { position } = await runCommand(deps, {
    stream: streams.accessRequest(requestID),
    decider: accessRequestDecider,
    command: {
      type: 'RejectAccessRequest',
      data: { requestID, by: actingAdmin(admin), reason: optionalReason(reason), now: now(deps) },
    },
    context,
  });
  return { requestID, change, position };
}

/**
 * A narrowing change and, in the same atomic append, the end of every key and endpoint whose secret only the
 * user holds (departures.ts): those the user requested, listed first, each decided again on its state at the
 * append. Returns what was ended.
 */
async function narrow(
  deps: BackOfficeDeps,
  subject: ExistingUser,
  command: UserCommand,
  why: string,
  context: CommandContext,
): Promise<LiveCredential[]> {
  const at = command.data.now;
  const credentials = await liveCredentialsOf(deps.store, subject, at);
  const departure = departureOf(subject.userID, credentials, at, why);
  const userStream = streams.user(subject.userID);
  await runDecision<Record<string, unknown>, void>(deps, {
    read: { subject: { stream: userStream, ...userDecider }, ...departure.read } as never,
    decide: (states) => ({
      writes: [
        { stream: userStream, events: userDecider.decide(command, states.subject as UserState) },
        ...departure.writes(states),
      ],
      result: undefined,
    }),
    context,
  });
  // An approval that read the user as a maker before this commit, of a request written after the listing, may
  // have committed meanwhile: list again and end it too. (Approvals that commit later end themselves:
  // endIfHolderLeft in departures.ts.)
  const ended = [...credentials];
  for (let round = 0; round < 3; round++) {
    const known = new Set(ended.map((c) => `${c.kind}:${c.id}`));
    const stragglers = (await liveCredentialsOf(deps.store, subject, at)).filter(
      (c) => !known.has(`${c.kind}:${c.id}`),
    );
    if (stragglers.length === 0) break;
    const late = departureOf(subject.userID, stragglers, at, why);
    await runDecision<Record<string, unknown>, void>(deps, {
      read: late.read as never,
      decide: (states) => ({ writes: late.writes(states), result: undefined }),
      context,
    });
    ended.push(...stragglers);
  }
  return ended;
}

/**
 * Narrowing, at once: the user can no longer log in, the console ends their sessions, and the keys and webhook
 * endpoints they hold the secret of stop working (departures.ts).
 */
export async function disableUser(
  deps: BackOfficeDeps,
  admin: ActiveUser,
  userID: string,
  reason: unknown,
  context: CommandContext,
): Promise<{ userID: string; email: string; ended: LiveCredential[] }> {
  const subject = await loadUserState(deps, userID);
  const why = requiredText('reason', reason, 500);
  const ended = await narrow(
    deps,
    subject,
    { type: 'DisableUser', data: { userID, by: actingAdmin(admin), reason: why, now: now(deps) } },
    `${subject.email}, who holds its secret, was disabled: ${why}`,
    context,
  );
  return { userID, email: subject.email, ended };
}

/** Narrowing, at once; removing the maker role also ends the keys and endpoints the user holds the secret of. */
export async function removeUserRole(
  deps: BackOfficeDeps,
  admin: ActiveUser,
  userID: string,
  role: unknown,
  context: CommandContext,
): Promise<{ userID: string; email: string; role: UserRole; ended: LiveCredential[] }> {
  const subject = await loadUserState(deps, userID);
  const parsed = parseRole(role);
  const command: UserCommand = {
    type: 'RemoveUserRole',
    data: { userID, role: parsed, by: actingAdmin(admin), now: now(deps) },
  };
  if (parsed !== 'maker') {
    await runCommand(deps, { stream: streams.user(userID), decider: userDecider, command, context });
    return { userID, email: subject.email, role: parsed, ended: [] };
  }
  const ended = await narrow(
    deps,
    subject,
    command,
    `${subject.email}, who holds its secret, is no longer a maker`,
    context,
  );
  return { userID, email: subject.email, role: parsed, ended };
}

/** A user changes their own password: the current one is required, and the new one must differ from it. */
export async function changeOwnPassword(
  deps: BackOfficeDeps,
  user: ActiveUser,
  input: { currentPassword: unknown; newPassword: unknown },
  context: CommandContext,
): Promise<void> {
  const current = await loadUserState(deps, user.userID);
  const given =
    typeof input.currentPassword === 'string' && input.currentPassword.length <= 1024 ? input.currentPassword : '';
  if (!(await verifyPassword(given, current.passwordHash)))
    throw new DomainError('INVALID_INPUT', 'the current password is wrong', 'currentPassword');
  const next = parsePassword('newPassword', input.newPassword);
  if (await verifyPassword(next, current.passwordHash))
    throw new DomainError('INVALID_INPUT', 'the new password must differ from the current one', 'newPassword');
  const passwordHash = await hashPassword(next);
  await runCommand(deps, {
    stream: streams.user(user.userID),
    decider: userDecider,
    command: { type: 'ChangeOwnPassword', data: { userID: user.userID, passwordHash, now: now(deps) } },
    context,
  });
}
