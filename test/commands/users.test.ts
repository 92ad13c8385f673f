import { describe, expect, it } from 'vitest';
import { fold } from '../../src/commands/decider.ts';
import { userDecider, type AddUser } from '../../src/commands/users.ts';
import type { UserAdded, UserEvent } from '../../src/domain/events.ts';
import { deciderSpec } from '../support/decider-spec.ts';

const NOW = '2025-03-01T09:00:00.000Z';
const HASH = 'scrypt$16384$8$1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaA';
const PARTY = { type: 'distributor', id: 'dist-1' } as const;

const addUser = (data: Partial<AddUser['data']> = {}): AddUser => ({
  type: 'AddUser',
  data: {
    userID: 'user-1',
    party: { ...PARTY },
    email: 'maker@acme.example',
    passwordHash: HASH,
    roles: ['maker'],
    platformAdmin: false,
    mustChangePassword: false,
    now: NOW,
    ...data,
  },
});

const partyUserAdded: UserAdded = {
  type: 'UserAdded',
  data: {
    userID: 'user-1',
    party: { type: 'distributor', id: 'dist-1' },
    email: 'maker@acme.example',
    passwordHash: HASH,
    roles: ['maker'],
    platformAdmin: false,
    mustChangePassword: false,
    addedAt: NOW,
  },
};

const adminAdded: UserAdded = {
  type: 'UserAdded',
  data: {
    userID: 'admin-1',
    party: null,
    email: 'admin@platform.example',
    passwordHash: HASH,
    roles: [],
    platformAdmin: true,
    mustChangePassword: false,
    addedAt: NOW,
  },
};

describe('userDecider', () => {
  const spec = deciderSpec(userDecider);

  it('when a party user is added with a role, then UserAdded carries the user, party, email, hash, roles and time', () => {
    spec([]).when(addUser()).then([partyUserAdded]);
  });

  it('when a merchant user is added with both roles, then UserAdded carries the merchant party and both roles', () => {
    spec([])
      .when(addUser({ userID: 'user-2', party: { type: 'merchant', id: 'merch-1' }, roles: ['checker', 'maker'] }))
      .then([
        {
          ...partyUserAdded,
          data: {
            ...partyUserAdded.data,
            userID: 'user-2',
            party: { type: 'merchant', id: 'merch-1' },
            roles: ['checker', 'maker'],
          },
        },
      ]);
  });

  it('when a platform administrator is added without a party and without roles, then UserAdded has a null party', () => {
    spec([])
      .when(
        addUser({ userID: 'admin-1', party: null, email: 'admin@platform.example', roles: [], platformAdmin: true }),
      )
      .then([adminAdded]);
  });

  it('when a platform administrator is added with a party, then it is refused INVALID_INPUT naming the party', () => {
    spec([])
      .when(addUser({ platformAdmin: true, party: { ...PARTY }, roles: [] }))
      .thenRefused('INVALID_INPUT', /belongs to no party/);
    expect(() => userDecider.decide(addUser({ platformAdmin: true }), userDecider.initialState())).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT', field: 'party' }),
    );
  });

  it('when a party user is added without a party, then it is refused INVALID_INPUT naming the party', () => {
    spec([])
      .when(addUser({ party: null }))
      .thenRefused('INVALID_INPUT', /distributor or a merchant/);
    expect(() => userDecider.decide(addUser({ party: null }), userDecider.initialState())).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT', field: 'party' }),
    );
  });

  it('when a party user is added with no roles, then it is refused INVALID_INPUT naming the roles', () => {
    spec([])
      .when(addUser({ roles: [] }))
      .thenRefused('INVALID_INPUT', /maker role, the checker role or both/);
    expect(() => userDecider.decide(addUser({ roles: [] }), userDecider.initialState())).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT', field: 'roles' }),
    );
  });

  it('when a party user is added without a party and without roles, then the missing party is reported', () => {
    expect(() => userDecider.decide(addUser({ party: null, roles: [] }), userDecider.initialState())).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT', field: 'party' }),
    );
  });

  it('when roles repeat and are out of order, then they are deduplicated and sorted', () => {
    spec([])
      .when(addUser({ roles: ['maker', 'checker', 'maker', 'checker'] }))
      .then([{ ...partyUserAdded, data: { ...partyUserAdded.data, roles: ['checker', 'maker'] } }]);
  });

  it("when roles are deduplicated, then the command's own array is left untouched", () => {
    const command = addUser({ roles: ['maker', 'checker', 'maker'] });
    userDecider.decide(command, userDecider.initialState());
    expect(command.data.roles).toEqual(['maker', 'checker', 'maker']);
  });

  it('when a user that already exists is added again, then it is refused ALREADY_EXISTS', () => {
    spec([partyUserAdded])
      .when(addUser())
      .thenRefused('ALREADY_EXISTS', /user user-1 already exists/);
  });

  it('when a platform administrator that already exists is added again, then it is refused ALREADY_EXISTS', () => {
    spec([adminAdded])
      .when(addUser({ userID: 'admin-1', party: null, roles: [], platformAdmin: true }))
      .thenRefused('ALREADY_EXISTS');
  });

  it('when an existing user is added again with otherwise invalid data, then ALREADY_EXISTS is reported first', () => {
    spec([partyUserAdded])
      .when(addUser({ party: null, roles: [] }))
      .thenRefused('ALREADY_EXISTS');
  });

  it('when no event has happened, then the state is none', () => {
    expect(userDecider.initialState()).toEqual({ status: 'none' });
  });

  it("when UserAdded is folded, then the state is an active user with the event's data", () => {
    expect(fold(userDecider, userDecider.initialState(), [partyUserAdded])).toEqual({
      status: 'active',
      userID: 'user-1',
      party: { type: 'distributor', id: 'dist-1' },
      email: 'maker@acme.example',
      passwordHash: HASH,
      roles: ['maker'],
      platformAdmin: false,
      mustChangePassword: false,
    });
  });

  it("when an administrator's UserAdded is folded, then the state is an active administrator with no party", () => {
    expect(fold(userDecider, userDecider.initialState(), [adminAdded])).toMatchObject({
      status: 'active',
      party: null,
      platformAdmin: true,
      roles: [],
    });
  });

  it('when a user is added with a temporary password, then UserAdded says it must be changed, and so does the state', () => {
    spec([])
      .when(addUser({ mustChangePassword: true }))
      .then([{ ...partyUserAdded, data: { ...partyUserAdded.data, mustChangePassword: true } }]);
    expect(
      fold(userDecider, userDecider.initialState(), [
        { ...partyUserAdded, data: { ...partyUserAdded.data, mustChangePassword: true } },
      ]),
    ).toMatchObject({ mustChangePassword: true });
  });

  it('when a UserAdded written before mustChangePassword existed is folded, then the password need not be changed', () => {
    const { mustChangePassword: _, ...older } = partyUserAdded.data;
    expect(
      fold(userDecider, userDecider.initialState(), [{ type: 'UserAdded', data: older } as unknown as UserAdded]),
    ).toMatchObject({ mustChangePassword: false });
  });
});

