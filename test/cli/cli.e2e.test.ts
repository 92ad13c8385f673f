import { userInfo } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streams } from '../../src/domain/streams.ts';
import { runCli, runCliJson, runCliProcess, runCliProcessJson } from '../support/cli.ts';
import { call, startTestSystem, type TestParty, type TestSystem, WITHOUT_EXECUTOR } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';

// The operator CLI end to end on one data directory, in this process (test/support/cli.ts); the smoke tests of
// the real binary (a JSON command, a refusal, a usage error, help) and the race between processes run it as
// processes of their own.
describe('wallet-ops CLI', () => {
  const dir = tempDir();
  const data = ['--data-dir', dir.path];
  let distributorID: string;

  beforeAll(async () => {
    ({ distributorID } = await runCliProcessJson<{ distributorID: string }>([
      'party',
      'add-distributor',
      '--name',
      'Acme Agents',
      '--short-code',
      '1001',
      ...data,
    ]));
    await runCliJson([
      'user',
      'add',
      '--party',
      `distributor:${distributorID}`,
      '--email',
      'Maker@Acme.test',
      '--password',
      'correct horse 1',
      '--roles',
      'maker',
      ...data,
    ]);
    await runCliJson([
      'user',
      'add',
      '--party',
      `distributor:${distributorID}`,
      '--email',
      'checker@acme.test',
      '--password',
      'correct horse 2',
      '--roles',
      'checker',
      ...data,
    ]);
  }, 120_000);
  afterAll(() => dir.cleanup());

  it('when a key is requested and approved, then the checker is shown no secret, the maker collects it once, and key list never shows it', async () => {
    const { keyID } = await runCliJson<{ keyID: string }>([
      'key',
      'request',
      '--as',
      'maker@acme.test',
      '--label',
      'till 1',
      '--permissions',
      'read-balance,read-transactions,perform-operations',
      '--max-transaction-amount',
      '500',
      '--max-daily-volume',
      '10000',
      '--allowed-ips',
      '10.0.0.0/8, 192.168.1.7',
      ...data,
    ]);
    expect(keyID).toMatch(/^key_/);

    const approval = await runCli(['key', 'approve', keyID, '--as', 'checker@acme.test', '--json', ...data]);
    expect(approval.code).toBe(0);
    expect(JSON.parse(approval.stdout)).toEqual({ keyID, state: 'active', secretHeldFor: 'maker@acme.test' });
    expect(approval.stdout + approval.stderr).not.toContain(`${keyID}.`);

    // Only the maker who asked can collect it, once: not the checker, not a second time.
    const byChecker = await runCli(['key', 'secret', keyID, '--as', 'checker@acme.test', '--json', ...data]);
    expect(byChecker.code).toBe(1);
    expect(byChecker.stdout).toBe('');
    const collected = await runCliJson<{ keyID: string; apiKey: string }>([
      'key',
      'secret',
      keyID,
      '--as',
      'maker@acme.test',
      ...data,
    ]);
    expect(collected.keyID).toBe(keyID);
    expect(collected.apiKey.startsWith(`wo_live_${keyID}.`)).toBe(true);
    const secret = collected.apiKey.slice(keyID.length + 1);
    const twice = await runCli(['key', 'secret', keyID, '--as', 'maker@acme.test', '--json', ...data]);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toMatch(/collected once, by its owner/);

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
    const { keyID } = await runCliJson<{ keyID: string }>([
      'key',
      'request',
      '--as',
      'maker@acme.test',
      '--label',
      'own',
      '--permissions',
      'read-balance',
      ...data,
    ]);
    const result = await runCliProcess(['key', 'approve', keyID, '--as', 'maker@acme.test', '--json', ...data]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/checker role|maker of a request/);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('when a key is revoked by maker request and checker approval, then it is listed as revoked', async () => {
    const { keyID } = await runCliJson<{ keyID: string }>([
      'key',
      'request',
      '--as',
      'maker@acme.test',
      '--label',
      'to revoke',
      '--permissions',
      'read-balance',
      ...data,
    ]);
    await runCliJson(['key', 'approve', keyID, '--as', 'checker@acme.test', ...data]);
    expect(
      await runCliJson(['key', 'revoke', keyID, '--as', 'maker@acme.test', '--reason', 'device lost', ...data]),
    ).toEqual({ keyID, state: 'revocation_pending' });
    expect(await runCliJson(['key', 'approve-revocation', keyID, '--as', 'checker@acme.test', ...data])).toEqual({
      keyID,
      state: 'revoked',
    });
    const keys = await runCliJson<Array<{ keyID: string; state: string }>>([
      'key',
      'list',
      '--party',
      `distributor:${distributorID}`,
      ...data,
    ]);
    expect(keys.find((k) => k.keyID === keyID)?.state).toBe('revoked');
  });

  it('when a checker rejects a revocation, then the key stays active, and key list shows a person its line', async () => {
    const { keyID } = await runCliJson<{ keyID: string }>([
      'key',
      'request',
      '--as',
      'maker@acme.test',
      '--label',
      'till 2',
      '--permissions',
      'read-balance,read-transactions',
      ...data,
    ]);
    await runCliJson(['key', 'approve', keyID, '--as', 'checker@acme.test', ...data]);
    await runCliJson(['key', 'revoke', keyID, '--as', 'maker@acme.test', '--reason', 'till stolen?', ...data]);

    expect(
      await runCliJson(['key', 'reject-revocation', keyID, '--as', 'checker@acme.test', '--reason', 'found', ...data]),
    ).toEqual({ keyID, state: 'active' });
    const list = await runCli(['key', 'list', '--party', `distributor:${distributorID}`, ...data]);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout.split('\n')).toContainEqual(
      expect.stringMatching(
        new RegExp(`^${keyID} {2}active {13}till 2 {2}\\[Read Balance, Read Transactions\\] {2}expires \\S+$`),
      ),
    );
  });

  it('when a pending key is rejected, then it is rejected', async () => {
    const { keyID } = await runCliJson<{ keyID: string }>([
      'key',
      'request',
      '--as',
      'maker@acme.test',
      '--label',
      'nope',
      '--permissions',
      'read-balance',
      ...data,
    ]);
    expect(
      await runCliJson(['key', 'reject', keyID, '--as', 'checker@acme.test', '--reason', 'not needed', ...data]),
    ).toEqual({ keyID, state: 'rejected' });
  });

  it('when the maker withdraws their pending key request, then it is withdrawn; a checker cannot, and a withdrawn key cannot be approved', async () => {
    const { keyID } = await runCliJson<{ keyID: string }>([
      'key',
      'request',
      '--as',
      'maker@acme.test',
      '--label',
      'changed my mind',
      '--permissions',
      'read-balance',
      ...data,
    ]);
    const byChecker = await runCli(['key', 'withdraw', keyID, '--as', 'checker@acme.test', '--json', ...data]);
    expect(byChecker.code).toBe(1);
    expect(byChecker.stderr).toMatch(/only the maker who requested the key can withdraw/);
    expect(await runCliJson(['key', 'withdraw', keyID, '--as', 'maker@acme.test', ...data])).toEqual({
      keyID,
      state: 'withdrawn',
    });
    const approval = await runCli(['key', 'approve', keyID, '--as', 'checker@acme.test', '--json', ...data]);
    expect(approval.code).toBe(1);
    expect(approval.stderr).toMatch(/withdrawn, not pending/);
  });

  it('when several processes onboard the same short code at once, then exactly one succeeds', async () => {
    const results = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        runCliProcess(['party', 'add-merchant', '--name', `Shop ${i}`, '--short-code', '7777', '--json', ...data]),
      ),
    );
    expect(results.filter((r) => r.code === 0)).toHaveLength(1);
    const refused = results.filter((r) => r.code !== 0);
    expect(refused).toHaveLength(3);
    for (const r of refused) expect(r.stderr).toMatch(/short code 7777 is already used/);
  });

  it('when an individual is added with a spaced phone, then it is stored in E.164', async () => {
    expect(
      await runCliJson(['party', 'add-individual', '--phone', '+234 8123456781', '--name', 'Ada', ...data]),
    ).toEqual({ phone: '+2348123456781' });
    const dup = await runCli([
      'party',
      'add-individual',
      '--phone',
      '+2348123456781',
      '--name',
      'Ada again',
      '--json',
      ...data,
    ]);
    expect(dup.code).toBe(1);
  });

  it('when a user email is reused in another case, then it is refused', async () => {
    const result = await runCli([
      'user',
      'add',
      '--party',
      `distributor:${distributorID}`,
      '--email',
      'MAKER@acme.test',
      '--password',
      'correct horse 3',
      '--roles',
      'maker',
      '--json',
      ...data,
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/already exists/);
  });

  it('when an argument or an option holds a control character, then the CLI refuses it naming which, before the command runs (issue 40)', async () => {
    const cases: Array<[string[], string]> = [
      [
        ['party', 'add-individual', '--phone', '+2348123456782', '--name', 'Ada\u0001Obi'],
        '--name must not contain control characters (U+0001 at character 4)',
      ],
      [
        ['party', 'add-individual', '--phone', '+2348123456782\u001b', '--name', 'Ada'],
        '--phone must not contain control characters (U+001B at character 15)',
      ],
      [
        ['key', 'approve', 'key_AbC123dEf456GhIj\u007f', '--as', 'checker@acme.test'],
        '<keyID> must not contain control characters (U+007F at character 21)',
      ],
      [
        ['key', 'request', '--as', 'maker@acme.test\u0085', '--label', 'till', '--permissions', 'read-balance'],
        '--as must not contain control characters (U+0085 at character 16)',
      ],
      [
        ['key', 'request', '--as', 'maker@acme.test', '--label', 'till\n2', '--permissions', 'read-balance'],
        '--label must not contain control characters (U+000A at character 5)',
      ],
    ];
    for (const [args, message] of cases) {
      const result = await runCli([...args, '--json', ...data]);
      expect(result.code, args.join(' ')).toBe(1);
      expect(result.stderr, args.join(' ')).toContain(message);
    }
    // Nothing ran: the phone of the refused runs is still free.
    expect(
      await runCliJson(['party', 'add-individual', '--phone', '+2348123456782', '--name', 'Ada Obi', ...data]),
    ).toEqual({ phone: '+2348123456782' });
  });

  it('when the arguments are wrong, then the CLI exits 2 with usage help', async () => {
    const result = await runCli(['key', 'list', '--party', 'bank:1', '--json', ...data]);
    expect(result.code).toBe(2);
    const missing = await runCliProcess(['party', 'add-distributor', '--name', 'x', ...data]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/short-code/);
  });

  it('when --help is asked for, then it lists the command groups', async () => {
    const result = await runCliProcess(['--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/party[\s\S]*user[\s\S]*key/);
  });
});

// Who acted, when an operator at the CLI acts for a user (`--as EMAIL`): the events say both.
describe('wallet-ops CLI: attribution', () => {
  const operator = `operator:${userInfo().username}`;
  let sys: TestSystem;
  let distributor: TestParty;
  let data: string[];
  let checkerID: string;

  beforeAll(async () => {
    sys = await startTestSystem({}, undefined, WITHOUT_EXECUTOR);
    distributor = await sys.party('distributor');
    data = ['--data-dir', sys.config.DATA_DIR];
    const [claim] = await sys.system.stores.eventStore.readStream(streams.userEmail(distributor.checkerEmail));
    checkerID = (claim!.data as { userID: string }).userID;
  }, 120_000);
  afterAll(async () => sys?.close());

  it('when a checker approves an operation through the CLI, then its events name the user as actor and the OS user as operator, and audit operation shows both', async () => {
    const { apiKey } = await distributor.key();
    await sys.credit(distributor.wallet, '100');
    const phone = await sys.individual('+2348129990001');
    const created = await call(sys.baseUrl, 'POST', `/api/v1/distributors/${distributor.ref.id}/operations`, {
      apiKey,
      body: { operationType: 'cash-in', amount: '5', phoneTo: phone },
    });
    expect(created.status).toBe(200);
    const operationID = created.body.operationID as string;

    expect(await runCliJson(['operation', 'approve', operationID, '--as', distributor.checkerEmail, ...data])).toEqual({
      operationID,
      state: 'approved',
    });

    const events = await sys.system.stores.eventStore.readStream(streams.operation(operationID));
    const approved = events.find((e) => e.type === 'OperationApproved')!;
    expect(approved.metadata).toMatchObject({ actor: `user:${checkerID}`, operator });
    // Through the API (or the console) there is no operator: nobody stood in for anyone.
    expect(events[0]!.metadata.operator).toBeUndefined();

    const history = await runCliJson<{
      events: Array<{ type: string; actor: { actor: string; email?: string }; operator?: string }>;
    }>(['audit', 'operation', operationID, ...data]);
    const entry = history.events.find((e) => e.type === 'OperationApproved')!;
    expect(entry.actor).toMatchObject({ actor: `user:${checkerID}`, email: distributor.checkerEmail });
    expect(entry.operator).toBe(operator);
    expect(history.events.find((e) => e.type === 'OperationRequested')!.operator).toBeUndefined();

    const human = await runCli(['audit', 'operation', operationID, ...data]);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(
      new RegExp(
        `OperationApproved\\s+${distributor.checkerEmail.replace(/[.]/g, '\\.')} \\(by ${operator} at the CLI\\)`,
      ),
    );
  }, 120_000);

  it("when a key is requested and approved through the CLI, then audit key shows each step's user and the operator who acted for them", async () => {
    const { keyID } = await runCliJson<{ keyID: string }>([
      'key',
      'request',
      '--as',
      distributor.makerEmail,
      '--label',
      'attributed',
      '--permissions',
      'read-balance',
      ...data,
    ]);
    await runCliJson(['key', 'approve', keyID, '--as', distributor.checkerEmail, ...data]);

    const key = await runCliJson<{
      lifecycle: Array<{ type: string; by: string; role: string; operator?: string; actor: { actor: string } }>;
    }>(['audit', 'key', keyID, ...data]);
    expect(key.lifecycle.map((e) => [e.type, e.by, e.role, e.operator])).toEqual([
      ['ApiKeyRequested', distributor.makerEmail, 'maker', operator],
      ['ApiKeyApproved', distributor.checkerEmail, 'checker', operator],
    ]);
    expect(key.lifecycle[1]!.actor.actor).toBe(`user:${checkerID}`);

    const human = await runCli(['audit', 'key', keyID, ...data]);
    expect(human.stdout).toContain(`${distributor.checkerEmail} (by ${operator} at the CLI)`);
  }, 120_000);

  it('when the operator acts on their own (break-glass user add), then the actor is the operator and so is the operator field', async () => {
    const { userID } = await runCliJson<{ userID: string }>([
      'user',
      'add',
      '--party',
      `distributor:${distributor.ref.id}`,
      '--email',
      'glass@test.example',
      '--password',
      'break glass 123',
      '--roles',
      'maker',
      ...data,
    ]);
    const [added] = await sys.system.stores.eventStore.readStream(streams.user(userID));
    expect(added!.metadata).toMatchObject({ actor: operator, operator });
  }, 120_000);
});

describe('wallet-ops projections status, as a person reads it', () => {
  let sys: TestSystem;

  beforeAll(async () => {
    sys = await startTestSystem({}, undefined, WITHOUT_EXECUTOR);
    await sys.party('distributor');
  }, 120_000);
  afterAll(async () => sys?.close());

  it("when asked beside a running server, then it prints each projection's position, head and lag, and the server's consumers with their states", async () => {
    const result = await runCli(['projections', 'status', '--server', sys.baseUrl, '--data-dir', sys.config.DATA_DIR]);

    expect(result.code, result.stderr).toBe(0);
    const [checkpoints, consumers] = result.stdout.split(`consumers of ${sys.baseUrl}:\n`);
    const rows = checkpoints!.trimEnd().split('\n');
    expect(rows.length).toBeGreaterThanOrEqual(5);
    for (const row of rows)
      expect(row).toMatch(/^\S+ +position +(\d+|-) {2}head \d+ {2}lag \d+\+? events, \d+(\.\d+)? s$/);
    expect(rows.map((row) => row.split(' ')[0])).toContain('balances');
    const states = consumers!.trimEnd().split('\n');
    // The states live in the server's memory: read from its /ready.
    expect(states).toContainEqual(expect.stringMatching(/^ {2}projection:balances +running *$/));
    for (const state of states) expect(state).toMatch(/^ {2}\S+ +\S+/);
  });

  it('when the server does not answer, then it still prints the checkpoints, and says the server did not answer', async () => {
    const result = await runCli([
      'projections',
      'status',
      '--server',
      'http://127.0.0.1:9',
      '--data-dir',
      sys.config.DATA_DIR,
    ]);

    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^balances +position /m);
    expect(result.stdout).toMatch(/^no live consumer states: http:\/\/127\.0\.0\.1:9 did not answer \(.+\)\n$/m);
  });
});
