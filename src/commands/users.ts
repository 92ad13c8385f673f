import type { UserEvent, UserRole } from '../domain/events.ts';
import { DomainError } from '../domain/errors.ts';
import type { PartyRef } from '../domain/parties.ts';
import { assertNever, type Decider } from './decider.ts';

/**
 * A console user's lifecycle. Narrowing access (disable, remove a role) is decided here at once; widening it
 * (enable, add a role, an administrator's password reset, and the addition of a user through the console)
 * arrives only from an approved access request (src/commands/access-requests.ts), whose id it records. The
 * operator CLI's break-glass `user add` is the one widening that skips the request.
 *
 *   (none) -add-> active -disable-> disabled -enable (approved)-> active
 */
export type AddUser = {
  type: 'AddUser';
  data: {
    userID: string;
    party: PartyRef | null;
    email: string;
    passwordHash: string;
    roles: UserRole[];
    platformAdmin: boolean;
    /** A one-time temporary password, to be changed at the first login. */
    mustChangePassword: boolean;
    now: string;
  };
};

/** The administrator acting, as the handler loaded them. */
export interface ActingAdmin {
  userID: string;
  platformAdmin: boolean;
}

/** Who approved the widening, and under which access request. */
interface Approval {
  requestID: string;
  approvedBy: string;
}

export type UserCommand =
  | AddUser
  | { type: 'DisableUser'; data: { userID: string; by: ActingAdmin; reason: string; now: string } }
  | { type: 'EnableUser'; data: Approval & { userID: string; now: string } }
  | { type: 'AddUserRole'; data: Approval & { userID: string; role: UserRole; now: string } }
  | { type: 'RemoveUserRole'; data: { userID: string; role: UserRole; by: ActingAdmin; now: string } }
  | { type: 'ResetUserPassword'; data: Approval & { userID: string; passwordHash: string; now: string } }
  | { type: 'ChangeOwnPassword'; data: { userID: string; passwordHash: string; now: string } }
  /** After a login checked the password against `verifiedHash`: the same password under today's cost. */
  | { type: 'UpgradePasswordHash'; data: { userID: string; verifiedHash: string; passwordHash: string; now: string } };

export interface UserRecord {
  userID: string;
  party: PartyRef | null;
  email: string;
  passwordHash: string;
  roles: UserRole[];
  platformAdmin: boolean;
  /** Set by a temporary password; the console lets the user do nothing else until they choose their own. */
  mustChangePassword: boolean;
}

export type UserState =
  { status: 'none' } | (UserRecord & { status: 'active' }) | (UserRecord & { status: 'disabled' });

type ExistingUser = Exclude<UserState, { status: 'none' }>;

function requireUser(state: UserState, userID: string): ExistingUser {
  if (state.status === 'none') throw new DomainError('NOT_FOUND', `user ${userID} does not exist`);
  return state;
}

function requireActive(user: ExistingUser, action: string): void {
  if (user.status !== 'active')
    throw new DomainError('WRONG_STATE', `cannot ${action}: user ${user.email} is disabled`);
}

function requireAdmin(by: ActingAdmin, action: string): void {
  if (!by.platformAdmin) throw new DomainError('ROLE_REQUIRED', `${action} needs a platform administrator`);
}

function requirePartyUser(user: ExistingUser): void {
  if (user.platformAdmin)
    throw new DomainError(
      'INVALID_INPUT',
      `${user.email} is a platform administrator, who has no maker or checker role`,
      'role',
    );
}

function addUser(command: AddUser, state: UserState): UserEvent[] {
  const { userID, party, email, passwordHash, roles, platformAdmin, mustChangePassword, now } = command.data;
  if (state.status !== 'none') throw new DomainError('ALREADY_EXISTS', `user ${userID} already exists`);
  // A party user acts for one party with at least one role; an administrator acts for the platform only.
  if (platformAdmin && party !== null)
    throw new DomainError('INVALID_INPUT', 'a platform administrator belongs to no party', 'party');
  if (!platformAdmin && party === null)
    throw new DomainError('INVALID_INPUT', 'a user belongs to a distributor or a merchant', 'party');
  if (!platformAdmin && roles.length === 0)
    throw new DomainError('INVALID_INPUT', 'a party user needs the maker role, the checker role or both', 'roles');
  return [
    {
      type: 'UserAdded',
      data: {
        userID,
        party,
        email,
        passwordHash,
        roles: [...new Set(roles)].sort(),
        platformAdmin,
        mustChangePassword,
        addedAt: now,
      },
    },
  ];
}

