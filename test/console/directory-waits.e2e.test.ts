/**
 * A console page that must show what another process wrote a moment ago waits for the directory's follower to
 * have it, and says so when the follower cannot get there in time, rather than show a page that is wrong.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addUser } from '../../src/commands/back-office.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';

describe('a console whose user directory cannot follow the store', { timeout: 30_000 }, () => {
  let sys: TestSystem;
  beforeAll(async () => {
    sys = await startTestSystem();
  });
  afterAll(() => sys?.close());

  it('when an administrator was added elsewhere and the login page is opened, then it answers 503 after the wait instead of claiming no administrator exists', async () => {
    expect(await (await fetch(`${sys.baseUrl}/console/login`)).text()).toContain('No administrator exists yet.');
    // The follower stops following (as when its reads keep failing); the store itself still answers.
    await sys.system.consumers.find(({ consumer }) => consumer.name === 'user-directory')!.consumer.stop();
    await addUser(
      sys.backOffice,
      { party: null, email: 'elsewhere@test.example', password: 'an admin password', roles: [], platformAdmin: true },
      { actor: 'operator:test', correlationId: randomUUID() },
    );

    const started = performance.now();
    const response = await fetch(`${sys.baseUrl}/console/login`);
    const page = await response.text();

    expect(response.status).toBe(503);
    expect(page).toContain('The console is still reading the latest changes. Try again in a moment.');
    expect(page).not.toContain('No administrator exists yet.');
    expect(performance.now() - started).toBeGreaterThanOrEqual(4_900);
  });
});
