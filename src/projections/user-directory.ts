import {
  accessRequestDecider,
  type AccessRequestRecord,
  type AccessRequestState,
} from '../commands/access-requests.ts';
import { userDecider, type UserState } from '../commands/users.ts';
import type {
  AccessChange,
  AccessRequestEvent,
  DistributorOnboarded,
  MerchantOnboarded,
  UserEvent,
  UserRole,
} from '../domain/events.ts';
import { formatPartyRef, type PartyRef, type PartyType } from '../domain/parties.ts';
import type { EventFilter, EventStore } from '../ports/event-store.ts';
import type { ConsumerLogger, Follower, Supervision } from '../shared/follower.ts';
import { followDirectory } from './directory-reads.ts';

/**
 * Parties, console users and access requests, in memory: what administrators list (the console's Users and
 * Access requests pages, `wallet-ops user list`, `access list`). Folded with the deciders' own evolve, so
 * that a listing and a decision never disagree on a state. Kept current by its follower (`followUsers`), which
 * a listing waits on to show another process's write. Never holds a password hash outside `user()`, and
 * `toPublicUser` is the only shape a user leaves in.
 */
export type UserRecordState = Exclude<UserState, { status: 'none' }>;

export interface PartySummary {
  type: PartyType;
  id: string;
  name: string;
  shortCode: string;
}

export interface PublicUser {
  userID: string;
  email: string;
  party: string | null;
  roles: UserRole[];
  platformAdmin: boolean;
  status: 'active' | 'disabled';
  mustChangePassword: boolean;
}

export interface PartyWithUsers extends PartySummary {
  users: PublicUser[];
}

const USER_EVENTS = new Set<string>([
  'UserAdded',
  'UserDisabled',
  'UserEnabled',
  'UserRoleAdded',
  'UserRoleRemoved',
  'UserPasswordReset',
  'UserPasswordChanged',
  'UserPasswordHashUpgraded',
]);
const REQUEST_EVENTS = new Set<string>(['AccessRequested', 'AccessRequestApproved', 'AccessRequestRejected']);

/** What the directory follows: by type, which the stores index (a stream prefix is a scan of every later event). */
export const USER_DIRECTORY_FILTER: EventFilter = {
  eventTypes: ['DistributorOnboarded', 'MerchantOnboarded', ...USER_EVENTS, ...REQUEST_EVENTS],
};

export const toPublicUser = (user: UserRecordState): PublicUser => ({
  userID: user.userID,
  email: user.email,
  party: user.party ? formatPartyRef(user.party) : null,
  roles: user.roles,
  platformAdmin: user.platformAdmin,
  status: user.status,
  mustChangePassword: user.mustChangePassword,
});

export class UserDirectory {
  private readonly partiesByRef = new Map<string, PartySummary>();
  private readonly usersByID = new Map<string, UserRecordState>();
  private readonly requestsByID = new Map<string, AccessRequestRecord>();
  private lastPosition = 0;

  get position(): number {
    return this.lastPosition;
  }

  apply(event: { type: string; data: unknown; stream: string; position: number }): void {
    if (event.position <= this.lastPosition) return;
    this.lastPosition = event.position;
    if (event.type === 'DistributorOnboarded') {
      const { distributorID, name, shortCode } = (event as DistributorOnboarded).data;
      this.partiesByRef.set(`distributor:${distributorID}`, {
        type: 'distributor',
        id: distributorID,
        name,
        shortCode,
      });
    } else if (event.type === 'MerchantOnboarded') {
      const { merchantID, name, shortCode } = (event as MerchantOnboarded).data;
      this.partiesByRef.set(`merchant:${merchantID}`, { type: 'merchant', id: merchantID, name, shortCode });
    } else if (USER_EVENTS.has(event.type)) {
      const userEvent = event as unknown as UserEvent;
      const next = userDecider.evolve(
        this.usersByID.get(userEvent.data.userID) ?? userDecider.initialState(),
        userEvent,
      );
      if (next.status !== 'none') this.usersByID.set(next.userID, next);
    } else if (REQUEST_EVENTS.has(event.type)) {
      const requestEvent = event as unknown as AccessRequestEvent;
      const current: AccessRequestState =
        this.requestsByID.get(requestEvent.data.requestID) ?? accessRequestDecider.initialState();
      const next = accessRequestDecider.evolve(current, requestEvent);
      if (next.status !== 'none') this.requestsByID.set(next.requestID, next);
    }
  }

  user(userID: string): UserRecordState | undefined {
    return this.usersByID.get(userID);
  }

  email(userID: string): string {
    return this.usersByID.get(userID)?.email ?? userID;
  }

  party(ref: PartyRef): PartySummary | undefined {
    return this.partiesByRef.get(formatPartyRef(ref));
  }

  /** Platform administrators, by email. */
  administrators(): PublicUser[] {
    return this.sorted([...this.usersByID.values()].filter((user) => user.platformAdmin));
  }

  /** Every party (by type, then short code) with its users (by email), also parties that have none yet. */
  partiesWithUsers(only?: PartyRef): PartyWithUsers[] {
    const wanted = only ? formatPartyRef(only) : null;
    return [...this.partiesByRef.entries()]
      .filter(([ref]) => wanted === null || ref === wanted)
      .map(([ref, party]) => ({
        ...party,
        users: this.sorted(
          [...this.usersByID.values()].filter((user) => user.party && formatPartyRef(user.party) === ref),
        ),
      }))
      .sort((a, b) => a.type.localeCompare(b.type) || Number(a.shortCode) - Number(b.shortCode));
  }

  /** A change in words, for lists and messages. */
  describe(change: AccessChange): string {
    switch (change.kind) {
      case 'add-user': {
        if (change.platformAdmin) return `Add platform administrator ${change.email}`;
        const party = change.party ? this.party(change.party) : undefined;
        return (
          `Add ${change.email} as ${change.roles.join(' and ')} of ` +
          `${party ? `${party.name} (${party.type} ${party.shortCode})` : 'a party'}`
        );
      }
      case 'add-role':
        return `Give ${change.email} the ${change.role} role`;
      case 'enable-user':
        return `Enable ${change.email}`;
      case 'reset-password':
        return `Reset the password of ${change.email}`;
    }
  }

  request(requestID: string): AccessRequestRecord | undefined {
    return this.requestsByID.get(requestID);
  }

  /** Newest first. */
  requests(status?: AccessRequestRecord['status']): AccessRequestRecord[] {
    return [...this.requestsByID.values()]
      .filter((request) => status === undefined || request.status === status)
      .sort((a, b) => b.requestedAt.localeCompare(a.requestedAt) || b.requestID.localeCompare(a.requestID));
  }

  private sorted(users: UserRecordState[]): PublicUser[] {
    return users.map(toPublicUser).sort((a, b) => a.email.localeCompare(b.email));
  }
}

/**
 * Keeps the directory current in the process that lists it (the console's): a supervised consumer whose
 * subscription reads the history from the directory's own position and then follows it live, as the API-key
 * directory's does. A page that must see a write waits on it (src/projections/directory-reads.ts).
 */
export function followUsers(
  store: EventStore,
  directory: UserDirectory,
  logger: ConsumerLogger,
  supervision?: Supervision,
): Follower {
  return followDirectory('user-directory', store, USER_DIRECTORY_FILTER, directory, logger, supervision);
}
