import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEventStore } from '../../src/adapters/open-stores.ts';
import { loadConfig } from '../../src/config.ts';
import type { RecordedEvent } from '../../src/ports/event-store.ts';
import { runCli, runCliJson } from '../support/cli.ts';
import { tempDir } from '../support/temp-dir.ts';

// User administration with the operator CLI (run in this process, test/support/cli.ts) on one data directory:
// break-glass `user add` at once; every widening as an access request that another administrator approves.

/** A half of a temporary password standing alone in a text (not a piece of a uuid or a word). */
const HALF = /(^|[^0-9a-z-])[2-9a-z]{4}-[2-9a-z]{4}([^0-9a-z-]|$)/;
describe('wallet-ops user and access', { timeout: 180_000 }, () => {
  const dir = tempDir();
  const data = ['--data-dir', dir.path];
  let distributorID: string;
  let party: string;

  async function events(streamPrefix: string): Promise<RecordedEvent[]> {
    const store = await openEventStore({ ...loadConfig({ DATA_DIR: dir.path, LOG_LEVEL: 'silent' }) });
    try {
      return await store.readAll({ filter: { streamPrefixes: [streamPrefix] } });
    } finally {
      await store.close();
    }
  }

  beforeAll(async () => {
    ({ distributorID } = await runCliJson<{ distributorID: string }>([
      'party',
      'add-distributor',
      '--name',
      'Acme Agents',
      '--short-code',
      '1001',
      ...data,
    ]));
    party = `distributor:${distributorID}`;
    await Promise.all([
      runCliJson([
        'user',
        'add',
        '--platform-admin',
        '--email',
        'one@platform.test',
        '--password',
        'admin password 1',
        ...data,
      ]),
      runCliJson([
        'user',
        'add',
        '--platform-admin',
        '--email',
        'two@platform.test',
        '--password',
        'admin password 2',
        ...data,
      ]),
      runCliJson([
        'user',
        'add',
        '--party',
        party,
        '--email',
        'maker@acme.test',
        '--password',
        'maker password 1',
        '--roles',
        'maker',
        ...data,
      ]),
    ]);
  });
  afterAll(() => dir.cleanup());

  it('when the operator adds a user, then it takes effect at once and is recorded as an operator action', async () => {
    const added = (await events('user-')).filter((e) => e.type === 'UserAdded');
    expect(added).toHaveLength(3);
    for (const event of added) {
      expect(event.metadata.actor).toMatch(/^operator:/);
      expect(event.data).toMatchObject({ mustChangePassword: false });
    }
  });

  it('when one administrator requests a checker, then they cannot approve it; the other can, and each administrator collects one half of the temporary password', async () => {
    const { requestID } = await runCliJson<{ requestID: string }>([
      'user',
      'request-add',
      '--party',
      party,
      '--email',
      'checker@acme.test',
      '--roles',
      'checker',
      '--reason',
      'new supervisor',
      '--as',
      'one@platform.test',
      ...data,
    ]);
    expect(requestID).toMatch(/^acr_[0-9a-f]{32}$/);

    const alone = await runCli(['access', 'approve', requestID, '--as', 'one@platform.test', '--json', ...data]);
    expect(alone.code).toBe(1);
    expect(alone.stderr).toMatch(/SAME_USER.*cannot also approve it/);
    const before = await runCliJson<{ parties: Array<{ users: Array<{ email: string }> }> }>([
      'user',
      'list',
      '--party',
      party,
      ...data,
    ]);
    expect(before.parties[0]!.users.map((u) => u.email)).toEqual(['maker@acme.test']);
    // A user who does not exist yet can approve nothing.
    expect(
      (
        await runCli([
          'key',
          'request',
          '--as',
          'checker@acme.test',
          '--label',
          'x',
          '--permissions',
          'read-balance',
          ...data,
        ])
      ).code,
    ).toBe(1);

    const pending = await runCliJson<Array<{ requestID: string; description: string; requestedByEmail: string }>>([
      'access',
      'list',
      '--status',
      'pending',
      ...data,
    ]);
    expect(pending).toEqual([
      expect.objectContaining({
        requestID,
        description: 'Add checker@acme.test as checker of Acme Agents (distributor 1001)',
        requestedByEmail: 'one@platform.test',
      }),
    ]);

    const approval = await runCli(['access', 'approve', requestID, '--as', 'two@platform.test', '--json', ...data]);
    expect(JSON.parse(approval.stdout)).toMatchObject({
      status: 'approved',
      email: 'checker@acme.test',
      temporaryPasswordHalves: { first: 'one@platform.test', second: 'two@platform.test' },
    });
    expect(approval.stdout).not.toMatch(HALF);
    // Split knowledge: each administrator collects their own half, once; neither can collect the other's.
    const second = await runCliJson<{ half: string; value: string; email: string }>([
      'access',
      'password-half',
      requestID,
      '--as',
      'two@platform.test',
      ...data,
    ]);
    expect(second).toMatchObject({
      half: 'second',
      email: 'checker@acme.test',
      value: expect.stringMatching(/^[2-9a-z]{4}-[2-9a-z]{4}$/),
    });
    expect(
      (await runCli(['access', 'password-half', requestID, '--as', 'two@platform.test', '--json', ...data])).code,
    ).toBe(1);
    const first = await runCliJson<{ half: string; value: string }>([
      'access',
      'password-half',
      requestID,
      '--as',
      'one@platform.test',
      ...data,
    ]);
    expect(first).toMatchObject({ half: 'first', value: expect.stringMatching(/^[2-9a-z]{4}-[2-9a-z]{4}$/) });
    expect(first.value).not.toBe(second.value);
    expect(approval.stdout).not.toContain(first.value);
    expect(approval.stdout).not.toContain(second.value);
    const list = await runCliJson<{
      administrators: Array<{ email: string }>;
      parties: Array<{ users: Array<{ email: string; roles: string[]; mustChangePassword: boolean }> }>;
    }>(['user', 'list', ...data]);
    expect(list.administrators.map((u) => u.email)).toEqual(['one@platform.test', 'two@platform.test']);
    expect(list.parties[0]!.users).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ email: 'checker@acme.test', roles: ['checker'], mustChangePassword: true }),
      ]),
    );
    expect(JSON.stringify(list)).not.toMatch(/scrypt|passwordHash/);

    // The approval and the new user are one atomic append, by the second administrator, at the CLI.
    const approved = (await events('accessRequest-')).find((e) => e.type === 'AccessRequestApproved')!;
    const user = (await events('user-')).find(
      (e) => e.type === 'UserAdded' && (e.data as { email: string }).email === 'checker@acme.test',
    )!;
    expect(user.metadata.correlationId).toBe(approved.metadata.correlationId);
    expect(user.metadata.actor).toBe(`user:${(approved.data as { approvedBy: string }).approvedBy}`);
    expect(user.data).toMatchObject({ mustChangePassword: true });
  });

  it('when an administrator disables a user, then it is at once, the user can no longer act, and enabling them is a request', async () => {
    expect(
      await runCliJson([
        'user',
        'disable',
        'maker@acme.test',
        '--reason',
        'left the company',
        '--as',
        'one@platform.test',
        ...data,
      ]),
    ).toMatchObject({ email: 'maker@acme.test', status: 'disabled' });
    const refused = await runCli([
      'key',
      'request',
      '--as',
      'maker@acme.test',
      '--label',
      'x',
      '--permissions',
      'read-balance',
      '--json',
      ...data,
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/disabled/);

    const { requestID } = await runCliJson<{ requestID: string }>([
      'user',
      'enable',
      'maker@acme.test',
      '--as',
      'one@platform.test',
      ...data,
    ]);
    expect(
      await runCliJson([
        'access',
        'reject',
        requestID,
        '--reason',
        'not coming back',
        '--as',
        'two@platform.test',
        ...data,
      ]),
    ).toMatchObject({ requestID, status: 'rejected' });
    const rejected = await runCliJson<
      Array<{ requestID: string; status: string; rejectionReason: string; decidedByEmail: string }>
    >(['access', 'list', '--status', 'rejected', ...data]);
    expect(rejected).toEqual([
      expect.objectContaining({ requestID, rejectionReason: 'not coming back', decidedByEmail: 'two@platform.test' }),
    ]);
    const list = await runCliJson<{ parties: Array<{ users: Array<{ email: string; status: string }> }> }>([
      'user',
      'list',
      '--party',
      party,
      ...data,
    ]);
    expect(list.parties[0]!.users.find((u) => u.email === 'maker@acme.test')?.status).toBe('disabled');
  });

  it('when a role is requested, then it waits for the other administrator; removing one is at once; a reset prints no password to its approver', async () => {
    const { requestID } = await runCliJson<{ requestID: string }>([
      'user',
      'add-role',
      'checker@acme.test',
      '--role',
      'maker',
      '--as',
      'two@platform.test',
      ...data,
    ]);
    expect((await runCli(['access', 'approve', requestID, '--as', 'two@platform.test', ...data])).code).toBe(1);
    expect(await runCliJson(['access', 'approve', requestID, '--as', 'one@platform.test', ...data])).not.toHaveProperty(
      'temporaryPassword',
    );
    expect(
      await runCliJson([
        'user',
        'remove-role',
        'checker@acme.test',
        '--role',
        'checker',
        '--as',
        'one@platform.test',
        ...data,
      ]),
    ).toMatchObject({ role: 'checker' });
    const last = await runCli([
      'user',
      'remove-role',
      'checker@acme.test',
      '--role',
      'maker',
      '--as',
      'one@platform.test',
      '--json',
      ...data,
    ]);
    expect(last.code).toBe(1);
    expect(last.stderr).toMatch(/disable the user instead/);

    const reset = await runCliJson<{ requestID: string }>([
      'user',
      'reset-password',
      'checker@acme.test',
      '--as',
      'one@platform.test',
      ...data,
    ]);
    const human = await runCli(['access', 'approve', reset.requestID, '--as', 'two@platform.test', ...data]);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(
      `first half:  wallet-ops access password-half ${reset.requestID} --as one@platform.test`,
    );
    expect(human.stdout).toContain(
      `second half: wallet-ops access password-half ${reset.requestID} --as two@platform.test`,
    );
    expect(human.stdout).not.toMatch(HALF);
  });

  it('when the users and the access requests are listed without --json, then each is a line a person reads', async () => {
    const acme = [
      `distributor 1001 Acme Agents (${distributorID})`,
      '  checker@acme.test                maker           active (temporary password)',
      '  maker@acme.test                  maker           disabled',
    ];
    const users = await runCli(['user', 'list', ...data]);
    expect(users.stdout.trimEnd().split('\n')).toEqual([
      'platform administrators',
      '  one@platform.test                administrator   active',
      '  two@platform.test                administrator   active',
      ...acme,
    ]);
    expect((await runCli(['user', 'list', '--party', party, ...data])).stdout.trimEnd().split('\n')).toEqual(acme);
    const requests = (await runCli(['access', 'list', ...data])).stdout.trimEnd().split('\n');
    expect(requests.map((line) => line.replace(/^acr_[0-9a-f]+ {2}/, ''))).toEqual([
      'approved Reset the password of checker@acme.test  (by one@platform.test; approved by two@platform.test)',
      'approved Give checker@acme.test the maker role  (by two@platform.test; approved by one@platform.test)',
      'rejected Enable maker@acme.test  (by one@platform.test; rejected by two@platform.test)',
      'approved Add checker@acme.test as checker of Acme Agents (distributor 1001)  (by one@platform.test; approved ' +
        'by two@platform.test)',
    ]);
  });

  it('when the arguments are wrong, then the CLI exits 2', async () => {
    expect(
      (await runCli(['user', 'request-add', '--email', 'x@y.test', '--as', 'one@platform.test', ...data])).code,
    ).toBe(2);
    expect((await runCli(['access', 'list', '--status', 'maybe', ...data])).code).toBe(2);
  });
});
