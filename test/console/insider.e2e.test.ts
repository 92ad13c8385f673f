import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  approveApiKey,
  collectCredential,
  findAnyUserByEmail,
  findUserByEmail,
  requestApiKey,
} from '../../src/commands/back-office.ts';
import { streams } from '../../src/domain/streams.ts';
import { approveAndCollectKey } from '../support/credentials.ts';
import { call, startTestSystem, waitFor, type TestParty, type TestSystem } from '../support/system.ts';
import { registerEndpoint } from '../support/webhooks.ts';
import { ConsoleClient, createCashIn, extraUser, MAKER_PASSWORD, newPhone, OTHER_PASSWORD } from './console-client.ts';

/**
 * The insiders of issue 24, played end to end through the console and the HTTP API: an administrator who
 * approves password resets, a checker who approves a key, and a maker who leaves. None of them alone can log
 * in as another user, or create and approve an operation.
 */
let sys: TestSystem;
let dist: TestParty;
let phone: string;
let adminA: string;
let adminB: string;

const HALF = (which: 'first' | 'second') => new RegExp(`value="([^"]+)"[^>]*data-password-half="${which}"`);
const halfIn = (text: string, which: 'first' | 'second') => HALF(which).exec(text)?.[1];

async function as(email: string, password: string): Promise<ConsoleClient> {
  const client = new ConsoleClient(sys.baseUrl);
  await client.loginOk(email, password);
  return client;
}

/** Files the request on the user's admin page; returns its id, read off the flash. */
async function requestReset(admin: ConsoleClient, email: string): Promise<string> {
  const { userID } = await findAnyUserByEmail(sys.backOffice, email);
  await admin.get(`/console/admin/users/${userID}`);
  const sent = await admin.post(`/console/admin/users/${userID}/reset-password`, { reason: 'routine' });
  expect(sent.status, sent.text).toBe(303);
  return /acr_[0-9a-f]{32}/.exec((await admin.get(sent.location!)).text)![0];
}

const createPath = () => `/api/v1/distributors/${dist.ref.id}/operations`;

beforeAll(async () => {
  // Every part: the key-revocation consumer (with the executor) rejects what a departed maker's key left pending.
  // Nothing here is approved, so credit()'s funds (no ledger transfer behind them) never reach the executor.
  sys = await startTestSystem();
  dist = await sys.party('distributor');
  phone = await sys.individual(newPhone());
  await sys.credit(dist.wallet, '10000.00');
  adminA = await extraUser(sys.backOffice, null, [], 'insider-admin-a');
  adminB = await extraUser(sys.backOffice, null, [], 'insider-admin-b');
});
afterAll(async () => {
  await sys?.close();
});

