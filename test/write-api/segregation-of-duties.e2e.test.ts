import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  actingUser,
  decideOnApiKey,
  findUserByEmail,
  requestApiKey,
  userContext,
} from '../../src/commands/back-office.ts';
import { approveAndCollectKey } from '../support/credentials.ts';
import { decideOperation } from '../../src/commands/operation-handlers.ts';
import { DomainError } from '../../src/domain/errors.ts';
import { runCli } from '../support/cli.ts';
import { approveViaCli, operationOf } from '../support/executor-system.ts';
import { startTestSystem, waitFor, WITHOUT_EXECUTOR, type TestParty, type TestSystem } from '../support/system.ts';
import {
  ConsoleClient,
  createCashIn,
  extraUser,
  newPhone,
  OTHER_PASSWORD,
  waitForStatus,
} from '../console/console-client.ts';

/**
 * Segregation of duties on operations, end to end: the user who requested an API key is the only person who
 * has seen its secret, so they may not also approve what the key creates, whichever way they try (the
 * console over HTTP, the operator CLI with stores of its own, the back-office function). Another checker may.
 * The executor (and so the key-revocation consumer) does not run here: operations stay as the checkers left
 * them, which also shows the approval-side refusal of a revoked key's operation on its own.
 */
let sys: TestSystem;
let dist: TestParty;
/** A user of the distributor with both roles: requests the key, then tries to approve its operations. */
let bothEmail: string;
let phone: string;
let apiKey: string;
let keyID: string;

beforeAll(async () => {
  sys = await startTestSystem({}, undefined, WITHOUT_EXECUTOR);
  dist = await sys.party('distributor');
  bothEmail = await extraUser(sys.backOffice, dist.ref, ['maker', 'checker'], 'both');
  phone = await sys.individual(newPhone());
  await sys.credit(dist.wallet, '10000.00');
  const requester = await findUserByEmail(sys.backOffice, bothEmail);
  ({ keyID } = await requestApiKey(
    sys.backOffice,
    requester,
    { label: 'requested by both', permissions: 'read-balance,read-transactions,perform-operations' },
    randomUUID(),
  ));
  const checker = await findUserByEmail(sys.backOffice, dist.checkerEmail);
  apiKey = await approveAndCollectKey(sys.backOffice, checker, requester, keyID);
  await waitFor(() => sys.system.directory.get(keyID)?.status === 'active');
});

afterAll(async () => {
  await sys?.close();
});

async function consoleAs(email: string, password: string): Promise<ConsoleClient> {
  const client = new ConsoleClient(sys.baseUrl);
  await client.loginOk(email, password);
  return client;
}

const pendingOp = async (amount: string, memo: string, key = apiKey) => {
  const operationID = await createCashIn(sys, dist.ref.id, key, phone, amount, memo);
  await waitForStatus(sys, operationID, 'pending');
  return operationID;
};

