import { describe, expect, it } from 'vitest';
import { fold } from '../../src/commands/decider.ts';
import { userDecider, type AddUser } from '../../src/commands/users.ts';
import type { UserAdded } from '../../src/domain/events.ts';
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
    addedAt: NOW,
  },
};

const adminAdded: UserAdded = {
  type: 'UserAdded',
  data: { userID: 'admin-1', party: null, email: 'admin@platform.example', passwordHash: HASH, roles: [], platformAdmin: true, addedAt: NOW },
};

describe('userDecider', () => {
  const spec = deciderSpec(userDecider);

  it('when a party user is added with a role, then UserAdded carries the user, party, email, hash, roles and time', () => {
    spec([]).when(addUser()).then([partyUserAdded]);
  });

  it('when a merchant user is added with both roles, then UserAdded carries the merchant party and both roles', () => {
    spec([])
      .when(addUser({ userID: 'user-2', party: { type: 'merchant', id: 'merch-1' }, roles: ['checker', 'maker'] }))
      .then([{ ...partyUserAdded, data: { ...partyUserAdded.data, userID: 'user-2', party: { type: 'merchant', id: 'merch-1' }, roles: ['checker', 'maker'] } }]);
  });

  it('when a platform administrator is added without a party and without roles, then UserAdded has a null party', () => {
    spec([])
      .when(addUser({ userID: 'admin-1', party: null, email: 'admin@platform.example', roles: [], platformAdmin: true }))
      .then([adminAdded]);
  });

  it('when a platform administrator is added with a party, then it is refused INVALID_INPUT naming the party', () => {
    spec([]).when(addUser({ platformAdmin: true, party: { ...PARTY }, roles: [] })).thenRefused('INVALID_INPUT', /belongs to no party/);
    expect(() => userDecider.decide(addUser({ platformAdmin: true }), userDecider.initialState())).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT', field: 'party' }),
    );
  });

  it('when a party user is added without a party, then it is refused INVALID_INPUT naming the party', () => {
    spec([]).when(addUser({ party: null })).thenRefused('INVALID_INPUT', /distributor or a merchant/);
    expect(() => userDecider.decide(addUser({ party: null }), userDecider.initialState())).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT', field: 'party' }),
    );
  });

  it('when a party user is added with no roles, then it is refused INVALID_INPUT naming the roles', () => {
    spec([]).when(addUser({ roles: [] })).thenRefused('INVALID_INPUT', /maker role, the checker role or both/);
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

  it('when roles are deduplicated, then the command\'s own array is left untouched', () => {
    const command = addUser({ roles: ['maker', 'checker', 'maker'] });
    userDecider.decide(command, userDecider.initialState());
    expect(command.data.roles).toEqual(['maker', 'checker', 'maker']);
  });

  it('when a user that already exists is added again, then it is refused ALREADY_EXISTS', () => {
    spec([partyUserAdded]).when(addUser()).thenRefused('ALREADY_EXISTS', /user user-1 already exists/);
  });

  it('when a platform administrator that already exists is added again, then it is refused ALREADY_EXISTS', () => {
    spec([adminAdded])
      .when(addUser({ userID: 'admin-1', party: null, roles: [], platformAdmin: true }))
      .thenRefused('ALREADY_EXISTS');
  });

  it('when an existing user is added again with otherwise invalid data, then ALREADY_EXISTS is reported first', () => {
    spec([partyUserAdded]).when(addUser({ party: null, roles: [] })).thenRefused('ALREADY_EXISTS');
  });

  it('when no event has happened, then the state is none', () => {
    expect(userDecider.initialState()).toEqual({ status: 'none' });
  });

  it('when UserAdded is folded, then the state is an active user with the event\'s data', () => {
    expect(fold(userDecider, userDecider.initialState(), [partyUserAdded])).toEqual({
      status: 'active',
      userID: 'user-1',
      party: { type: 'distributor', id: 'dist-1' },
      email: 'maker@acme.example',
      passwordHash: HASH,
      roles: ['maker'],
      platformAdmin: false,
    });
  });

  it('when an administrator\'s UserAdded is folded, then the state is an active administrator with no party', () => {
    expect(fold(userDecider, userDecider.initialState(), [adminAdded])).toMatchObject({ status: 'active', party: null, platformAdmin: true, roles: [] });
  });
});