describe('an administrator who approves password resets', { timeout: 60_000 }, () => {
  it('when admin A asks resets for the maker and the checker and admin B approves both, then B sees only second halves, cannot log in as either, and so cannot create and approve a cash-in', async () => {
    const a = await as(adminA, OTHER_PASSWORD);
    const b = await as(adminB, OTHER_PASSWORD);
    const resets = [await requestReset(a, dist.makerEmail), await requestReset(a, dist.checkerEmail)];

    const secondHalves: string[] = [];
    for (const requestID of resets) {
      await b.get('/console/admin/access');
      const approved = await b.post(`/console/admin/access/${requestID}/approve`);
      expect(approved.status, approved.text).toBe(303);
      const shown = (await b.get(approved.location!)).text;
      expect(halfIn(shown, 'first')).toBeUndefined();
      secondHalves.push(halfIn(shown, 'second')!);
    }
    expect(secondHalves.every((half) => /^[2-9a-z]{4}-[2-9a-z]{4}$/.test(half))).toBe(true);

    // B has everything an approver is ever shown; no guess built from it opens either account.
    for (const [email, half] of [
      [dist.makerEmail, secondHalves[0]!],
      [dist.checkerEmail, secondHalves[1]!],
    ] as const) {
      for (const attempt of [half, `${half}-${half}`, `2222-2222-${half}`]) {
        expect((await new ConsoleClient(sys.baseUrl).login(email, attempt)).status).toBe(401);
      }
    }
    // Nor can B collect A's halves through any path: they are held for A alone.
    const approver = await findUserByEmail(sys.backOffice, adminB);
    for (const requestID of resets) {
      await expect(
        collectCredential(sys.backOffice, approver, { kind: 'password-half', id: requestID }),
      ).rejects.toMatchObject({ code: 'NOT_FOUND' });
    }
    // The old passwords stopped working with the reset: B cannot use those either.
    expect((await new ConsoleClient(sys.baseUrl).login(dist.makerEmail, MAKER_PASSWORD)).status).toBe(401);

    // Only both administrators together (the four-eyes bound) make the password: A's halves arrive on A's next page.
    const firstHalves = [
      ...(await a.get('/console/admin/access')).text.matchAll(/value="([^"]+)"[^>]*data-password-half="first"/g),
    ].map((m) => m[1]!);
    expect(firstHalves).toHaveLength(2);
    const makerHalf = firstHalves.find((_, i) => i === 0)!;
    const both = [`${makerHalf}-${secondHalves[0]}`, `${firstHalves[1]}-${secondHalves[0]}`];
    const opened = await Promise.all(
      both.map(async (password) => (await new ConsoleClient(sys.baseUrl).login(dist.makerEmail, password)).status),
    );
    expect(opened.filter((status) => status === 303)).toHaveLength(1);
  });
});

describe('a checker who approves a key', { timeout: 60_000 }, () => {
  it('when the checker approves the maker’s key in the console, then the checker is shown no secret, cannot collect it, and cannot create an operation alone', async () => {
    const maker = await findUserByEmail(sys.backOffice, dist.makerEmail);
    const { keyID } = await requestApiKey(
      sys.backOffice,
      maker,
      { label: 'till of the insider test', permissions: 'perform-operations' },
      'insider',
    );
    await waitFor(() => sys.system.directory.get(keyID) !== undefined);
    const checkerEmail = await extraUser(sys.backOffice, dist.ref, ['checker'], 'insider-checker');
    const checker = await as(checkerEmail, OTHER_PASSWORD);
    await checker.get('/console/keys');
    const approved = await checker.post(`/console/keys/${keyID}/approve`);
    expect(approved.status).toBe(303);
    expect((await checker.get(approved.location!)).text).not.toContain(`${keyID}.`);
    expect((await checker.get('/console/keys?tab=active')).text).not.toContain(`${keyID}.`);
    const checkerUser = await findUserByEmail(sys.backOffice, checkerEmail);
    await expect(collectCredential(sys.backOffice, checkerUser, { kind: 'api-key', id: keyID })).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    // Without a key there is no create; and a checker cannot ask for a key of their own.
    expect(
      (
        await call(sys.baseUrl, 'POST', createPath(), {
          body: { operationType: 'cash-in', amount: '5000.00', phoneTo: phone },
        })
      ).status,
    ).toBe(401);
    await checker.get('/console/keys/new');
    expect((await checker.post('/console/keys', { label: 'mine', permissions: ['perform-operations'] })).status).toBe(
      403,
    );
  });
});

