import { randomUUID } from 'node:crypto';
import { cpSync, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultSecretsKeyFile } from '../../src/adapters/secrets-key-file.ts';
import { approveApiKey, collectCredential, findUserByEmail, requestApiKey } from '../../src/commands/back-office.ts';
import { approveAccessRequest, requestAccessChange } from '../../src/commands/user-admin.ts';
import { approveWebhookEndpoint, requestWebhookEndpoint } from '../../src/commands/webhooks.ts';
import type { WebhookEndpointApproved } from '../../src/domain/events.ts';
import { streams } from '../../src/domain/streams.ts';
import { openWebhookSecret } from '../../src/domain/webhook-secrets.ts';
import { extraUser } from '../console/console-client.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';
import { webhookDeps } from '../support/webhooks.ts';

/**
 * Issue 40: the embedded secrets key lives beside DATA_DIR, not in it, so a copy of the data directory (a backup,
 * a stolen disk image) holds the sealed credentials and nothing that opens them.
 */
const context = () => ({ actor: 'operator:test', correlationId: randomUUID() });

/** Every file under a directory, with its path. */
const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((name) => join(dir, name))
    .filter((path) => statSync(path).isFile());

describe('a copy of DATA_DIR alone', { timeout: 120_000 }, () => {
  const dirs: Array<ReturnType<typeof tempDir>> = [];
  const systems: TestSystem[] = [];
  afterEach(async () => {
    await Promise.all(systems.splice(0).map((sys) => sys.close()));
    dirs.splice(0).forEach((dir) => dir.cleanup());
  });
  const on = async (dataDir: string) => {
    const sys = await startTestSystem({ DATA_DIR: dataDir });
    systems.push(sys);
    return sys;
  };

  it('given an API key secret, a webhook signing secret and both halves of a temporary password sealed and waiting, when DATA_DIR is copied and a system starts on the copy with default settings, then none of them opens; the original still opens them all', async () => {
    const original = tempDir('wallet-ops-original-');
    const copy = tempDir('wallet-ops-copy-');
    dirs.push(original, copy);

    const sys = await on(original.path);
    const dist = await sys.party('distributor');
    const maker = await findUserByEmail(sys.backOffice, dist.makerEmail);
    const checker = await findUserByEmail(sys.backOffice, dist.checkerEmail);
    const { keyID } = await requestApiKey(
      sys.backOffice,
      maker,
      { label: 'sealed', permissions: 'read-balance' },
      randomUUID(),
    );
    await approveApiKey(sys.backOffice, checker, keyID, randomUUID());
    const { endpointID } = await requestWebhookEndpoint(
      webhookDeps(sys),
      maker,
      { url: 'http://127.0.0.1:9/hook', eventTypes: ['operation.completed'] },
      randomUUID(),
    );
    await approveWebhookEndpoint(webhookDeps(sys), checker, endpointID, randomUUID());
    const adminA = await findUserByEmail(sys.backOffice, await extraUser(sys.backOffice, null, [], 'copy-admin-a'));
    const adminB = await findUserByEmail(sys.backOffice, await extraUser(sys.backOffice, null, [], 'copy-admin-b'));
    const { requestID } = await requestAccessChange(
      sys.backOffice,
      adminA,
      { kind: 'reset-password', userID: maker.userID },
      'routine',
      context(),
    );
    await approveAccessRequest(sys.backOffice, adminB, requestID, context());
    const key = readFileSync(defaultSecretsKeyFile(original.path), 'utf8').trim();
    systems.splice(0);
    await sys.close();

    cpSync(original.path, copy.path, { recursive: true });
    // Not in the copy, in any form: neither the key file nor its bytes inside another file.
    const copied = filesUnder(copy.path);
    expect(copied.length).toBeGreaterThan(0);
    expect(copied.filter((path) => path.endsWith('secrets.key'))).toEqual([]);
    for (const path of copied) {
      const bytes = readFileSync(path);
      expect(bytes.includes(Buffer.from(key)), path).toBe(false);
      expect(bytes.includes(Buffer.from(key, 'base64')), path).toBe(false);
    }
    expect(existsSync(defaultSecretsKeyFile(copy.path))).toBe(false);

    const thief = await on(copy.path);
    const sealed = async (on: TestSystem) => {
      const [approval] = (await on.system.stores.eventStore.readStream(streams.webhookEndpoint(endpointID))).filter(
        (e) => e.type === 'WebhookEndpointApproved',
      );
      return (approval!.data as WebhookEndpointApproved['data']).secret;
    };
    // The copy has a key of its own now (the default made one beside it), and it opens nothing sealed before.
    expect(readFileSync(defaultSecretsKeyFile(copy.path), 'utf8').trim()).not.toBe(key);
    expect(
      openWebhookSecret(
        Buffer.from(readFileSync(defaultSecretsKeyFile(copy.path), 'utf8').trim(), 'base64'),
        endpointID,
        await sealed(thief),
      ),
    ).toBeNull();
    const collectOn = async (on: TestSystem) => {
      const user = (email: string) => findUserByEmail(on.backOffice, email);
      const makerThere = await user(dist.makerEmail);
      return Promise.allSettled([
        collectCredential(on.backOffice, makerThere, { kind: 'api-key', id: keyID }),
        collectCredential(on.backOffice, makerThere, { kind: 'webhook-endpoint', id: endpointID }),
        collectCredential(on.backOffice, await user(adminA.email), { kind: 'password-half', id: requestID }),
        collectCredential(on.backOffice, await user(adminB.email), { kind: 'password-half', id: requestID }),
      ]);
    };
    const stolen = await collectOn(thief);
    expect(stolen.map((result) => result.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
    for (const result of stolen) expect((result as PromiseRejectedResult).reason).toMatchObject({ code: 'NOT_FOUND' });

    // The sealed data was in the copy all along: with the key kept apart, the original opens every one of them.
    expect(openWebhookSecret(Buffer.from(key, 'base64'), endpointID, await sealed(thief))).toMatch(/^whsec_/);
    const owner = await on(original.path);
    const collected = await collectOn(owner);
    expect(collected.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
  });
});
