import type { RecordedEvent } from '../ports/event-store.ts';

/**
 * `audit verify`'s view of console users and of maker-checker on access itself: every user's roles, party
 * and status as the history moves (what the key and operation checks ask about a checker), and the rules of
 * access requests: requested by a platform administrator, approved by another active administrator who is
 * not the subject of the change, and every widening of a user (role added, enabled, password reset) applied
 * under an approved request for exactly that change. The operator's break-glass `user add` (UserAdded) is
 * the one widening without a request.
 */
export interface UserInfo {
  roles: string[];
  party: string | null;
  platformAdmin: boolean;
  disabled: boolean;
}

interface RequestInfo {
  status: 'pending' | 'approved' | 'rejected';
  kind: string;
  userID: string;
  role: string | null;
  requestedBy: string;
}

const WIDENING: Record<string, string> = {
  UserRoleAdded: 'add-role',
  UserEnabled: 'enable-user',
  UserPasswordReset: 'reset-password',
};

const partyOf = (party: { type: string; id: string } | null | undefined): string | null =>
  party ? `${party.type}:${party.id}` : null;

export class AccessChecker {
  readonly users: Map<string, UserInfo>;
  private readonly problem: (event: RecordedEvent, detail: string) => void;
  private readonly requests = new Map<string, RequestInfo>();

  constructor(users: Map<string, UserInfo>, problem: (event: RecordedEvent, detail: string) => void) {
    this.users = users;
    this.problem = problem;
  }

  /** Whether the event is one of the users' or access requests'; if so it has been checked and folded. */
  feed(event: RecordedEvent): boolean {
    if (event.type.startsWith('AccessRequest')) this.request(event);
    else if (event.type.startsWith('User')) this.user(event);
    else return false;
    return true;
  }

  private admin(event: RecordedEvent, userID: string, what: string): void {
    const user = this.users.get(userID);
    if (!user) this.problem(event, `${what} by ${userID}, who is not a user at that point`);
    else if (!user.platformAdmin) this.problem(event, `${what} by user ${userID}, who is not a platform administrator`);
    else if (user.disabled) this.problem(event, `${what} by user ${userID}, who is disabled`);
  }

  private request(event: RecordedEvent): void {
    const data = event.data as {
      requestID: string;
      requestedBy?: string;
      approvedBy?: string;
      rejectedBy?: string;
      change?: { kind: string; userID: string; role?: string };
    };
    const what = `${event.type} of access request ${data.requestID}`;
    if (event.type === 'AccessRequested') {
      const change = data.change ?? { kind: 'unknown', userID: '' };
      this.admin(event, String(data.requestedBy), what);
      if (change.userID === data.requestedBy) this.problem(event, `${what}: a change to the requester's own access`);
      this.requests.set(data.requestID, {
        status: 'pending',
        kind: change.kind,
        userID: change.userID,
        role: change.role ?? null,
        requestedBy: String(data.requestedBy),
      });
      return;
    }
    const request = this.requests.get(data.requestID);
    if (!request) return this.problem(event, `${what}, which was never requested`);
    if (request.status !== 'pending') this.problem(event, `${what} while it is ${request.status}, not pending`);
    const by = String(data.approvedBy ?? data.rejectedBy);
    this.admin(event, by, what);
    if (event.type === 'AccessRequestApproved') {
      if (by === request.requestedBy)
        this.problem(event, `${what} by user ${by}, who requested it (requester and approver must differ)`);
      if (by === request.userID) this.problem(event, `${what} by user ${by}, whose own access it changes`);
      request.status = 'approved';
    } else request.status = 'rejected';
  }

  private user(event: RecordedEvent): void {
    const data = event.data as {
      userID: string;
      requestID?: string;
      role?: string;
      roles?: string[];
      party?: { type: string; id: string } | null;
      platformAdmin?: boolean;
      disabledBy?: string;
      removedBy?: string;
    };
    if (event.type === 'UserAdded') {
      this.users.set(data.userID, {
        roles: data.roles ?? [],
        party: partyOf(data.party),
        platformAdmin: data.platformAdmin === true,
        disabled: false,
      });
      return;
    }
    const user = this.users.get(data.userID);
    if (!user) return this.problem(event, `${event.type} of user ${data.userID}, who was never added`);
    const kind = WIDENING[event.type];
    if (kind) {
      const request = data.requestID ? this.requests.get(data.requestID) : undefined;
      if (
        !request ||
        request.status !== 'approved' ||
        request.kind !== kind ||
        request.userID !== data.userID ||
        (kind === 'add-role' && request.role !== data.role)
      ) {
        this.problem(
          event,
          `${event.type} of user ${data.userID} without an approved access request for it ` +
            `(${data.requestID ?? 'none named'})`,
        );
      }
    }
    if (event.type === 'UserDisabled' || event.type === 'UserRoleRemoved')
      this.admin(event, String(data.disabledBy ?? data.removedBy), `${event.type} of user ${data.userID}`);
    if (event.type === 'UserRoleAdded') user.roles = [...new Set([...user.roles, String(data.role)])];
    if (event.type === 'UserRoleRemoved') user.roles = user.roles.filter((role) => role !== data.role);
    if (event.type === 'UserDisabled') user.disabled = true;
    if (event.type === 'UserEnabled') user.disabled = false;
  }
}
