import type { UserAdded, UserRole } from '../domain/events.ts';
import { DomainError } from '../domain/errors.ts';
import type { PartyRef } from '../domain/parties.ts';
import type { Decider } from './decider.ts';

export type AddUser = {
  type: 'AddUser';
  data: {
    userID: string;
    party: PartyRef | null;
    email: string;
    passwordHash: string;
    roles: UserRole[];
    platformAdmin: boolean;
    now: string;
  };
};

export type UserState =
  | { status: 'none' }
  | { status: 'active'; userID: string; party: PartyRef | null; email: string; passwordHash: string; roles: UserRole[]; platformAdmin: boolean };

export const userDecider: Decider<AddUser, UserState, UserAdded> = {
  initialState: () => ({ status: 'none' }),
  decide(command, state) {
    const { userID, party, email, passwordHash, roles, platformAdmin, now } = command.data;
    if (state.status !== 'none') throw new DomainError('ALREADY_EXISTS', `user ${userID} already exists`);
    // A party user acts for one party with at least one role; an administrator acts for the platform only.
    if (platformAdmin && party !== null) throw new DomainError('INVALID_INPUT', 'a platform administrator belongs to no party', 'party');
    if (!platformAdmin && party === null) throw new DomainError('INVALID_INPUT', 'a user belongs to a distributor or a merchant', 'party');
    if (!platformAdmin && roles.length === 0) throw new DomainError('INVALID_INPUT', 'a party user needs the maker role, the checker role or both', 'roles');
    return [{ type: 'UserAdded', data: { userID, party, email, passwordHash, roles: [...new Set(roles)].sort(), platformAdmin, addedAt: now } }];
  },
  evolve(_state, event) {
    const { userID, party, email, passwordHash, roles, platformAdmin } = event.data;
    return { status: 'active', userID, party, email, passwordHash, roles, platformAdmin };
  },
};
