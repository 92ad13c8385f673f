/**
 * A store that fails its own integrity checks is reported as corrupted and not served: once a read (a
 * request's, or a consumer's such as the balances view's seed) meets the damage, requests answer 503 /problems/store-corrupted, and from then on /health fails with "corrupted"
 * (an orchestrator restarts the process, which then refuses to start on a damaged event store) and every API
 * request answers the same problem. The damage: bit flips in the balances pages of a closed read-models.sqlite
 * (its events.sqlite twin is in test/adapters/sqlite-corruption.e2e.test.ts and test/cli/audit-corruption.int.test.ts).
 */
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { StoreCorruptedError } from '../../src/ports/store-corrupted.ts';
import { buildWalletOps } from '../../src/wallet-ops.ts';
import { flipBytes, tablePages } from '../support/corrupt-sqlite.ts';
import { call, startTestSystem, waitFor, type TestSystem } from '../support/system.ts';
import { testLedgerEnv } from '../support/test-ledger.ts';
import { tempDir } from '../support/temp-dir.ts';

describe('a corrupted store', () => {
  const dir = tempDir();
  let sys: TestSystem | undefined;
  let path: string;
  let apiKey: string;

  beforeAll(async () => {
    const first = await startTestSystem({ DATA_DIR: dir.path });
    const party = await first.party('distributor');
    ({ apiKey } = await party.key());
    await first.credit(party.wallet, '250');
    path = `/api/v1/distributors/${party.ref.id}/balance`;
    await waitFor(async () => (await call(first.baseUrl, 'GET', path, { apiKey })).body?.balance === '250.00');
    await first.close();
    const file = join(dir.path, 'read-models.sqlite');
    const { pageSize, pages } = tablePages(file, 'balances');
    for (const page of pages) flipBytes(file, (page - 1) * pageSize + (page === 1 ? 100 : 0), 8);
    // The API alone: its balances view seeds itself from the balances at start, and meets the damage.
    sys = await startTestSystem({ DATA_DIR: dir.path }, undefined, ['write-api', 'read-api']);
  });
  afterAll(async () => {
    await sys?.close();
    dir.cleanup();
  });

  it('given damaged balances pages, when the read API\'s balances view is seeded from them, then a balance read answers 503 /problems/store-corrupted naming the file, and /health fails with "corrupted"', async () => {
    // Found by a consumer (the view's seed), not by a request: the process refuses to serve as soon as it is.
    await waitFor(async () => (await call(sys!.baseUrl, 'GET', '/health')).status === 503);

    const read = await call(sys!.baseUrl, 'GET', path, { apiKey });
    expect(read.status, JSON.stringify(read.body)).toBe(503);
    expect(read.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(read.body).toMatchObject({ type: '/problems/store-corrupted', status: 503, title: 'Store Corrupted' });
    expect(read.body.detail).toContain('read-models.sqlite');
    expect(read.headers.get('retry-after')).toBeNull();

    const health = await call(sys!.baseUrl, 'GET', '/health');
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({
      status: 'corrupted',
      corrupted: { store: 'read-models.sqlite', reason: expect.stringMatching(/SQLITE_CORRUPT/) },
    });
  });

  it('given a store found corrupted, when any API request comes, then it is refused with the same problem rather than served around the damage', async () => {
    const other = await call(sys!.baseUrl, 'GET', path.replace('/balance', '/operations'), { apiKey });
    expect(other.status).toBe(503);
    expect(other.body.type).toBe('/problems/store-corrupted');
  });

  it('given an events.sqlite with damaged pages, when the system is built on it, then it refuses to start with StoreCorruptedError', async () => {
    const damaged = tempDir();
    try {
      copyFileSync(join(dir.path, 'events.sqlite'), join(damaged.path, 'events.sqlite'));
      const file = join(damaged.path, 'events.sqlite');
      const { pageSize, pages } = tablePages(file, 'events');
      for (const page of pages) flipBytes(file, (page - 1) * pageSize + (page === 1 ? 100 : 0), 8);
      const config = loadConfig({
        DATA_DIR: damaged.path,
        LOG_LEVEL: 'silent',
        ...(await testLedgerEnv(damaged.path)),
      });
      await expect(buildWalletOps(config, createLogger('silent'))).rejects.toBeInstanceOf(StoreCorruptedError);
    } finally {
      damaged.cleanup();
    }
  });
});
