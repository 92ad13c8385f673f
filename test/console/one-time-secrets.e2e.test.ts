import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultSecretsKeyFile } from '../../src/adapters/secrets-key-file.ts';
import { findUserByEmail, onboardParty, requestApiKey } from '../../src/commands/back-office.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { buildWalletOps, type Part } from '../../src/wallet-ops.ts';
import { call, startTestSystem, type TestSystem } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';
import { ConsoleClient, extraUser, OTHER_PASSWORD } from './console-client.ts';

/**
 * One-time secrets that survive: an approved key's secret waits for its maker in the shared read store,
 * encrypted, so that a restart does not lose it and two servers on the same data reveal it once. The servers
 * run in this process, each with stores of its own on one data directory, as two `wallet-ops serve` processes
 * would have (a process is needed only to crash one: test/http/shutdown.e2e.test.ts stops a real one).
 */

/** What a server runs for the console and the API (no executor, no webhooks: nothing here is executed or sent). */
const PARTS: readonly Part[] = ['write-api', 'read-api', 'projections'];

/** A server on the data directory, its every log line (debug and up) kept in `logs`. */
function startServer(dataDir: string, logs: string[]): Promise<TestSystem> {
  return startTestSystem({ DATA_DIR: dataDir, LOG_LEVEL: 'debug' }, undefined, PARTS, {
    logs: { write: (line: string) => void logs.push(line) },
  });
}

/** This process's view of the data: a party with a maker and a checker, and a key the maker requested. */
async function seed(
  dataDir: string,
): Promise<{ partyID: string; makerEmail: string; checkerEmail: string; keyID: string }> {
  const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' });
  const ops = await buildWalletOps(config, createLogger('silent'), undefined, []);
  try {
    const backOffice = { store: ops.stores.eventStore, clock: () => new Date(), assetScale: config.ASSET_SCALE };
    const shortCode = String(600_000 + Math.floor(Math.random() * 100_000));
    const { partyID } = await onboardParty(
      backOffice,
      { partyType: 'distributor', name: 'Secret Agents', shortCode },
      { actor: 'operator:test', correlationId: randomUUID() },
    );
    const party = { type: 'distributor' as const, id: partyID };
    const makerEmail = await extraUser(backOffice, party, ['maker'], 'secret-maker');
    const checkerEmail = await extraUser(backOffice, party, ['checker'], 'secret-checker');
    const maker = await findUserByEmail(backOffice, makerEmail);
    const { keyID } = await requestApiKey(
      backOffice,
      maker,
      { label: 'survives', permissions: 'read-balance' },
      'test',
    );
    return { partyID, makerEmail, checkerEmail, keyID };
  } finally {
    await ops.close();
  }
}

async function approveInConsole(baseUrl: string, checkerEmail: string, keyID: string): Promise<void> {
  const checker = new ConsoleClient(baseUrl);
  await checker.loginOk(checkerEmail, OTHER_PASSWORD);
  await checker.get('/console/keys');
  const approved = await checker.post(`/console/keys/${keyID}/approve`);
  expect(approved.status, approved.text).toBe(303);
  const view = await checker.get(approved.location!);
  expect(view.text).not.toContain(`${keyID}.`);
}

/** A maker's browser logged in on a server, without a page view yet (a page view would take the secret). */
async function makerOn(baseUrl: string, email: string): Promise<ConsoleClient> {
  const client = new ConsoleClient(baseUrl);
  const login = await client.login(email, OTHER_PASSWORD);
  expect(login.status, login.text).toBe(303);
  return client;
}

const secretIn = (text: string, keyID: string) =>
  new RegExp(`value="(wo_live_${keyID}\\.[A-Za-z0-9_-]{43})"`).exec(text)?.[1];

/** Every file of the data directory's read store (the database, its WAL and shared memory). */
const readStoreBytes = (dataDir: string) =>
  Buffer.concat(
    readdirSync(dataDir)
      .filter((name) => name.startsWith('read-models.sqlite'))
      .map((name) => readFileSync(join(dataDir, name))),
  );

describe('one-time secrets across a restart and two processes', () => {
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('given a key approved in the console, when the server restarts before the maker looks and the maker then opens pages on two servers at once, then the secret is shown exactly once, works against the API, and is stored only encrypted under an owner-only key file', async () => {
    const dir = tempDir('wallet-ops-secrets-');
    cleanups.push(() => dir.cleanup());
    const logs: string[] = [];
    const first = await startServer(dir.path, logs);
    let firstOpen = true;
    cleanups.push(() => firstOpen && first.close());
    const { partyID, makerEmail, checkerEmail, keyID } = await seed(dir.path);

    await approveInConsole(first.baseUrl, checkerEmail, keyID);
    await first.close();
    firstOpen = false;

    const restarted = await startServer(dir.path, logs);
    cleanups.push(() => restarted.close());
    const other = await startServer(dir.path, logs);
    cleanups.push(() => other.close());

    const browsers = [
      await makerOn(restarted.baseUrl, makerEmail),
      await makerOn(other.baseUrl, makerEmail),
      await makerOn(restarted.baseUrl, makerEmail),
      await makerOn(other.baseUrl, makerEmail),
    ];
    const pages = await Promise.all(browsers.map((browser) => browser.get('/console/keys?tab=active')));
    expect(pages.map((page) => page.status)).toEqual([200, 200, 200, 200]);
    const shown = pages
      .map((page) => secretIn(page.text, keyID))
      .filter((secret): secret is string => secret !== undefined);
    expect(shown).toHaveLength(1);
    const secret = shown[0]!;
    expect(
      (await call(other.baseUrl, 'GET', `/api/v1/distributors/${partyID}/balance`, { apiKey: secret })).status,
    ).toBe(200);

    const again = await Promise.all(browsers.map((browser) => browser.get('/console/keys?tab=active')));
    for (const page of again) expect(page.text).not.toContain(secret);

    const keyFile = defaultSecretsKeyFile(dir.path);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(Buffer.from(readFileSync(keyFile, 'utf8').trim(), 'base64')).toHaveLength(32);
    expect(readStoreBytes(dir.path).includes(Buffer.from(secret.split('.')[1]!))).toBe(false);
    // Nor in any log line of the three servers (which did log: the check is not vacuous).
    expect(logs.length).toBeGreaterThan(0);
    expect(logs.join('')).not.toContain(secret.split('.')[1]!);
  }, 180_000);
});
