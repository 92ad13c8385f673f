import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanupsAfterEach } from '../support/cleanups.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { buildWalletOps, type WalletOps } from '../../src/wallet-ops.ts';
import { onboardParty } from '../../src/commands/back-office.ts';
import type { PartyRef } from '../../src/domain/parties.ts';
import {
  allEvents,
  allLedgerTransactions,
  assertLedgerMatchesProjections,
  type InvariantSubject,
} from '../support/invariants.ts';
import { issue, operationOf } from '../support/executor-system.ts';
import { waitFor } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';
import {
  freePort,
  prepareWriteLock,
  killAllChildren,
  killLockers,
  running,
  spawnWalletOps,
  stopProcess,
} from '../support/processes.ts';
import { onEvm, testLedgerEnv } from '../support/test-ledger.ts';

/** On the EVM chain every operation is a real signed transaction: fewer of them keep the suite within its time.
 *
 * Run by faults.e2e.test.ts on the embedded stores and ledger, by faults.on-evm.e2e.test.ts on the EVM chain.
 */
export function executorUnderFaults(): void {
  const APPROVALS = onEvm() ? 240 : 1000;
  /** The lock test's STORE_BUSY_BUDGET_MS for the server: the lock is held for twice as long. */
  const BUSY_BUDGET_MS = 3000;

  /**
   * The executor on its worst day, with real processes: `wallet-ops serve` in a child process on a data
   * directory that this process also opens (to seed approved operations and to check the outcome), while
   * another process locks the event store, or every store fails at random.
   */

  afterAll(async () => {
    killLockers();
    await killAllChildren();
  });

  /** This process's view of the data directory: stores and ledger only (the child runs projections and executor). */
  async function observe(dataDir: string): Promise<{
    ops: WalletOps;
    subject: InvariantSubject & { system: WalletOps };
    distributor: (name: string) => Promise<PartyRef>;
  }> {
    const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', ...(await testLedgerEnv(dataDir)) });
    const ops = await buildWalletOps(config, createLogger('silent'), undefined, []);
    let code = 800_000 + Math.floor(Math.random() * 100_000);
    return {
      ops,
      subject: { system: ops, config },
      async distributor(name) {
        const backOffice = { store: ops.stores.eventStore, clock: () => new Date(), assetScale: config.ASSET_SCALE };
        const { partyID } = await onboardParty(
          backOffice,
          { partyType: 'distributor', name, shortCode: String(code++) },
          { actor: 'operator:test', correlationId: randomUUID() },
        );
        return { type: 'distributor', id: partyID };
      },
    };
  }

  const settled = async (ops: WalletOps, ids: string[]) =>
    (await Promise.all(ids.map((id) => operationOf({ system: ops, config: { ASSET_SCALE: 2 } }, id)))).every(
      (s) => s.status === 'completed' || s.status === 'failed',
    );

  /** GET /health, timed. */
  async function probeHealth(baseUrl: string): Promise<{ status: number; ms: number }> {
    const started = performance.now();
    try {
      const response = await fetch(`${baseUrl}/health`, { signal: AbortSignal.timeout(5000) });
      await response.arrayBuffer();
      return { status: response.status, ms: performance.now() - started };
    } catch {
      return { status: 0, ms: performance.now() - started };
    }
  }

  describe('executor under store faults (real processes)', () => {
    const cleanups = cleanupsAfterEach();

    it('given three approvals executing, when another process locks events.sqlite past every retry and busy timeout and then releases it, then all three settle without a restart, the ledger and the events agree, and /health answered as promptly as unlocked throughout', async (context) => {
      const dir = tempDir('wallet-ops-lock-');
      cleanups.push(() => dir.cleanup());
      const { ops, subject, distributor } = await observe(dir.path);
      cleanups.push(() => ops.close());
      const port = await freePort();
      // The stores' busy budget at 3 s (10 s by default): what matters is that the lock outlasts it, not by how much.
      const server = spawnWalletOps(dir.path, [], {
        PORT: String(port),
        LEDGER_LATENCY_MS: '2000',
        EXECUTOR_LEASE_MS: '2000',
        EXECUTOR_SWEEP_INTERVAL_MS: '1000',
        STORE_BUSY_BUDGET_MS: String(BUSY_BUDGET_MS),
      });
      cleanups.push(() => stopProcess(server));
      const baseUrl = `http://127.0.0.1:${port}`;
      await waitFor(async () => (await probeHealth(baseUrl)).status === 200, 60_000);

      // /health as this machine answers it now, unlocked: what the probes under the lock are compared with.
      const unlocked: number[] = [];
      for (let i = 0; i < 20; i++) unlocked.push((await probeHealth(baseUrl)).ms);
      const unlockedP95 = unlocked.sort((a, b) => a - b)[Math.floor(unlocked.length * 0.95)]!;
      const locker = await prepareWriteLock(join(dir.path, 'events.sqlite'));
      const to = await distributor('Lock Distributor');
      const ids = [await issue(subject, to, '10'), await issue(subject, to, '20'), await issue(subject, to, '30')];
      // Every one claimed: the ledger is working on them (2 s each) when the lock comes, so their outcomes
      // cannot be recorded.
      await waitFor(
        async () =>
          (await Promise.all(ids.map((id) => operationOf(subject, id)))).every((s) => s.status === 'executing'),
        30_000,
      );
      await locker.lock();
      const probes: Array<{ status: number; ms: number }> = [];
      // Held for twice the stores' busy budget: appends fail, and are retried by the executor.
      const lockedUntil = Date.now() + 2 * BUSY_BUDGET_MS;
      while (Date.now() < lockedUntil) {
        probes.push(await probeHealth(baseUrl));
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      expect(await settled(ops, ids), 'nothing can be recorded while the store is locked').toBe(false);
      await locker.release();

      await waitFor(() => settled(ops, ids), 60_000);
      expect(running(server), server.output()).toBe(true);
      expect(probes.length).toBeGreaterThan(50);
      expect(
        probes.filter((p) => p.status !== 200 && p.status !== 503),
        'every probe answered',
      ).toEqual([]);
      // The lock never stands in /health's way: a probe blocked by it would wait the busy budget (3 s here). So the
      // bounds are far below that and far above what a busy 2-core machine's scheduler adds (a p95 of 111 ms was seen
      // with three test files running beside it): within 250 ms, or 4x the unlocked p95 of the same run; the slowest
      // within half the budget.
      const times = probes.map((p) => p.ms).sort((a, b) => a - b);
      const p95 = times[Math.floor(times.length * 0.95)]!;
      await context.annotate(
        `/health during the lock: ${probes.length} probes, p50 ${times[Math.floor(times.length / 2)]!.toFixed(1)} ms, p95 ${p95.toFixed(1)} ms, max ${times.at(-1)!.toFixed(1)} ms; unlocked p95 ${unlockedP95.toFixed(1)} ms`,
      );
      expect(p95, 'p95 of /health during the lock (ms)').toBeLessThan(Math.max(250, 4 * unlockedP95));
      expect(times.at(-1)!, 'the slowest /health during the lock (ms)').toBeLessThan(BUSY_BUDGET_MS / 2);

      for (const id of ids) expect((await operationOf(subject, id)).status).toBe('completed');
      const ledger = (await allLedgerTransactions(ops.ledger)).filter((tx) => ids.includes(tx.operationID));
      expect(ledger.map((tx) => tx.operationID).sort()).toEqual([...ids].sort());
      expect((await allEvents(ops.stores.eventStore, ['OperationCompleted'])).length).toBe(3);
      await assertLedgerMatchesProjections(subject, { timeoutMs: 60_000 });
      expect((await stopProcess(server)).code).toBe(0);
    }, 180_000);

    it(`given 10% transient errors injected on every port, when ${APPROVALS} approvals arrive, then each settles exactly once and nothing stays approved`, async () => {
      const N = APPROVALS;
      const dir = tempDir('wallet-ops-flaky-');
      cleanups.push(() => dir.cleanup());
      const { ops, subject, distributor } = await observe(dir.path);
      cleanups.push(() => ops.close());
      const faults = {
        FAULT_EVENT_STORE_ERROR_RATE: '0.1',
        FAULT_READ_STORE_ERROR_RATE: '0.1',
        FAULT_LEDGER_ERROR_RATE: '0.1',
      };
      // Generous attempts: with 10% errors everywhere an operation may need several; none should run out. Waits
      // between them of at most 1 s (5 s by default), and a failed consumer back within 10-200 ms (100 ms to 10 s by
      // default): what is tested is that each settles once, not the schedule.
      const executor = spawnWalletOps(dir.path, ['projections', 'executor'], {
        ...faults,
        EXECUTOR_MAX_ATTEMPTS: '30',
        EXECUTOR_RETRY_MAX_MS: '1000',
        EXECUTOR_LEASE_MS: '2000',
        EXECUTOR_SWEEP_INTERVAL_MS: '2000',
        CONSUMER_RETRY_BASE_MS: '10',
        CONSUMER_RETRY_MAX_MS: '200',
        LOG_LEVEL: 'warn',
      });
      cleanups.push(() => stopProcess(executor));

      const distributors = await Promise.all(['Flaky A', 'Flaky B', 'Flaky C', 'Flaky D'].map(distributor));
      const seeded: string[] = [];
      while (seeded.length < N) {
        const batch = Math.min(50, N - seeded.length);
        seeded.push(
          ...(await Promise.all(
            Array.from({ length: batch }, (_, i) =>
              issue(subject, distributors[(seeded.length + i) % distributors.length]!, '1.00'),
            ),
          )),
        );
      }

      // Bounded by progress: fails only if nothing settles for 60 s.
      const outcomes = async () =>
        (await allEvents(ops.stores.eventStore, ['OperationCompleted', 'OperationFailed'])).length;
      let last = -1;
      let lastProgress = Date.now();
      for (let count = await outcomes(); count < N; count = await outcomes()) {
        expect(running(executor), executor.output()).toBe(true);
        if (count > last) [last, lastProgress] = [count, Date.now()];
        if (Date.now() - lastProgress > 60_000) throw new Error(`stalled at ${count} of ${N} settled`);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect((await stopProcess(executor)).code).toBe(0);
      // The faults were real: the process logged each one it recovered from.
      const injected = executor.output().match(/\(injected\)/g)?.length ?? 0;
      expect(injected).toBeGreaterThan(100);
      console.log(`${injected} injected faults logged while ${N} approvals settled`);

      const completions = await allEvents(ops.stores.eventStore, ['OperationCompleted']);
      const failures = await allEvents(ops.stores.eventStore, ['OperationFailed']);
      expect(failures.map((f) => f.data)).toEqual([]);
      expect(completions).toHaveLength(N);
      expect(new Set(completions.map((c) => (c.data as { operationID: string }).operationID))).toEqual(new Set(seeded));
      const ledger = await allLedgerTransactions(ops.ledger);
      expect(ledger).toHaveLength(N);
      expect(new Set(ledger.map((tx) => tx.operationID))).toEqual(new Set(seeded));
      for (const id of seeded.slice(0, 50)) expect((await operationOf(subject, id)).status).toBe('completed');

      // Without faults, the projections catch up and agree with the ledger.
      const clean = spawnWalletOps(dir.path, ['projections'], {});
      cleanups.push(() => stopProcess(clean));
      await assertLedgerMatchesProjections(subject, { timeoutMs: 120_000 });
    }, 600_000);
  });
}