describe('the requester of the key that created an operation cannot approve it', () => {
  it('when they approve it in the console, then it is refused with 403 naming the rule, the Approve control is disabled, and the operation stays pending', async () => {
    const operationID = await pendingOp('10.00', 'console self-approval');
    const client = await consoleAs(bothEmail, OTHER_PASSWORD);
    const page = await client.get('/console/operations');
    const row = page.text.slice(page.text.indexOf(`data-operation-id="${operationID}"`));
    expect(row.slice(0, row.indexOf('</tr>'))).toMatch(/<button type="button" disabled[^>]*>Approve<\/button>/);
    const refused = await client.post(`/console/operations/${operationID}/approve`);
    expect(refused.status).toBe(403);
    expect(refused.text).toMatch(/you were handed the secret of API key key_[A-Za-z0-9_-]+ that created it/);
    expect((await operationOf(sys, operationID)).status).toBe('pending');
  });

  it('when they approve it with the CLI, then it exits 1 with the reason on stderr; another checker of the party then approves it', async () => {
    const operationID = await pendingOp('11.00', 'cli self-approval');
    const refused = await runCli([
      'operation',
      'approve',
      operationID,
      '--as',
      bothEmail,
      '--data-dir',
      sys.config.DATA_DIR,
      '--json',
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/you were handed the secret of API key key_[A-Za-z0-9_-]+ that created it/);
    expect((await operationOf(sys, operationID)).status).toBe('pending');

    await approveViaCli(sys, dist, operationID);
    expect(await operationOf(sys, operationID)).toMatchObject({
      status: 'approved',
      decidedBy: (await findUserByEmail(sys.backOffice, dist.checkerEmail)).userID,
    });
  });

  it('when they approve it through the back-office function, then it is refused with SAME_USER; and in the console another checker approves it', async () => {
    const operationID = await pendingOp('12.00', 'back-office self-approval');
    const requester = await findUserByEmail(sys.backOffice, bothEmail);
    const attempt = decideOperation(
      sys.backOffice,
      actingUser(requester),
      operationID,
      { type: 'approve' },
      userContext(requester, randomUUID()),
    );
    await expect(attempt).rejects.toBeInstanceOf(DomainError);
    await expect(attempt).rejects.toMatchObject({ code: 'SAME_USER' });

    const checker = await consoleAs(dist.checkerEmail, 'checker password 1');
    await checker.get('/console/operations');
    expect((await checker.post(`/console/operations/${operationID}/approve`)).status).toBe(303);
    expect((await operationOf(sys, operationID)).status).toBe('approved');
  });

  it('when they reject it, then that is allowed: a rejection moves no money', async () => {
    const operationID = await pendingOp('13.00', 'self-rejection');
    const client = await consoleAs(bothEmail, OTHER_PASSWORD);
    await client.get(`/console/operations/${operationID}/reject`);
    expect(
      (await client.post(`/console/operations/${operationID}/reject`, { reason: 'not mine to keep' })).status,
    ).toBe(303);
    expect((await operationOf(sys, operationID)).status).toBe('rejected');
  });

  it('when the same user approves an operation made with a key someone else requested, then it is approved', async () => {
    const { apiKey: makersKey } = await dist.key({ label: 'requested by the maker' });
    const operationID = await pendingOp('14.00', 'someone else’s key', makersKey);
    const client = await consoleAs(bothEmail, OTHER_PASSWORD);
    await client.get('/console/operations');
    expect((await client.post(`/console/operations/${operationID}/approve`)).status).toBe(303);
    expect((await operationOf(sys, operationID)).status).toBe('approved');
  });
});

describe('an operation whose key is revoked cannot be approved', () => {
  it('when the key was revoked while the operation was pending, then a checker’s approval is refused with 409 in the console and exit 1 in the CLI', async () => {
    const { keyID: revokedID, apiKey: revokedKey } = await dist.key({ label: 'to be revoked' });
    const operationID = await pendingOp('15.00', 'made before the revocation', revokedKey);
    const maker = await findUserByEmail(sys.backOffice, dist.makerEmail);
    const checker = await findUserByEmail(sys.backOffice, dist.checkerEmail);
    await decideOnApiKey(
      sys.backOffice,
      maker,
      revokedID,
      { type: 'RequestApiKeyRevocation', reason: 'leaked' },
      randomUUID(),
    );
    await decideOnApiKey(sys.backOffice, checker, revokedID, { type: 'ApproveApiKeyRevocation' }, randomUUID());

    // No executor part here, so no consumer rejected it: the approval side alone must refuse.
    const client = await consoleAs(dist.checkerEmail, 'checker password 1');
    await client.get('/console/operations');
    const refused = await client.post(`/console/operations/${operationID}/approve`);
    expect(refused.status).toBe(409);
    expect(refused.text).toContain('has been revoked');
    const cli = await runCli([
      'operation',
      'approve',
      operationID,
      '--as',
      dist.checkerEmail,
      '--data-dir',
      sys.config.DATA_DIR,
      '--json',
    ]);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toMatch(/has been revoked/);
    expect((await operationOf(sys, operationID)).status).toBe('pending');
  });
});
