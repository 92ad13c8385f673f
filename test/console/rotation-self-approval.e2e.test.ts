import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findUserByEmail, requestApiKey } from '../../src/commands/back-office.ts';
import { approveAndCollectKey } from '../support/credentials.ts';
import { runCli } from '../support/cli.ts';
import { startTestSystem, waitFor, WITHOUT_EXECUTOR, type TestParty, type TestSystem } from '../support/system.ts';
import {
  CHECKER_PASSWORD,
  ConsoleClient,
  createCashIn,
  extraUser,
  newPhone,
  OTHER_PASSWORD,
  waitForStatus,
} from './console-client.ts';

/**
 * Issue 40's insider, through the console, the HTTP API and the CLI: a user with the maker and checker roles asks
 * to rotate another maker's key, a second checker approves, the user collects the new secret, creates a cash-in
 * with it and tries to approve it. Refused everywhere, as is every approval by someone who holds a secret of the
 * key that still works: the original requester during the overlap, the new holder for what the old secret made.
 */
let sys: TestSystem;
let dist: TestParty;
let phone: string;
/** Holds the maker and checker roles: requested the key (the original requester). */
let originalEmail: string;
/** Holds the maker and checker roles: asks for the rotation, so is handed the new secret. */
let insiderEmail: string;
let keyID: string;
let oldKey: string;
let newKey: string;

async function as(email: string, password = OTHER_PASSWORD): Promise<ConsoleClient> {
  const client = new ConsoleClient(sys.baseUrl);
  await client.loginOk(email, password);
  return client;
}

/** A console approval: the page first (its form's CSRF token), then the post. */
async function approveInConsole(client: ConsoleClient, operationID: string) {
  await client.get('/console/operations');
  return client.post(`/console/operations/${operationID}/approve`);
}

const approveInCli = (operationID: string, email: string) =>
  runCli(['operation', 'approve', operationID, '--as', email, '--data-dir', sys.config.DATA_DIR]);

beforeAll(async () => {
  sys = await startTestSystem({ SECRET_ROTATION_OVERLAP_HOURS: '2' }, undefined, WITHOUT_EXECUTOR);
  dist = await sys.party('distributor');
  phone = await sys.individual(newPhone());
  await sys.credit(dist.wallet, '20000.00');
  originalEmail = await extraUser(sys.backOffice, dist.ref, ['maker', 'checker'], 'sod-original');
  insiderEmail = await extraUser(sys.backOffice, dist.ref, ['maker', 'checker'], 'sod-insider');

  // The original requester's key, approved by the party's checker; its secret is theirs alone.
  const original = await findUserByEmail(sys.backOffice, originalEmail);
  const checker = await findUserByEmail(sys.backOffice, dist.checkerEmail);
  ({ keyID } = await requestApiKey(
    sys.backOffice,
    original,
    { label: 'till of another maker', permissions: 'read-balance,perform-operations' },
    'sod',
  ));
  oldKey = await approveAndCollectKey(sys.backOffice, checker, original, keyID);
  await waitFor(() => sys.system.directory.get(keyID)?.status === 'active');

  // The insider asks to rotate it in the console; the second checker approves; the insider collects the new secret.
  const insider = await as(insiderEmail);
  await insider.get(`/console/keys/${keyID}/rotate`);
  expect((await insider.post(`/console/keys/${keyID}/rotate`, { reason: 'taking over the till' })).status).toBe(303);
  // The key's own holder may not approve its rotation either: the page says so, and the server refuses.
  const holder = await as(originalEmail);
  const pending = await holder.get('/console/keys?tab=pending');
  expect(pending.text).toContain('You hold, or requested, a secret of this key: another checker must approve it.');
  const byHolder = await holder.post(`/console/keys/${keyID}/rotation/approve`);
  expect(byHolder.status).toBe(403);
  expect(byHolder.text).toContain(`you hold a secret of API key ${keyID} that still works`);
  const secondChecker = await as(dist.checkerEmail, CHECKER_PASSWORD);
  await secondChecker.get('/console/keys?tab=pending');
  expect((await secondChecker.post(`/console/keys/${keyID}/rotation/approve`)).status).toBe(303);
  const shown = await insider.get('/console/keys?tab=active');
  newKey = new RegExp(`value="(wo_live_${keyID}\\.[A-Za-z0-9_-]{43})"`).exec(shown.text)![1]!;
  await waitFor(() => sys.system.directory.get(keyID)?.previousSecretHash != null);
}, 60_000);
afterAll(async () => sys?.close());