function decide(command: UserCommand, state: UserState): UserEvent[] {
  if (command.type === 'AddUser') return addUser(command, state);
  const user = requireUser(state, command.data.userID);
  const { userID, now } = command.data;
  switch (command.type) {
    case 'DisableUser':
      requireAdmin(command.data.by, 'disabling a user');
      if (command.data.by.userID === userID)
        throw new DomainError('SAME_USER', 'you cannot disable yourself: another administrator must');
      if (user.status === 'disabled') throw new DomainError('WRONG_STATE', `user ${user.email} is already disabled`);
      return [
        {
          type: 'UserDisabled',
          data: { userID, disabledBy: command.data.by.userID, reason: command.data.reason, disabledAt: now },
        },
      ];
    case 'EnableUser':
      if (user.status !== 'disabled') throw new DomainError('WRONG_STATE', `user ${user.email} is not disabled`);
      return [
        {
          type: 'UserEnabled',
          data: { userID, requestID: command.data.requestID, approvedBy: command.data.approvedBy, enabledAt: now },
        },
      ];
    case 'AddUserRole': {
      const { role, requestID, approvedBy } = command.data;
      requirePartyUser(user);
      requireActive(user, `add the ${role} role`);
      if (user.roles.includes(role))
        throw new DomainError('WRONG_STATE', `user ${user.email} already has the ${role} role`);
      return [{ type: 'UserRoleAdded', data: { userID, role, requestID, approvedBy, addedAt: now } }];
    }
    case 'RemoveUserRole': {
      const { role, by } = command.data;
      requireAdmin(by, 'removing a role');
      requirePartyUser(user);
      if (!user.roles.includes(role))
        throw new DomainError('WRONG_STATE', `user ${user.email} does not have the ${role} role`);
      if (user.roles.length === 1)
        throw new DomainError(
          'INVALID_INPUT',
          `the ${role} role is the last role of ${user.email}: disable the user instead`,
          'role',
        );
      return [{ type: 'UserRoleRemoved', data: { userID, role, removedBy: by.userID, removedAt: now } }];
    }
    case 'ResetUserPassword':
      requireActive(user, 'reset the password');
      return [
        {
          type: 'UserPasswordReset',
          data: {
            userID,
            passwordHash: command.data.passwordHash,
            requestID: command.data.requestID,
            approvedBy: command.data.approvedBy,
            resetAt: now,
          },
        },
      ];
    case 'ChangeOwnPassword':
      requireActive(user, 'change the password');
      return [
        { type: 'UserPasswordChanged', data: { userID, passwordHash: command.data.passwordHash, changedAt: now } },
      ];
    case 'UpgradePasswordHash':
      // Nothing to do if the password changed (or the user was disabled) since the login checked it: a newer
      // password must never be replaced by the hash of the older one.
      if (user.status !== 'active' || user.passwordHash !== command.data.verifiedHash) return [];
      return [
        {
          type: 'UserPasswordHashUpgraded',
          data: { userID, passwordHash: command.data.passwordHash, upgradedAt: now },
        },
      ];
    default:
      return assertNever(command);
  }
}

function evolve(state: UserState, event: UserEvent): UserState {
  if (event.type === 'UserAdded') {
    const { userID, party, email, passwordHash, roles, platformAdmin } = event.data;
    return {
      status: 'active',
      userID,
      party,
      email,
      passwordHash,
      roles,
      platformAdmin,
      mustChangePassword: event.data.mustChangePassword === true,
    };
  }
  if (state.status === 'none') return state; // a user stream always starts with UserAdded
  switch (event.type) {
    case 'UserDisabled':
      return { ...state, status: 'disabled' };
    case 'UserEnabled':
      return { ...state, status: 'active' };
    case 'UserRoleAdded':
      return { ...state, roles: [...new Set([...state.roles, event.data.role])].sort() };
    case 'UserRoleRemoved':
      return { ...state, roles: state.roles.filter((role) => role !== event.data.role) };
    case 'UserPasswordReset':
      return { ...state, passwordHash: event.data.passwordHash, mustChangePassword: true };
    case 'UserPasswordChanged':
      return { ...state, passwordHash: event.data.passwordHash, mustChangePassword: false };
    case 'UserPasswordHashUpgraded':
      return { ...state, passwordHash: event.data.passwordHash };
    default:
      return assertNever(event);
  }
}

export const userDecider: Decider<UserCommand, UserState, UserEvent> = {
  initialState: () => ({ status: 'none' }),
  decide,
  evolve,
};
