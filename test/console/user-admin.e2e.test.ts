import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findAnyUserByEmail, findUserByEmail } from '../../src/commands/back-office.ts';
import { startTestSystem, type TestParty, type TestSystem } from '../support/system.ts';
import { CHECKER_PASSWORD, ConsoleClient, extraUser, MAKER_PASSWORD, OTHER_PASSWORD } from './console-client.ts';

/**
 * User administration in the console over HTTP, as a browser would use it: maker-checker on access itself
 * (one administrator requests, another approves) and the user lifecycle (disable, enable, roles, passwords).
 */
let sys: TestSystem;
let dist: TestParty;
let adminA: string;
let adminB: string;
/** The two administrators' browsers, logged in once (every login costs a deliberately slow scrypt). */
let A: ConsoleClient;
let B: ConsoleClient;
let seq = 0;

async function as(email: string, password: string): Promise<ConsoleClient> {
  const client = new ConsoleClient(sys.baseUrl);
  await client.loginOk(email, password);
  return client;
}

const newEmail = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${seq++}@test.example`;
const requestIDIn = (text: string) => /acr_[0-9a-f]{32}/.exec(text)?.[0];
/** One administrator's half of a temporary password, as the dialog of their page shows it. */
const halfIn = (text: string, half: 'first' | 'second') =>
  new RegExp(`value="([^"]+)"[^>]*data-password-half="${half}"`).exec(text)?.[1];
const sessionsOf = async (email: string) => {
  const { userID } = await findAnyUserByEmail(sys.backOffice, email);
  return sys.system.stores.readStore.find('console_sessions', { where: { userID } });
};

/** Files a request with a POST on the admin's current page; returns its id, read off the flash of the page redirected to. */
async function file(admin: ConsoleClient, path: string, form: Record<string, string | string[]>): Promise<string> {
  const sent = await admin.post(path, form);
  expect(sent.status, sent.text).toBe(303);
  const next = await admin.get(sent.location!);
  const requestID = requestIDIn(next.text);
  expect(requestID, next.text).toBeDefined();
  return requestID!;
}

async function requestUser(
  admin: ConsoleClient,
  email: string,
  roles: string[],
  party: TestParty = dist,
): Promise<string> {
  await admin.get('/console/admin');
  return file(admin, '/console/admin/users', {
    partyType: party.ref.type,
    shortCode: party.shortCode,
    email,
    roles,
    reason: 'new cashier',
  });
}

/**
 * The second administrator approves; if the change makes a temporary password, the approver's next page shows
 * them its second half and the requester's next page the first: returns the two put together, as the user types it.
 */
async function approve(
  admin: ConsoleClient,
  requestID: string,
  requester: ConsoleClient = admin === A ? B : A,
): Promise<string | undefined> {
  await admin.get('/console/admin/access');
  const page = await admin.post(`/console/admin/access/${requestID}/approve`);
  expect(page.status, page.text).toBe(303);
  const second = halfIn((await admin.get(page.location!)).text, 'second');
  if (!second) return undefined;
  const first = halfIn((await requester.get('/console/admin/access')).text, 'first');
  expect(first).toBeDefined();
  return `${first}-${second}`;
}

/** A party user to administer (made through the operator's break-glass path: how they came is not under test here). */
async function madeUser(
  roles: Array<'maker' | 'checker'>,
): Promise<{ email: string; password: string; userID: string }> {
  const email = await extraUser(sys.backOffice, dist.ref, roles, 'user');
  return { email, password: OTHER_PASSWORD, userID: (await findAnyUserByEmail(sys.backOffice, email)).userID };
}

beforeAll(async () => {
  sys = await startTestSystem();
  dist = await sys.party('distributor');
  adminA = await extraUser(sys.backOffice, null, [], 'admin-a');
  adminB = await extraUser(sys.backOffice, null, [], 'admin-b');
  A = await as(adminA, OTHER_PASSWORD);
  B = await as(adminB, OTHER_PASSWORD);
});

afterAll(async () => {
  await sys?.close();
});