describe('user lifecycle', () => {
  const spec = deciderSpec(userDecider);
  const T1 = '2025-03-02T09:00:00.000Z';
  const admin = { userID: 'admin-1', platformAdmin: true };
  const partyUser = { userID: 'user-9', platformAdmin: false };
  const bothRoles: UserAdded = { ...partyUserAdded, data: { ...partyUserAdded.data, roles: ['checker', 'maker'] } };
  const disabled: UserEvent = {
    type: 'UserDisabled',
    data: { userID: 'user-1', disabledBy: 'admin-1', reason: 'left the company', disabledAt: T1 },
  };
  const approval = { requestID: 'acr_1', approvedBy: 'admin-2' };

  describe('disabling', () => {
    it('when an administrator disables an active user, then UserDisabled records who, why and when', () =>
      spec([partyUserAdded])
        .when({ type: 'DisableUser', data: { userID: 'user-1', by: admin, reason: 'left the company', now: T1 } })
        .then([disabled]));

    it('when a party user tries to disable a user, then it is refused ROLE_REQUIRED', () =>
      spec([partyUserAdded])
        .when({ type: 'DisableUser', data: { userID: 'user-1', by: partyUser, reason: 'x', now: T1 } })
        .thenRefused('ROLE_REQUIRED'));

    it('when an administrator disables themself, then it is refused SAME_USER', () =>
      spec([adminAdded])
        .when({ type: 'DisableUser', data: { userID: 'admin-1', by: admin, reason: 'x', now: T1 } })
        .thenRefused('SAME_USER'));

    it('when the user is already disabled, then it is refused WRONG_STATE', () =>
      spec([partyUserAdded, disabled])
        .when({ type: 'DisableUser', data: { userID: 'user-1', by: admin, reason: 'again', now: T1 } })
        .thenRefused('WRONG_STATE', /already disabled/));

    it('when the user does not exist, then it is refused NOT_FOUND', () =>
      spec([])
        .when({ type: 'DisableUser', data: { userID: 'user-1', by: admin, reason: 'x', now: T1 } })
        .thenRefused('NOT_FOUND'));

    it('when UserDisabled is folded, then the user is disabled and keeps everything else', () =>
      expect(fold(userDecider, userDecider.initialState(), [partyUserAdded, disabled])).toMatchObject({
        status: 'disabled',
        email: 'maker@acme.example',
        roles: ['maker'],
      }));
  });

  describe('enabling (only through an approved access request)', () => {
    it('when a disabled user is enabled, then UserEnabled names the request and its approver', () =>
      spec([partyUserAdded, disabled])
        .when({ type: 'EnableUser', data: { userID: 'user-1', ...approval, now: T1 } })
        .then([
          { type: 'UserEnabled', data: { userID: 'user-1', requestID: 'acr_1', approvedBy: 'admin-2', enabledAt: T1 } },
        ]));

    it('when an active user is enabled, then it is refused WRONG_STATE', () =>
      spec([partyUserAdded])
        .when({ type: 'EnableUser', data: { userID: 'user-1', ...approval, now: T1 } })
        .thenRefused('WRONG_STATE', /not disabled/));

    it('when UserEnabled is folded, then the user is active again', () =>
      expect(
        fold(userDecider, userDecider.initialState(), [
          partyUserAdded,
          disabled,
          { type: 'UserEnabled', data: { userID: 'user-1', requestID: 'acr_1', approvedBy: 'admin-2', enabledAt: T1 } },
        ]),
      ).toMatchObject({ status: 'active' }));
  });

  describe('roles', () => {
    it('when a role is added through a request, then UserRoleAdded names the role, the request and its approver', () =>
      spec([partyUserAdded])
        .when({ type: 'AddUserRole', data: { userID: 'user-1', role: 'checker', ...approval, now: T1 } })
        .then([
          {
            type: 'UserRoleAdded',
            data: { userID: 'user-1', role: 'checker', requestID: 'acr_1', approvedBy: 'admin-2', addedAt: T1 },
          },
        ]));

    it('when the user already has the role, then adding it is refused WRONG_STATE', () =>
      spec([partyUserAdded])
        .when({ type: 'AddUserRole', data: { userID: 'user-1', role: 'maker', ...approval, now: T1 } })
        .thenRefused('WRONG_STATE', /already has/));

    it('when a role is added to a platform administrator, then it is refused INVALID_INPUT', () =>
      spec([adminAdded])
        .when({ type: 'AddUserRole', data: { userID: 'admin-1', role: 'checker', ...approval, now: T1 } })
        .thenRefused('INVALID_INPUT'));

    it('when a role is added to a disabled user, then it is refused WRONG_STATE', () =>
      spec([partyUserAdded, disabled])
        .when({ type: 'AddUserRole', data: { userID: 'user-1', role: 'checker', ...approval, now: T1 } })
        .thenRefused('WRONG_STATE', /disabled/));

    it('when an administrator removes one of two roles, then UserRoleRemoved takes effect at once', () =>
      spec([bothRoles])
        .when({ type: 'RemoveUserRole', data: { userID: 'user-1', role: 'checker', by: admin, now: T1 } })
        .then([
          { type: 'UserRoleRemoved', data: { userID: 'user-1', role: 'checker', removedBy: 'admin-1', removedAt: T1 } },
        ]));

    it("when the role is the user's last, then removing it is refused: disable the user instead", () =>
      spec([partyUserAdded])
        .when({ type: 'RemoveUserRole', data: { userID: 'user-1', role: 'maker', by: admin, now: T1 } })
        .thenRefused('INVALID_INPUT', /disable the user instead/));

    it('when the user does not have the role, then removing it is refused WRONG_STATE', () =>
      spec([partyUserAdded])
        .when({ type: 'RemoveUserRole', data: { userID: 'user-1', role: 'checker', by: admin, now: T1 } })
        .thenRefused('WRONG_STATE'));

    it('when a party user removes a role, then it is refused ROLE_REQUIRED', () =>
      spec([bothRoles])
        .when({ type: 'RemoveUserRole', data: { userID: 'user-1', role: 'checker', by: partyUser, now: T1 } })
        .thenRefused('ROLE_REQUIRED'));

    it('when role events are folded, then the roles follow them, sorted', () => {
      const added: UserEvent = {
        type: 'UserRoleAdded',
        data: { userID: 'user-1', role: 'checker', requestID: 'acr_1', approvedBy: 'admin-2', addedAt: T1 },
      };
      const removed: UserEvent = {
        type: 'UserRoleRemoved',
        data: { userID: 'user-1', role: 'maker', removedBy: 'admin-1', removedAt: T1 },
      };
      expect(fold(userDecider, userDecider.initialState(), [partyUserAdded, added])).toMatchObject({
        roles: ['checker', 'maker'],
      });
      expect(fold(userDecider, userDecider.initialState(), [partyUserAdded, added, removed])).toMatchObject({
        roles: ['checker'],
      });
    });
  });

  describe('passwords', () => {
    const reset: UserEvent = {
      type: 'UserPasswordReset',
      data: { userID: 'user-1', passwordHash: 'temp-hash', requestID: 'acr_1', approvedBy: 'admin-2', resetAt: T1 },
    };
    const changed: UserEvent = {
      type: 'UserPasswordChanged',
      data: { userID: 'user-1', passwordHash: 'own-hash', changedAt: T1 },
    };

    it("when an administrator's reset is approved, then UserPasswordReset carries the temporary hash, the request and its approver", () =>
      spec([partyUserAdded])
        .when({
          type: 'ResetUserPassword',
          data: { userID: 'user-1', passwordHash: 'temp-hash', ...approval, now: T1 },
        })
        .then([reset]));

    it('when the password of a disabled user is reset, then it is refused WRONG_STATE', () =>
      spec([partyUserAdded, disabled])
        .when({ type: 'ResetUserPassword', data: { userID: 'user-1', passwordHash: 'h', ...approval, now: T1 } })
        .thenRefused('WRONG_STATE'));

    it('when a user changes their own password, then UserPasswordChanged carries the new hash', () =>
      spec([partyUserAdded])
        .when({ type: 'ChangeOwnPassword', data: { userID: 'user-1', passwordHash: 'own-hash', now: T1 } })
        .then([changed]));

    it('when a disabled user changes their password, then it is refused WRONG_STATE', () =>
      spec([partyUserAdded, disabled])
        .when({ type: 'ChangeOwnPassword', data: { userID: 'user-1', passwordHash: 'h', now: T1 } })
        .thenRefused('WRONG_STATE'));

    it('when a reset is folded, then the temporary password must be changed; a change by the user clears that', () => {
      expect(fold(userDecider, userDecider.initialState(), [partyUserAdded, reset])).toMatchObject({
        passwordHash: 'temp-hash',
        mustChangePassword: true,
      });
      expect(fold(userDecider, userDecider.initialState(), [partyUserAdded, reset, changed])).toMatchObject({
        passwordHash: 'own-hash',
        mustChangePassword: false,
      });
    });
  });
});