describe('nobody approves an operation made with a secret they hold', { timeout: 60_000 }, () => {
  it("when the rotation's maker creates a cash-in with the new secret, then they cannot approve it in the console or the CLI; a checker who never held a secret can", async () => {
    const operationID = await createCashIn(sys, dist.ref.id, newKey, phone, '4999.00', 'moved alone?');
    // The HTTP API recorded which secret made it: the rotation's, generation 2.
    expect((await sys.system.stores.eventStore.readStream(`operation-${operationID}`))[0]!.data).toMatchObject({
      keyID,
      secretGeneration: 2,
    });
    const insider = await as(insiderEmail);

    const inConsole = await approveInConsole(insider, operationID);
    expect(inConsole.status).toBe(403);
    expect(inConsole.text).toContain(
      `you were handed the secret of API key ${keyID} that created it; another checker must approve it`,
    );
    const inCli = await approveInCli(operationID, insiderEmail);
    expect(inCli.code).not.toBe(0);
    expect(inCli.stderr).toMatch(/refused \(SAME_USER\): cannot approve operation op_\w+: you were handed the secret/);

    // The page says so before the click: the approve control is disabled for them.
    const page = await insider.get('/console/operations');
    expect(page.text).toContain('You hold, or held, a secret of the key that created it');
    // And their waiting count leaves it to another checker.
    expect(JSON.parse((await insider.get('/console/waiting')).text)).toMatchObject({ operations: 0 });

    const checker = await as(dist.checkerEmail, CHECKER_PASSWORD);
    expect((await approveInConsole(checker, operationID)).status).toBe(303);
    await waitForStatus(sys, operationID, 'approved');
  });

  it('when the original requester approves, during the overlap, a cash-in made with the new secret, then it is refused: their old secret still works', async () => {
    const operationID = await createCashIn(sys, dist.ref.id, newKey, phone, '10.00', 'new secret');
    const original = await as(originalEmail);
    const refused = await approveInConsole(original, operationID);
    expect(refused.status).toBe(403);
    expect(refused.text).toContain(`you hold a secret of API key ${keyID} that still works`);
    expect((await approveInCli(operationID, originalEmail)).stderr).toContain('SAME_USER');
  });

  it('when the new holder approves a cash-in made with the old secret during the overlap, then it is refused; so is its maker, the original requester', async () => {
    const operationID = await createCashIn(sys, dist.ref.id, oldKey, phone, '11.00', 'old secret');
    const operation = (await sys.system.stores.eventStore.readStream(`operation-${operationID}`))[0]!;
    expect(operation.data).toMatchObject({ keyID, secretGeneration: 1 });

    const insider = await as(insiderEmail);
    const byNewHolder = await approveInConsole(insider, operationID);
    expect(byNewHolder.status).toBe(403);
    expect(byNewHolder.text).toContain(`you hold a secret of API key ${keyID} that still works`);
    const byOriginal = await approveInCli(operationID, originalEmail);
    expect(byOriginal.stderr).toMatch(/SAME_USER.*you were handed the secret of API key/);
  });

  it('when every user with both roles tries every secret they hold, then no operation they created is approved by them', async () => {
    const holders = [
      { email: insiderEmail, apiKey: newKey },
      { email: originalEmail, apiKey: oldKey },
    ];
    for (const { email, apiKey } of holders) {
      const operationID = await createCashIn(sys, dist.ref.id, apiKey, phone, '1.00', `by ${email}`);
      const result = await approveInCli(operationID, email);
      expect(result.code, `${email} approved their own operation`).not.toBe(0);
      expect(result.stderr).toContain('SAME_USER');
    }
  });
});
