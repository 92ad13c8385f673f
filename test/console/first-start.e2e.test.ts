/**
 * A fresh system, as a newcomer finds it: its root leads to the console, and the console's login page says how to
 * create the first administrator (with the CLI's real syntax), until one exists.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addUser } from '../../src/commands/back-office.ts';
import { buildCli } from '../../src/cli/program.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';

describe('a system without users', () => {
  let sys: TestSystem;
  beforeAll(async () => {
    sys = await startTestSystem();
  });
  afterAll(() => sys?.close());

  it('when / is asked for, then it redirects to the console', async () => {
    const response = await fetch(`${sys.baseUrl}/`, { redirect: 'manual' });

    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/console/');
  });

  it('when the login page is opened, then it says how to create the first administrator, until one exists', async () => {
    const page = await (await fetch(`${sys.baseUrl}/console/login`)).text();

    expect(page).toContain('No administrator exists yet.');
    const command = /<code>(npx wallet-ops user add [^<]+)<\/code>/.exec(page)?.[1];
    expect(command).toBe(
      "npx wallet-ops user add --platform-admin --email you@example.com --password 'a long passphrase'",
    );
    // The command is the CLI's: each of its options is one `user add` takes.
    const userAdd = buildCli()
      .commands.find((c) => c.name() === 'user')!
      .commands.find((c) => c.name() === 'add')!;
    for (const option of command!.match(/--[a-z-]+/g)!) expect(userAdd.options.map((o) => o.long)).toContain(option);

    await addUser(
      sys.backOffice,
      {
        party: null,
        email: 'first.admin@test.example',
        password: 'first admin password',
        roles: [],
        platformAdmin: true,
      },
      { actor: 'operator:test', correlationId: randomUUID() },
    );
    expect(await (await fetch(`${sys.baseUrl}/console/login`)).text()).not.toContain('No administrator exists yet.');
  });
});