describe('password hash upgrade (a login re-hashes a password stored with the old scrypt cost)', () => {
  const spec = deciderSpec(userDecider);
  const T2 = '2025-03-03T09:00:00.000Z';
  const NEW_HASH = 'scrypt$131072$8$1$c2FsdHNhbHRzYWx0c2FsdA$bmV3';
  const upgrade = (
    verifiedHash = HASH,
  ): {
    type: 'UpgradePasswordHash';
    data: { userID: string; verifiedHash: string; passwordHash: string; now: string };
  } => ({ type: 'UpgradePasswordHash', data: { userID: 'user-1', verifiedHash, passwordHash: NEW_HASH, now: T2 } });
  const upgraded: UserEvent = {
    type: 'UserPasswordHashUpgraded',
    data: { userID: 'user-1', passwordHash: NEW_HASH, upgradedAt: T2 },
  };

  it('when the login checked the stored hash, then UserPasswordHashUpgraded carries the new hash', () =>
    spec([partyUserAdded]).when(upgrade()).then([upgraded]));

  it('when the password changed after the login checked the old one, then nothing happens: the newer password stays', () =>
    spec([
      partyUserAdded,
      { type: 'UserPasswordChanged', data: { userID: 'user-1', passwordHash: 'own-hash', changedAt: T2 } },
    ])
      .when(upgrade())
      .then([]));

  it('when the user was disabled meanwhile, then nothing happens', () =>
    spec([
      partyUserAdded,
      { type: 'UserDisabled', data: { userID: 'user-1', disabledBy: 'admin-1', reason: 'left', disabledAt: T2 } },
    ])
      .when(upgrade())
      .then([]));

  it('when the user does not exist, then it is refused NOT_FOUND', () =>
    spec([]).when(upgrade()).thenRefused('NOT_FOUND'));

  it('when the upgrade is folded, then only the hash changes (a pending temporary password stays pending)', () => {
    const reset: UserEvent = {
      type: 'UserPasswordReset',
      data: { userID: 'user-1', passwordHash: HASH, requestID: 'acr_1', approvedBy: 'admin-2', resetAt: T2 },
    };
    const state = fold(userDecider, userDecider.initialState(), [partyUserAdded, reset, upgraded]);
    expect(state).toMatchObject({
      status: 'active',
      passwordHash: NEW_HASH,
      mustChangePassword: true,
      roles: ['maker'],
    });
    expect(
      fold(userDecider, fold(userDecider, userDecider.initialState(), [partyUserAdded, reset]), [upgraded]),
    ).toEqual(state);
  });
});
