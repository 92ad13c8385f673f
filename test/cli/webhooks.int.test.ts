import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runCliJson } from '../support/cli.ts';
import { tempDir } from '../support/temp-dir.ts';

/** `wallet-ops webhook`: the endpoint lifecycle under maker-checker, each command run in this process (test/support/cli.ts). */
describe('wallet-ops webhook', () => {
  const dir = tempDir();
  const data = ['--data-dir', dir.path];
  let party: string;

  beforeAll(async () => {
    const { merchantID } = await runCliJson<{ merchantID: string }>([
      'party',
      'add-merchant',
      '--name',
      'Hook Shop',
      '--short-code',
      '7001',
      ...data,
    ]);
    party = `merchant:${merchantID}`;
    await runCliJson([
      'user',
      'add',
      '--party',
      party,
      '--email',
      'maker@hooks.test',
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
      party,
      '--email',
      'checker@hooks.test',
      '--password',
      'correct horse 2',
      '--roles',
      'checker',
      ...data,
    ]);
  }, 60_000);
  afterAll(() => dir.cleanup());

  const add = (url: string, events = 'operation.completed,payment.received', env?: Record<string, string>) =>
    runCliJson<{ endpointID: string }>(
      ['webhook', 'add', '--as', 'maker@hooks.test', '--url', url, '--events', events, ...data],
      env,
    );

  it('when a maker adds and a checker approves, then the checker sees no secret, the maker collects it once, and list shows the endpoint active without it', async () => {
    const { endpointID } = await add('https://shop.example/hooks');
    expect(endpointID).toMatch(/^whe_/);
    const pending = await runCliJson<Array<Record<string, unknown>>>(['webhook', 'list', '--party', party, ...data]);
    expect(pending.find((e) => e.id === endpointID)).toMatchObject({
      status: 'pending',
      url: 'https://shop.example/hooks',
      eventTypes: ['operation.completed', 'payment.received'],
    });

    const approval = await runCli(['webhook', 'approve', endpointID, '--as', 'checker@hooks.test', '--json', ...data]);
    expect(JSON.parse(approval.stdout)).toEqual({ endpointID, status: 'active', secretHeldFor: 'maker@hooks.test' });
    expect(approval.stdout).not.toContain('whsec_');
    expect(
      (await runCli(['webhook', 'secret', endpointID, '--as', 'checker@hooks.test', '--json', ...data])).code,
    ).toBe(1);
    const { secret, endpointID: collected } = await runCliJson<{ endpointID: string; secret: string }>([
      'webhook',
      'secret',
      endpointID,
      '--as',
      'maker@hooks.test',
      ...data,
    ]);
    expect(collected).toBe(endpointID);
    expect(secret).toMatch(/^whsec_/);
    expect((await runCli(['webhook', 'secret', endpointID, '--as', 'maker@hooks.test', '--json', ...data])).code).toBe(
      1,
    );
    const list = await runCli(['webhook', 'list', '--party', party, '--json', ...data]);
    expect(list.stdout).not.toContain(secret.slice(6));
    expect((JSON.parse(list.stdout) as Array<Record<string, unknown>>).find((e) => e.id === endpointID)).toMatchObject({
      status: 'active',
      decidedBy: expect.any(String),
    });

    const again = await runCli(['webhook', 'approve', endpointID, '--as', 'checker@hooks.test', '--json', ...data]);
    expect(again.code).toBe(1);
    expect(again.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('when the maker approves their own endpoint, then it is refused with exit 1', async () => {
    const { endpointID } = await add('https://shop.example/own');
    const result = await runCli(['webhook', 'approve', endpointID, '--as', 'maker@hooks.test', '--json', ...data]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/checker/);
  });

  it('when a checker rejects, or a maker disables an active endpoint, then list says so', async () => {
    const rejected = await add('https://shop.example/rejected');
    await runCliJson([
      'webhook',
      'reject',
      rejected.endpointID,
      '--as',
      'checker@hooks.test',
      '--reason',
      'not ours',
      ...data,
    ]);
    const active = await add('https://shop.example/disabled');
    await runCliJson(['webhook', 'approve', active.endpointID, '--as', 'checker@hooks.test', ...data]);
    await runCliJson([
      'webhook',
      'disable',
      active.endpointID,
      '--as',
      'maker@hooks.test',
      '--reason',
      'moved',
      ...data,
    ]);
    const list = await runCliJson<Array<Record<string, unknown>>>(['webhook', 'list', '--party', party, ...data]);
    expect(list.find((e) => e.id === rejected.endpointID)).toMatchObject({ status: 'rejected', reason: 'not ours' });
    expect(list.find((e) => e.id === active.endpointID)).toMatchObject({
      status: 'disabled',
      reason: 'moved',
      disabledBy: expect.stringMatching(/^[0-9a-f-]{36}$/),
      disabledByEmail: 'maker@hooks.test',
    });
  });

  it('when a person approves and lists without --json, then approve says who collects the secret, and list shows a line per endpoint with its status, URL, events and why it was disabled', async () => {
    const { endpointID } = await add('https://shop.example/for-people', 'operation.completed');
    const approval = await runCli(['webhook', 'approve', endpointID, '--as', 'checker@hooks.test', ...data]);
    await runCliJson(['webhook', 'disable', endpointID, '--as', 'checker@hooks.test', '--reason', 'paused', ...data]);
    const pending = await add('https://shop.example/later', 'payment.received');

    const list = await runCli(['webhook', 'list', '--party', party, ...data]);

    expect(approval).toEqual({
      code: 0,
      stdout:
        `webhook endpoint approved: ${endpointID}\nits signing secret waits for maker@hooks.test, who collects it ` +
        `once with: wallet-ops webhook secret ${endpointID} --as maker@hooks.test\n`,
      stderr: '',
    });
    const lines = list.stdout.split('\n');
    expect(lines).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^${endpointID} {2}disabled https://shop\\.example/for-people {2}\\[operation\\.completed\\] {2}disabled ` +
            'by checker@hooks\\.test: paused$',
        ),
      ),
    );
    expect(lines).toContain(`${pending.endpointID}  pending  https://shop.example/later  [payment.received]`);
  });

  it('when a party has no endpoint, then a person reading the list is told so', async () => {
    const { merchantID } = await runCliJson<{ merchantID: string }>([
      'party',
      'add-merchant',
      '--name',
      'Quiet Shop',
      '--short-code',
      '7002',
      ...data,
    ]);

    const list = await runCli(['webhook', 'list', '--party', `merchant:${merchantID}`, ...data]);

    expect(list).toEqual({ code: 0, stdout: '(no webhook endpoints)\n', stderr: '' });
  });

  it('when an endpoint has sent nothing yet, then its delivery log says none; a limit out of range is a usage error', async () => {
    const { endpointID } = await add('https://shop.example/quiet');
    const log = await runCli(['webhook', 'deliveries', endpointID, ...data]);
    expect({ code: log.code, stdout: log.stdout }).toEqual({ code: 0, stdout: `0 deliveries to ${endpointID}\n` });
    expect((await runCli(['webhook', 'deliveries', endpointID, '--limit', '0', ...data])).code).toBe(2);
  });

  it('when the URL is http://127.0.0.1, then it is refused, naming WEBHOOK_ALLOW_INSECURE_LOCALHOST, unless that is true', async () => {
    const refused = await runCli([
      'webhook',
      'add',
      '--as',
      'maker@hooks.test',
      '--url',
      'http://127.0.0.1:9/h',
      '--events',
      'operation.failed',
      '--json',
      ...data,
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /must use https; http:\/\/ to 127\.0\.0\.1 is accepted only where the operator sets WEBHOOK_ALLOW_INSECURE_LOCALHOST=true/,
    );
    await expect(
      add('http://127.0.0.1:9/h', 'operation.failed', { WEBHOOK_ALLOW_INSECURE_LOCALHOST: 'true' }),
    ).resolves.toMatchObject({ endpointID: expect.stringMatching(/^whe_/) });
  });

  it('when an event type is unknown, then it is refused naming the known ones', async () => {
    const result = await runCli([
      'webhook',
      'add',
      '--as',
      'maker@hooks.test',
      '--url',
      'https://shop.example/h',
      '--events',
      'operation.created',
      '--json',
      ...data,
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/unknown event type/);
  });
});