describe('a maker who leaves', { timeout: 60_000 }, () => {
  it('when an administrator disables the maker, then their key stops working at once, its pending cash-in is rejected, their endpoint is disabled and their pending key request can no longer be approved', async () => {
    const leaverEmail = await extraUser(sys.backOffice, dist.ref, ['maker'], 'insider-leaver');
    const leaver = await findUserByEmail(sys.backOffice, leaverEmail);
    const { keyID } = await requestApiKey(
      sys.backOffice,
      leaver,
      { label: 'leaver till', permissions: 'perform-operations' },
      'insider',
    );
    const checker = await findUserByEmail(sys.backOffice, dist.checkerEmail);
    const apiKey = await approveAndCollectKey(sys.backOffice, checker, leaver, keyID);
    await waitFor(() => sys.system.directory.get(keyID)?.status === 'active');
    const pendingCashIn = await createCashIn(sys, dist.ref.id, apiKey, phone, '40.00', 'before leaving');
    const { keyID: pendingKey } = await requestApiKey(
      sys.backOffice,
      leaver,
      { label: 'never approved', permissions: 'read-balance' },
      'insider',
    );
    const endpoint = await registerEndpoint(sys, { ...dist, makerEmail: leaverEmail }, 'http://127.0.0.1:9/hooks', [
      'operation.completed',
    ]);

    // The administrator's page lists what the departure ends before they decide.
    const admin = await as(adminA, OTHER_PASSWORD);
    const page = await admin.get(`/console/admin/users/${leaver.userID}`);
    for (const id of [keyID, pendingKey, endpoint.endpointID]) expect(page.text).toContain(`data-credential="${id}"`);
    const disabled = await admin.post(`/console/admin/users/${leaver.userID}/disable`, { reason: 'left the company' });
    expect(disabled.status, disabled.text).toBe(303);
    expect((await admin.get(disabled.location!)).text).toContain(keyID);

    await waitFor(() => sys.system.directory.get(keyID)?.status === 'revoked');
    expect(
      (
        await call(sys.baseUrl, 'POST', createPath(), {
          apiKey,
          body: { operationType: 'cash-in', amount: '1.00', phoneTo: phone },
        })
      ).status,
    ).toBe(401);
    const endpointEvents = await sys.system.stores.eventStore.readStream(streams.webhookEndpoint(endpoint.endpointID));
    expect(endpointEvents.at(-1)).toMatchObject({
      type: 'WebhookEndpointDisabled',
      data: { disabledBy: 'system', departedUserID: leaver.userID },
    });
    const pendingEvents = await sys.system.stores.eventStore.readStream(streams.apiKey(pendingKey));
    expect(pendingEvents.at(-1)).toMatchObject({
      type: 'ApiKeyRequestWithdrawn',
      data: { withdrawnBy: 'system', departedUserID: leaver.userID },
    });
    // The cash-in the departed maker's key created waits for no one: the key-revocation consumer rejects it.
    await waitFor(
      async () =>
        (await sys.system.stores.eventStore.readStream(streams.operation(pendingCashIn))).some(
          (e) => e.type === 'OperationRejected',
        ),
      10_000,
    );
  });

  it('given a departure that did not see a key request (another process listed before it was written), when a checker approves the request, then it is refused: the secret would go to someone who left', async () => {
    const leaverEmail = await extraUser(sys.backOffice, dist.ref, ['maker'], 'insider-late');
    const leaver = await findUserByEmail(sys.backOffice, leaverEmail);
    const { keyID } = await requestApiKey(
      sys.backOffice,
      leaver,
      { label: 'late', permissions: 'read-balance' },
      'insider',
    );
    const admin = await findUserByEmail(sys.backOffice, adminB);
    await sys.system.stores.eventStore.append(
      streams.user(leaver.userID),
      [
        {
          type: 'UserDisabled',
          data: {
            userID: leaver.userID,
            disabledBy: admin.userID,
            reason: 'left',
            disabledAt: new Date().toISOString(),
          },
          metadata: { actor: `user:${admin.userID}` },
        },
      ],
      'any',
    );
    const checker = await findUserByEmail(sys.backOffice, dist.checkerEmail);
    await expect(approveApiKey(sys.backOffice, checker, keyID, 'c')).rejects.toMatchObject({
      code: 'WRONG_STATE',
      message: expect.stringMatching(/maker who requested it is disabled/),
    });
    expect(sys.system.directory.get(keyID)?.status).toBe('pending');
  });
});
