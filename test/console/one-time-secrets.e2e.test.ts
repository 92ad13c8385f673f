import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { findUserByEmail, onboardParty, requestApiKey } from '../../src/commands/back-office.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { buildWalletOps } from '../../src/wallet-ops.ts';
import { freePort, killAllChildren, spawnWalletOps, stopProcess, type WalletOpsProcess } from '../support/processes.ts';
import { call, waitFor } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';
import { ConsoleClient, extraUser, OTHER_PASSWORD } from './console-client.ts';

/**
 * One-time secrets that survive: an approved key's secret waits for its maker in the shared read store,
 * encrypted, so that a restart does not lose it and two server processes on the same data reveal it once.
 * Real processes (`wallet-ops serve`) on one data directory; this process only seeds the party and its users.
 */
afterAll(async () => {
  await killAllChildren();
});

async function startServer(dataDir: string, env: Record<string, string> = {}): Promise<{ process: WalletOpsProcess; baseUrl: string }> {
  const port = await freePort();
  const child = spawnWalletOps(dataDir, [], { PORT: String(port), ...env });
  const baseUrl = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${baseUrl}/health`).catch(() => null))?.status === 200, 60_000).catch((error: unknown) => {
    throw new Error(`wallet-ops did not start: ${String(error)}\n${child.output()}`);
  });
  return { process: child, baseUrl };
}

/** This process's view of the data: a party with a maker and a checker, and a key the maker requested. */
async function seed(dataDir: string): Promise<{ partyID: string; makerEmail: string; checkerEmail: string; keyID: string }> {
  const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' });
  const ops = await buildWalletOps(config, createLogger('silent'), undefined, []);
  try {
    const backOffice = { store: ops.stores.eventStore, clock: () => new Date(), assetScale: config.ASSET_SCALE };
    const shortCode = String(600_000 + Math.floor(Math.random() * 100_000));
    const { partyID } = await onboardParty(backOffice, { partyType: 'distributor', name: 'Secret Agents', shortCode }, { actor: 'operator:test', correlationId: randomUUID() });
    const party = { type: 'distributor' as const, id: partyID };
    const makerEmail = await extraUser(backOffice, party, ['maker'], 'secret-maker');
    const checkerEmail = await extraUser(backOffice, party, ['checker'], 'secret-checker');
    const maker = await findUserByEmail(backOffice, makerEmail);
    const { keyID } = await requestApiKey(backOffice, maker, { label: 'survives', permissions: 'read-balance' }, 'test');
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

const secretIn = (text: string, keyID: string) => new RegExp(`value="(${keyID}\\.[A-Za-z0-9_-]{43})"`).exec(text)?.[1];

/** Every file of the data directory's read store (the database, its WAL and shared memory). */
const readStoreBytes = (dataDir: string) =>
  Buffer.concat(readdirSync(dataDir).filter((name) => name.startsWith('read-models.sqlite')).map((name) => readFileSync(join(dataDir, name))));

describe('one-time secrets across a restart and two processes', () => {
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('given a key approved in the console, when the server restarts before the maker looks and the maker then opens pages on two servers at once, then the secret is shown exactly once, works against the API, and is stored only encrypted under an owner-only key file', async () => {
    const dir = tempDir('wallet-ops-secrets-');
    cleanups.push(() => dir.cleanup());
    const first = await startServer(dir.path);
    cleanups.push(() => stopProcess(first.process));
    const { partyID, makerEmail, checkerEmail, keyID } = await seed(dir.path);

    await approveInConsole(first.baseUrl, checkerEmail, keyID);
    expect((await stopProcess(first.process)).code).toBe(0);

    const restarted = await startServer(dir.path);
    cleanups.push(() => stopProcess(restarted.process));
    const other = await startServer(dir.path);
    cleanups.push(() => stopProcess(other.process));

    const browsers = [await makerOn(restarted.baseUrl, makerEmail), await makerOn(other.baseUrl, makerEmail), await makerOn(restarted.baseUrl, makerEmail), await makerOn(other.baseUrl, makerEmail)];
    const pages = await Promise.all(browsers.map((browser) => browser.get('/console/keys?tab=active')));
    expect(pages.map((page) => page.status)).toEqual([200, 200, 200, 200]);
    const shown = pages.map((page) => secretIn(page.text, keyID)).filter((secret): secret is string => secret !== undefined);
    expect(shown).toHaveLength(1);
    const secret = shown[0]!;
    expect((await call(other.baseUrl, 'GET', `/api/v1/distributors/${partyID}/balance`, { apiKey: secret })).status).toBe(200);

    const again = await Promise.all(browsers.map((browser) => browser.get('/console/keys?tab=active')));
    for (const page of again) expect(page.text).not.toContain(secret);

    const keyFile = join(dir.path, 'secrets.key');
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(Buffer.from(readFileSync(keyFile, 'utf8').trim(), 'base64')).toHaveLength(32);
    expect(readStoreBytes(dir.path).includes(Buffer.from(secret.split('.')[1]!))).toBe(false);
    expect(`${restarted.process.output()}${other.process.output()}`).not.toContain(secret.split('.')[1]!);
  }, 180_000);
});
