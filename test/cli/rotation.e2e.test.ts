import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runCliJson } from '../support/cli.ts';
import { registerEndpoint } from '../support/webhooks.ts';
import {
  call,
  startTestSystem,
  waitFor,
  WITHOUT_EXECUTOR,
  type TestParty,
  type TestSystem,
} from '../support/system.ts';

/**
 * Secret rotation through the CLI, against a running system on the same data directory: the maker asks, the
 * checker approves (and is shown no secret), the maker collects the new secret with `key secret`; the server
 * accepts both secrets during the overlap. Each CLI call is a process: few of them.
 */
describe('wallet-ops key|webhook rotate / approve-rotation / secret', () => {
  let sys: TestSystem;
  let party: TestParty;

  beforeAll(async () => {
    sys = await startTestSystem({ WEBHOOK_ALLOW_INSECURE_LOCALHOST: 'true' }, undefined, WITHOUT_EXECUTOR);
    party = await sys.party('distributor');
  });
  afterAll(async () => sys?.close());

  it('when a maker rotates and a checker approves, then the checker sees no secret, the maker collects the new one, and old and new both work during the overlap', async () => {
    const { keyID, apiKey: oldKey } = await party.key();
    const data = ['--data-dir', sys.config.DATA_DIR];
    const balance = (apiKey: string) =>
      call(sys.baseUrl, 'GET', `/api/v1/distributors/${party.ref.id}/balance`, { apiKey });

    expect(
      await runCliJson(['key', 'rotate', keyID, '--as', party.makerEmail, '--reason', 'yearly rotation', ...data]),
    ).toEqual({ keyID, rotation: 'pending' });
    const approval = await runCli(['key', 'approve-rotation', keyID, '--as', party.checkerEmail, '--json', ...data]);
    expect(approval.code, approval.stderr).toBe(0);
    expect(approval.stdout).not.toContain(`${keyID}.`);
    const approved = JSON.parse(approval.stdout) as { previousSecretValidUntil: string };
    expect(approved).toEqual({
      keyID,
      rotation: 'approved',
      secretHeldFor: party.makerEmail,
      previousSecretValidUntil: expect.any(String),
    });
    // The default overlap: a day after the approval.
    expect(Date.parse(approved.previousSecretValidUntil) - Date.now()).toBeGreaterThan(23 * 3_600_000);

    const { apiKey: newKey } = await runCliJson<{ keyID: string; apiKey: string }>([
      'key',
      'secret',
      keyID,
      '--as',
      party.makerEmail,
      ...data,
    ]);
    expect(newKey.startsWith(`wo_live_${keyID}.`)).toBe(true);
    expect(newKey).not.toBe(oldKey);
    await waitFor(() => sys.system.directory.get(keyID)?.previousSecretHash != null);
    expect((await balance(newKey)).status).toBe(200);
    expect((await balance(oldKey)).status).toBe(200);
  }, 60_000);

  it('when a checker rejects a rotation and its maker withdraws the next, then each is said to a person in a line, and the key keeps its secret', async () => {
    const { keyID, apiKey } = await party.key();
    const data = ['--data-dir', sys.config.DATA_DIR];
    const rotate = () => runCli(['key', 'rotate', keyID, '--as', party.makerEmail, '--reason', 'leaked?', ...data]);
    const pending =
      `key ${keyID}: rotation pending (a checker of the party approves it with: wallet-ops key approve-rotation ` +
      `${keyID} --as EMAIL)\n`;

    const asked = await rotate();
    const rejected = await runCli(['key', 'reject-rotation', keyID, '--as', party.checkerEmail, ...data]);
    const askedAgain = await rotate();
    const byTheChecker = await runCli(['key', 'withdraw-rotation', keyID, '--as', party.checkerEmail, ...data]);
    const withdrawn = await runCli(['key', 'withdraw-rotation', keyID, '--as', party.makerEmail, ...data]);

    expect([asked, rejected, askedAgain, withdrawn].map(({ code, stdout }) => ({ code, stdout }))).toEqual([
      { code: 0, stdout: pending },
      { code: 0, stdout: `key ${keyID}: rotation rejected\n` },
      { code: 0, stdout: pending },
      { code: 0, stdout: `key ${keyID}: rotation withdrawn\n` },
    ]);
    // Only the maker who asked takes a rotation back.
    expect(byTheChecker.code).toBe(1);
    expect(byTheChecker.stderr).toMatch(/only the maker who requested the rotation can withdraw it/);
    // Nothing to approve now: the key's only secret is the one it had.
    expect((await runCli(['key', 'approve-rotation', keyID, '--as', party.checkerEmail, ...data])).code).toBe(1);
    expect((await call(sys.baseUrl, 'GET', `/api/v1/distributors/${party.ref.id}/balance`, { apiKey })).status).toBe(
      200,
    );
  }, 60_000);

  it("when a webhook endpoint's secret is rotated through the CLI, then the new signing secret waits for the maker and differs from the old", async () => {
    const data = ['--data-dir', sys.config.DATA_DIR];
    const { endpointID, secret: oldSecret } = await registerEndpoint(sys, party, 'http://127.0.0.1:9/hooks', [
      'api_key.revoked',
    ]);
    expect(
      await runCliJson([
        'webhook',
        'rotate',
        endpointID,
        '--as',
        party.makerEmail,
        '--reason',
        'secret seen in a log',
        ...data,
      ]),
    ).toEqual({ endpointID, rotation: 'pending' });
    expect(await runCliJson(['webhook', 'approve-rotation', endpointID, '--as', party.checkerEmail, ...data])).toEqual({
      endpointID,
      rotation: 'approved',
      secretHeldFor: party.makerEmail,
      previousSecretValidUntil: expect.any(String),
    });
    const { secret } = await runCliJson<{ endpointID: string; secret: string }>([
      'webhook',
      'secret',
      endpointID,
      '--as',
      party.makerEmail,
      ...data,
    ]);
    expect(secret).toMatch(/^whsec_/);
    expect(secret).not.toBe(oldSecret);
  }, 60_000);
});
