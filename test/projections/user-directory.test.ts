import { describe, expect, it } from 'vitest';
import type { AccessRequestEvent, UserEvent } from '../../src/domain/events.ts';
import { UserDirectory } from '../../src/projections/user-directory.ts';

/** The administrators' directory of parties, users and access requests: every event it handles, and replays. */
const T = (n: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString();
const DIST = '11111111-1111-4111-8111-111111111111';
const SHOP = '22222222-2222-4222-8222-222222222222';

const events: Array<{ type: string; data: unknown; stream: string }> = [
  {
    stream: `merchant-${SHOP}`,
    type: 'MerchantOnboarded',
    data: { merchantID: SHOP, name: 'Corner Shop', shortCode: '2001', onboardedAt: T(1) },
  },
  {
    stream: `distributor-${DIST}`,
    type: 'DistributorOnboarded',
    data: { distributorID: DIST, name: 'Acme Agents', shortCode: '1001', onboardedAt: T(2) },
  },
  {
    stream: 'user-a',
    type: 'UserAdded',
    data: {
      userID: 'a',
      party: null,
      email: 'a@platform.test',
      passwordHash: 'h',
      roles: [],
      platformAdmin: true,
      mustChangePassword: false,
      addedAt: T(3),
    },
  },
  {
    stream: 'user-m',
    type: 'UserAdded',
    data: {
      userID: 'm',
      party: { type: 'distributor', id: DIST },
      email: 'm@acme.test',
      passwordHash: 'h',
      roles: ['maker'],
      platformAdmin: false,
      mustChangePassword: false,
      addedAt: T(4),
    },
  },
  {
    stream: 'accessRequest-r1',
    type: 'AccessRequested',
    data: {
      requestID: 'r1',
      change: { kind: 'add-role', userID: 'm', email: 'm@acme.test', role: 'checker' },
      reason: null,
      requestedBy: 'a',
      requestedAt: T(5),
    },
  },
  {
    stream: 'accessRequest-r1',
    type: 'AccessRequestApproved',
    data: { requestID: 'r1', approvedBy: 'b', approvedAt: T(6) },
  },
  {
    stream: 'user-m',
    type: 'UserRoleAdded',
    data: { userID: 'm', role: 'checker', requestID: 'r1', approvedBy: 'b', addedAt: T(6) },
  },
  {
    stream: 'accessRequest-r2',
    type: 'AccessRequested',
    data: {
      requestID: 'r2',
      change: { kind: 'reset-password', userID: 'm', email: 'm@acme.test' },
      reason: 'forgot',
      requestedBy: 'a',
      requestedAt: T(7),
    },
  },
  {
    stream: 'accessRequest-r3',
    type: 'AccessRequested',
    data: {
      requestID: 'r3',
      change: { kind: 'enable-user', userID: 'm', email: 'm@acme.test' },
      reason: null,
      requestedBy: 'a',
      requestedAt: T(8),
    },
  },
  {
    stream: 'accessRequest-r3',
    type: 'AccessRequestRejected',
    data: { requestID: 'r3', rejectedBy: 'b', reason: 'no', rejectedAt: T(9) },
  },
  { stream: 'user-m', type: 'UserDisabled', data: { userID: 'm', disabledBy: 'a', reason: 'left', disabledAt: T(10) } },
  { stream: 'user-m', type: 'UserRoleRemoved', data: { userID: 'm', role: 'maker', removedBy: 'a', removedAt: T(11) } },
  { stream: 'apikey-k', type: 'ApiKeyRequested', data: { keyID: 'k' } },
] satisfies Array<{ type: (UserEvent | AccessRequestEvent)['type'] | string; data: unknown; stream: string }>;

const applied = (directory = new UserDirectory(), from = 1) => {
  events.forEach((event, i) => directory.apply({ ...event, position: from + i }));
  return directory;
};

describe('user directory', () => {
  it('when parties, users and requests are applied, then every party is listed with its users, administrators apart', () => {
    const directory = applied();
    expect(directory.administrators().map((u) => u.email)).toEqual(['a@platform.test']);
    expect(directory.partiesWithUsers()).toEqual([
      {
        type: 'distributor',
        id: DIST,
        name: 'Acme Agents',
        shortCode: '1001',
        users: [
          {
            userID: 'm',
            email: 'm@acme.test',
            party: `distributor:${DIST}`,
            roles: ['checker'],
            platformAdmin: false,
            status: 'disabled',
            mustChangePassword: false,
          },
        ],
      },
      { type: 'merchant', id: SHOP, name: 'Corner Shop', shortCode: '2001', users: [] },
    ]);
    expect(directory.partiesWithUsers({ type: 'merchant', id: SHOP }).map((p) => p.name)).toEqual(['Corner Shop']);
  });

  it('when requests are applied, then they are listed newest first, by status, with their decisions', () => {
    const directory = applied();
    expect(directory.requests().map((r) => r.requestID)).toEqual(['r3', 'r2', 'r1']);
    expect(directory.requests('pending').map((r) => r.requestID)).toEqual(['r2']);
    expect(directory.request('r1')).toMatchObject({ status: 'approved', decidedBy: 'b' });
    expect(directory.request('r3')).toMatchObject({ status: 'rejected', rejectionReason: 'no' });
  });

  it('when a change is described, then it says what it does, in words', () => {
    const directory = applied();
    expect(
      directory.describe({
        kind: 'add-user',
        userID: 'x',
        party: { type: 'distributor', id: DIST },
        email: 'x@acme.test',
        roles: ['maker', 'checker'],
        platformAdmin: false,
      }),
    ).toBe('Add x@acme.test as maker and checker of Acme Agents (distributor 1001)');
    expect(
      directory.describe({
        kind: 'add-user',
        userID: 'x',
        party: null,
        email: 'x@platform.test',
        roles: [],
        platformAdmin: true,
      }),
    ).toBe('Add platform administrator x@platform.test');
    expect(directory.describe(directory.request('r1')!.change)).toBe('Give m@acme.test the checker role');
    expect(directory.describe(directory.request('r2')!.change)).toBe('Reset the password of m@acme.test');
    expect(directory.describe(directory.request('r3')!.change)).toBe('Enable m@acme.test');
    expect(directory.email('m')).toBe('m@acme.test');
    expect(directory.email('unknown')).toBe('unknown');
  });

  it('when the same events are applied twice, then nothing changes (replay)', () => {
    const once = applied();
    const twice = applied(applied());
    expect(twice.partiesWithUsers()).toEqual(once.partiesWithUsers());
    expect(twice.requests()).toEqual(once.requests());
    expect(twice.position).toBe(once.position);
  });

  it('when a listed user is shown, then no password hash leaves the directory', () => {
    expect(JSON.stringify(applied().partiesWithUsers())).not.toContain('passwordHash');
    expect(JSON.stringify(applied().administrators())).not.toContain('passwordHash');
  });
});
