import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSystem, call, waitFor, type TestSystem } from '../support/system.ts';
import { issue, operationOf, waitUntilSettled } from '../support/executor-system.ts';
import { assertLedgerMatchesProjections } from '../support/invariants.ts';
import { fillDisk, mountTmpfs } from '../support/tmpfs.ts';

/**
 * The disk fills up while an approval executes: the whole system (API, projections, executor) runs on a
 * small tmpfs. The process must stay up (an unhandled rejection would fail this test file), answer 503 to
 * what needs to write, and complete the approval once space is back. Mounting needs root: where it is
 * impossible, the test is skipped with the reason (SQLITE_FULL itself is covered for every adapter by
 * test/adapters/sqlite-faults.e2e.test.ts through max_page_count).
 */
let tmpfs: ReturnType<typeof mountTmpfs> = { mountPoint: undefined, skipReason: '', unmount() {} };
beforeAll(() => {
  tmpfs = mountTmpfs('wallet-ops-full-', '24m');
});
afterAll(() => tmpfs.unmount());

describe('disk full while an approval executes', () => {
  it("when the data directory's disk fills up, then the process stays up, creates answer 503 (never 500), and the approval completes once space is back", async (context) => {
    context.skip(!tmpfs.mountPoint, tmpfs.skipReason);
    const mountPoint = tmpfs.mountPoint!;
    const dataDir = join(mountPoint, 'data');
    let sys: TestSystem | undefined;
    try {
      sys = await startTestSystem({
        DATA_DIR: dataDir,
        LEDGER_LATENCY_MS: '500',
        EXECUTOR_LEASE_MS: '2000',
        EXECUTOR_SWEEP_INTERVAL_MS: '1000',
      });
      const distributor = await sys.party('distributor');
      const { apiKey } = await distributor.key();
      const phone = await sys.individual('+2348126100001');
      const subject = { system: sys.system, config: sys.config };
      expect((await waitUntilSettled(subject, await issue(subject, distributor.ref, '1000'))).status).toBe('completed');

      const operationID = await issue(subject, distributor.ref, '250');
      await waitFor(async () => (await operationOf(subject, operationID)).status === 'executing', 15_000);
      const filler = join(mountPoint, 'filler');
      fillDisk(filler);

      // Creates while full: each is either recorded (200: SQLite still had room in its write-ahead log) or
      // refused with a retryable 503, never a 500; with the disk full, the log soon cannot grow and they fail.
      const statuses: number[] = [];
      for (let i = 0; i < 300 && !statuses.includes(503); i++) {
        const response = await call(sys.baseUrl, 'POST', `/api/v1/distributors/${distributor.ref.id}/operations`, {
          apiKey,
          body: { operationType: 'cash-in', amount: '1.00', phoneTo: phone, memo: `while the disk is full, ${i}` },
        });
        statuses.push(response.status);
        if (response.status === 503)
          expect(response.body).toMatchObject({ type: '/problems/service-unavailable', status: 503 });
      }
      expect(
        statuses.filter((status) => status !== 200 && status !== 503),
        JSON.stringify(statuses),
      ).toEqual([]);
      expect(statuses).toContain(503);
      const health = await call(sys.baseUrl, 'GET', '/health');
      expect([200, 503]).toContain(health.status);

      rmSync(filler);
      expect((await waitUntilSettled(subject, operationID, 60_000)).status).toBe('completed');
      const after = await call(sys.baseUrl, 'POST', `/api/v1/distributors/${distributor.ref.id}/operations`, {
        apiKey,
        body: { operationType: 'cash-in', amount: '1.00', phoneTo: phone },
      });
      expect(after.status).toBe(200);
      await assertLedgerMatchesProjections(subject, { timeoutMs: 60_000 });
    } finally {
      await sys?.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000);
});
