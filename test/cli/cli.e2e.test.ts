import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runCliJson } from '../support/cli.ts';
import { tempDir } from '../support/temp-dir.ts';

// The operator CLI end to end, each command in its own process on one data directory.
describe('wallet-ops CLI', () => {
  const dir = tempDir();
  const data = ['--data-dir', dir.path];
  let distributorID: string;

  beforeAll(async () => {
    ({ distributorID } = await runCliJson<{ distributorID: string }>(['party', 'add-distributor', '--name', 'Acme Agents', '--short-code', '1001', ...data]));
    await runCliJson(['user', 'add', '--party', `distributor:${distributorID}`, '--email', 'Maker@Acme.test', '--password', 'correct horse 1', '--roles', 'maker', ...data]);
    await runCliJson(['user', 'add', '--party', `distributor:${distributorID}`, '--email', 'checker@acme.test', '--password', 'correct horse 2', '--roles', 'checker', ...data]);
  });
  afterAll(() => dir.cleanup());

  it('when a key is requested and approved, then its secret is printed once and key list never shows it', async () => {
    const { keyID } = await runCliJson<{ keyID: string }>([
      'key', 'request', '--as', 'maker@acme.test', '--label', 'till 1',
      '--permissions', 'read-balance,read-transactions,perform-operations',
      '--max-transaction-amount', '500', '--max-daily-volume', '10000', '--allowed-ips', '10.0.0.0/8, 192.168.1.7',
      ...data,
    ]);
    expect(keyID).toMatch(/^key_/);

    const approval = await runCliJson<{ keyID: string; apiKey: string }>(['key', 'approve', keyID, '--as', 'checker@acme.test', ...data]);
    expect(approval.keyID).toBe(keyID);
    expect(approval.apiKey.startsWith(`${keyID}.`)).toBe(true);
    const secret = approval.apiKey.slice(keyID.length + 1);

    const list = await runCli(['key', 'list', '--party', `distributor:${distributorID}`, '--json', ...data]);
    expect(list.code).toBe(0);
    expect(list.stdout).not.toContain(secret);
    expect(list.stdout).not.toMatch(/secretHash|[0-9a-f]{64}/);
    const keys = JSON.parse(list.stdout) as Array<Record<string, unknown>>;
    expect(keys).toEqual([
      expect.objectContaining({
        keyID,
        label: 'till 1',
        state: 'active',
        permissions: ['Read Balance', 'Read Transactions', 'Perform Operations'],
        maxTransactionAmount: '500.00',
        maxDailyVolume: '10000.00',
        allowedIPs: ['10.0.0.0/8', '192.168.1.7'],
      }),
    ]);

    const again = await runCli(['key', 'approve', keyID, '--as', 'checker@acme.test', '--json', ...data]);
    expect(again.code).toBe(1);
    expect(again.stdout).toBe('');
    expect(again.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('when the maker approves their own key, then the CLI refuses with a one-line message and exit 1', async () => {
    const { keyID } = await runCliJson<{ keyID: string }>(['key', 'request', '--as', 'maker@acme.test', '--label', 'own', '--permissions', 'read-balance', ...data]);
    const result = await runCli(['key', 'approve', keyID, '--as', 'maker@acme.test', '--json', ...data]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/checker role|maker of a request/);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('when a key is revoked by maker request and checker approval, then it is listed as revoked', async () => {
    const { keyID } = await runCliJson<{ keyID: string }>(['key', 'request', '--as', 'maker@acme.test', '--label', 'to revoke', '--permissions', 'read-balance', ...data]);
    await runCliJson(['key', 'approve', keyID, '--as', 'checker@acme.test', ...data]);
    expect(await runCliJson(['key', 'revoke', keyID, '--as', 'maker@acme.test', '--reason', 'device lost', ...data])).toEqual({ keyID, state: 'revocation_pending' });
    expect(await runCliJson(['key', 'approve-revocation', keyID, '--as', 'checker@acme.test', ...data])).toEqual({ keyID, state: 'revoked' });
    const keys = await runCliJson<Array<{ keyID: string; state: string }>>(['key', 'list', '--party', `distributor:${distributorID}`, ...data]);
    expect(keys.find((k) => k.keyID === keyID)?.state).toBe('revoked');
  });

  it('when a pending key is rejected, then it is rejected', async () => {
    const { keyID } = await runCliJson<{ keyID: string }>(['key', 'request', '--as', 'maker@acme.test', '--label', 'nope', '--permissions', 'read-balance', ...data]);
    expect(await runCliJson(['key', 'reject', keyID, '--as', 'checker@acme.test', '--reason', 'not needed', ...data])).toEqual({ keyID, state: 'rejected' });
  });

  it('when several processes onboard the same short code at once, then exactly one succeeds', async () => {
    const results = await Promise.all(
      Array.from({ length: 4 }, (_, i) => runCli(['party', 'add-merchant', '--name', `Shop ${i}`, '--short-code', '7777', '--json', ...data])),
    );
    expect(results.filter((r) => r.code === 0)).toHaveLength(1);
    const refused = results.filter((r) => r.code !== 0);
    expect(refused).toHaveLength(3);
    for (const r of refused) expect(r.stderr).toMatch(/short code 7777 is already used/);
  });

  it('when an individual is added with a spaced phone, then it is stored in E.164', async () => {
    expect(await runCliJson(['party', 'add-individual', '--phone', '+234 8123456781', '--name', 'Ada', ...data])).toEqual({ phone: '+2348123456781' });
    const dup = await runCli(['party', 'add-individual', '--phone', '+2348123456781', '--name', 'Ada again', '--json', ...data]);
    expect(dup.code).toBe(1);
  });

  it('when a user email is reused in another case, then it is refused', async () => {
    const result = await runCli(['user', 'add', '--party', `distributor:${distributorID}`, '--email', 'MAKER@acme.test', '--password', 'correct horse 3', '--roles', 'maker', '--json', ...data]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/already exists/);
  });

  it('when the arguments are wrong, then the CLI exits 2 with usage help', async () => {
    const result = await runCli(['key', 'list', '--party', 'bank:1', '--json', ...data]);
    expect(result.code).toBe(2);
    const missing = await runCli(['party', 'add-distributor', '--name', 'x', ...data]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/short-code/);
  });

  it('when --help is asked for, then it lists the command groups', async () => {
    const result = await runCli(['--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/party[\s\S]*user[\s\S]*key/);
  });
});