describe('one administrator alone', { timeout: 120_000 }, () => {
  it('when one administrator adds a checker to a party, then nobody can log in as that checker, and they cannot approve it themself', async () => {
    const admin = A;
    const email = newEmail('alone');
    // A password in the form is ignored: the requester never chooses nor learns the new user's password.
    await admin.get('/console/admin');
    const requestID = await file(admin, '/console/admin/users', {
      partyType: 'distributor',
      shortCode: dist.shortCode,
      email,
      password: 'chosen password 1',
      roles: ['checker'],
    });
    expect((await new ConsoleClient(sys.baseUrl).login(email, 'chosen password 1')).status).toBe(401);
    await expect(findAnyUserByEmail(sys.backOffice, email)).rejects.toMatchObject({ code: 'NOT_FOUND' });

    const pending = await admin.get('/console/admin/access');
    expect(pending.text).toContain(`Add ${email} as checker of`);
    expect(pending.text).toContain('You made this request: another administrator must approve it.');
    const self = await admin.post(`/console/admin/access/${requestID}/approve`);
    expect(self.status).toBe(403);
    expect(self.text).toContain('cannot also approve it');
    await expect(findAnyUserByEmail(sys.backOffice, email)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('when one administrator asks for more access for a user, then nothing changes until another approves', async () => {
    const maker = await madeUser(['maker']);
    const admin = A;
    await admin.get(`/console/admin/users/${maker.userID}`);
    const requestID = await file(admin, `/console/admin/users/${maker.userID}/roles/add`, { role: 'checker' });
    expect((await findAnyUserByEmail(sys.backOffice, maker.email)).roles).toEqual(['maker']);
    await admin.get('/console/admin/access');
    expect((await admin.post(`/console/admin/access/${requestID}/approve`)).status).toBe(403);
    expect((await findAnyUserByEmail(sys.backOffice, maker.email)).roles).toEqual(['maker']);
  });

  it('when an administrator requests or decides a change of their own access, or disables themself, then it is refused with 403', async () => {
    const a = A;
    const { userID: aID } = await findAnyUserByEmail(sys.backOffice, adminA);
    const page = await a.get(`/console/admin/users/${aID}`);
    expect(page.text).toContain('This is you');
    expect((await a.post(`/console/admin/users/${aID}/reset-password`, {})).status).toBe(403);
    expect((await a.post(`/console/admin/users/${aID}/disable`, { reason: 'bye' })).status).toBe(403);
    // B asks for A's password reset: A may not approve it (it is their own access).
    const b = B;
    await b.get(`/console/admin/users/${aID}`);
    const requestID = await file(b, `/console/admin/users/${aID}/reset-password`, {});
    await a.get('/console/admin/access');
    const own = await a.post(`/console/admin/access/${requestID}/approve`);
    expect(own.status).toBe(403);
    expect(own.text).toContain('your own access');
    await b.get('/console/admin/access');
    expect((await b.post(`/console/admin/access/${requestID}/reject`, { reason: 'changed my mind' })).status).toBe(303);
  });

  it('when a party user opens the user administration or decides an access request, then it is refused with 403', async () => {
    const checker = await as(dist.checkerEmail, CHECKER_PASSWORD);
    for (const path of ['/console/admin/users', '/console/admin/access'])
      expect((await checker.get(path)).status).toBe(403);
    const requestID = await requestUser(A, newEmail('x'), ['maker']);
    await checker.get('/console/');
    expect((await checker.post(`/console/admin/access/${requestID}/approve`)).status).toBe(403);
  });
});

describe('two administrators', { timeout: 120_000 }, () => {
  it('when one requests a user and another approves, then each sees one half of the temporary password once, neither half logs in alone, and the user must change it at the first login', async () => {
    const email = newEmail('new');
    const requestID = await requestUser(A, email, ['maker', 'checker']);
    const b = B;
    await b.get('/console/admin/access');
    const approval = await b.post(`/console/admin/access/${requestID}/approve`);
    expect(approval.status).toBe(303);
    const shown = await b.get(approval.location!);
    expect(shown.headers.get('cache-control')).toContain('no-store');
    const second = halfIn(shown.text, 'second')!;
    expect(second).toMatch(/^[2-9a-z]{4}-[2-9a-z]{4}$/);
    expect(halfIn(shown.text, 'first')).toBeUndefined();
    // Never again: the request is decided, and no later page shows the half.
    expect((await b.post(`/console/admin/access/${requestID}/approve`)).status).toBe(409);
    expect((await b.get('/console/admin/access?tab=decided')).text).not.toContain(second);
    const requesterPage = (await A.get('/console/admin/access')).text;
    const first = halfIn(requesterPage, 'first')!;
    expect(first).toMatch(/^[2-9a-z]{4}-[2-9a-z]{4}$/);
    expect(requesterPage).not.toContain(second);
    expect(halfIn((await A.get('/console/admin/access')).text, 'first')).toBeUndefined();
    // Split knowledge: neither administrator's half logs in alone.
    expect((await new ConsoleClient(sys.baseUrl).login(email, first)).status).toBe(401);
    expect((await new ConsoleClient(sys.baseUrl).login(email, second)).status).toBe(401);
    const temporary = `${first}-${second}`;

    const user = new ConsoleClient(sys.baseUrl);
    expect((await user.login(email, temporary)).status).toBe(303);
    const gated = await user.get('/console/keys');
    expect(gated.status).toBe(303);
    expect(gated.location).toBe('/console/password');
    const form = await user.get('/console/password');
    expect(form.text).toContain('You logged in with a temporary password');
    expect((await user.post('/console/keys', { label: 'x', permissions: 'read-balance' })).status).toBe(403);

    expect(
      (
        await user.post('/console/password', {
          currentPassword: 'wrong password',
          newPassword: 'my own password 1',
          confirmPassword: 'my own password 1',
        })
      ).text,
    ).toContain('The current password is wrong');
    expect(
      (
        await user.post('/console/password', {
          currentPassword: temporary,
          newPassword: temporary,
          confirmPassword: temporary,
        })
      ).status,
    ).toBe(400);
    expect(
      (
        await user.post('/console/password', {
          currentPassword: temporary,
          newPassword: 'my own password 1',
          confirmPassword: 'my own password 2',
        })
      ).text,
    ).toContain('The two new passwords differ');
    expect(
      (
        await user.post('/console/password', {
          currentPassword: temporary,
          newPassword: 'short',
          confirmPassword: 'short',
        })
      ).status,
    ).toBe(400);
    const changed = await user.post('/console/password', {
      currentPassword: temporary,
      newPassword: 'my own password 1',
      confirmPassword: 'my own password 1',
    });
    expect(changed.status).toBe(303);
    expect((await user.get('/console/keys')).status).toBe(200);
    expect((await new ConsoleClient(sys.baseUrl).login(email, temporary)).status).toBe(401);
    await as(email, 'my own password 1');
  });

  it('when an administrator disables a user, then the user’s session ends at once and they cannot log in; enabling them needs the other administrator', async () => {
    const user = await madeUser(['maker']);
    const session = await as(user.email, user.password);
    expect((await session.get('/console/keys')).status).toBe(200);

    const a = A;
    await a.get(`/console/admin/users/${user.userID}`);
    const noReason = await a.post(`/console/admin/users/${user.userID}/disable`, { reason: '' });
    expect(noReason.status).toBe(400);
    expect(noReason.text).toContain('id="disable-reason-error"');
    expect((await a.post(`/console/admin/users/${user.userID}/disable`, { reason: 'left the company' })).status).toBe(
      303,
    );

    expect(await sessionsOf(user.email)).toEqual([]);
    const ended = await session.get('/console/keys');
    expect(ended.status).toBe(303);
    expect(ended.location).toBe('/console/login?ended=1&next=%2Fconsole%2Fkeys');
    expect((await new ConsoleClient(sys.baseUrl).login(user.email, user.password)).status).toBe(401);
    expect((await a.get(`/console/admin/users/${user.userID}`)).text).toContain('Disabled');

    await a.get(`/console/admin/users/${user.userID}`);
    const requestID = await file(a, `/console/admin/users/${user.userID}/enable`, { reason: 'came back' });
    expect((await new ConsoleClient(sys.baseUrl).login(user.email, user.password)).status).toBe(401);
    expect(await approve(B, requestID)).toBeUndefined();
    await as(user.email, user.password);
  });

  it('when a disabled user’s session is still in the store, then the next request ends it anyway', async () => {
    const user = await madeUser(['maker']);
    const session = await as(user.email, user.password);
    const { disableUser } = await import('../../src/commands/user-admin.ts');
    const admin = await findUserByEmail(sys.backOffice, adminA);
    // Disabled by another process (the CLI): nothing deleted this process's session documents.
    await disableUser(sys.backOffice, admin, user.userID, 'by the CLI', { actor: 'operator:test', correlationId: 'c' });
    expect((await sessionsOf(user.email)).length).toBe(1);
    expect((await session.get('/console/')).location).toBe('/console/login?ended=1');
  });

  it('when a role is requested and approved, then the user has it; removing one takes effect at once, but never the last', async () => {
    const user = await madeUser(['maker']);
    const b = B;
    await b.get(`/console/admin/users/${user.userID}`);
    const requestID = await file(b, `/console/admin/users/${user.userID}/roles/add`, {
      role: 'checker',
      reason: 'covers for the supervisor',
    });
    await approve(A, requestID);
    expect((await findAnyUserByEmail(sys.backOffice, user.email)).roles).toEqual(['checker', 'maker']);

    const page = await b.get(`/console/admin/users/${user.userID}`);
    expect(page.text).toContain('Remove checker role');
    expect((await b.post(`/console/admin/users/${user.userID}/roles/remove`, { role: 'checker' })).status).toBe(303);
    expect((await findAnyUserByEmail(sys.backOffice, user.email)).roles).toEqual(['maker']);
    await b.get(`/console/admin/users/${user.userID}`);
    expect((await b.post(`/console/admin/users/${user.userID}/roles/remove`, { role: 'maker' })).status).toBe(400);
  });

  it('when a password reset is approved, then the user’s sessions end, the old password stops working and the temporary one must be changed', async () => {
    const user = await madeUser(['checker']);
    const session = await as(user.email, user.password);
    const a = A;
    await a.get(`/console/admin/users/${user.userID}`);
    const requestID = await file(a, `/console/admin/users/${user.userID}/reset-password`, { reason: 'forgot it' });
    expect((await session.get('/console/')).status).toBe(200); // nothing yet: only a request
    const temporary = await approve(B, requestID);
    expect(temporary).toBeDefined();
    expect(await sessionsOf(user.email)).toEqual([]);
    expect((await session.get('/console/')).location).toBe('/console/login?ended=1');
    expect((await new ConsoleClient(sys.baseUrl).login(user.email, user.password)).status).toBe(401);
    const fresh = new ConsoleClient(sys.baseUrl);
    await fresh.login(user.email, temporary!);
    expect((await fresh.get('/console/')).location).toBe('/console/password');
  });

  it('when a request is rejected with a reason or withdrawn by its requester, then nothing changes and the decided list says why', async () => {
    const email = newEmail('rejected');
    const a = A;
    const rejected = await requestUser(a, email, ['checker']);
    const b = B;
    await b.get('/console/admin/access');
    expect(
      (await b.post(`/console/admin/access/${rejected}/reject`, { reason: 'nobody of that name works there' })).status,
    ).toBe(303);
    const withdrawn = await requestUser(a, newEmail('withdrawn'), ['maker']);
    await a.get('/console/admin/access');
    expect((await a.post(`/console/admin/access/${withdrawn}/reject`, {})).status).toBe(303);
    const decided = await a.get('/console/admin/access?tab=decided');
    expect(decided.text).toContain('nobody of that name works there');
    expect(decided.text).toMatch(new RegExp(`${withdrawn}[\\s\\S]*?withdrawn by`));
    await expect(findAnyUserByEmail(sys.backOffice, email)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await b.get('/console/admin/access');
    expect((await b.post(`/console/admin/access/${rejected}/approve`)).status).toBe(409);
  });

  it('when the requesting administrator is disabled before the approval, then the request can no longer be approved', async () => {
    const third = await extraUser(sys.backOffice, null, [], 'admin-c');
    const c = await as(third, OTHER_PASSWORD);
    const requestID = await requestUser(c, newEmail('trap'), ['checker']);
    const a = A;
    const { userID } = await findAnyUserByEmail(sys.backOffice, third);
    await a.get(`/console/admin/users/${userID}`);
    expect((await a.post(`/console/admin/users/${userID}/disable`, { reason: 'left' })).status).toBe(303);
    await a.get('/console/admin/access');
    const refused = await a.post(`/console/admin/access/${requestID}/approve`);
    expect(refused.status).toBe(409);
    expect(refused.text).toContain('no longer active');
  });

  it('when an email is taken, then requesting it is refused beside the field', async () => {
    const a = A;
    await a.get('/console/admin');
    const taken = await a.post('/console/admin/users', {
      partyType: 'distributor',
      shortCode: dist.shortCode,
      email: dist.makerEmail,
      roles: ['maker'],
    });
    expect(taken.status).toBe(409);
    expect(taken.text).toContain('id="user-email-error"');
  });
});

describe('lists and one’s own password', { timeout: 120_000 }, () => {
  it('when an administrator lists users, then every party appears with its users, also one without any, and a party can be shown alone', async () => {
    const empty = await sys.party('merchant');
    const a = A;
    const all = await a.get('/console/admin/users');
    expect(all.status).toBe(200);
    for (const text of [adminA, adminB, dist.makerEmail, dist.checkerEmail, dist.name, empty.name])
      expect(all.text).toContain(text);
    const only = await a.get(`/console/admin/users?party=distributor:${dist.ref.id}`);
    expect(only.text).toContain(dist.makerEmail);
    expect(only.text).not.toContain(empty.name);
    expect(only.text).not.toContain(adminB);
  });

  it('when a user changes their own password, then the current one is required and their other sessions end', async () => {
    const maker = await madeUser(['maker']);
    const other = await as(maker.email, maker.password);
    const me = await as(maker.email, maker.password);
    await me.get('/console/password');
    expect(
      (
        await me.post('/console/password', {
          currentPassword: MAKER_PASSWORD,
          newPassword: 'next password 1',
          confirmPassword: 'next password 1',
        })
      ).status,
    ).toBe(400);
    expect(
      (
        await me.post('/console/password', {
          currentPassword: maker.password,
          newPassword: 'next password 1',
          confirmPassword: 'next password 1',
        })
      ).status,
    ).toBe(303);
    expect((await me.get('/console/')).status).toBe(200);
    expect((await other.get('/console/')).location).toBe('/console/login?ended=1');
    await as(maker.email, 'next password 1');
  });
});
