import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanupsAfterEach } from '../support/cleanups.ts';
import { loadConfig } from '../../src/config.ts';
import { onPostgres, testStoreEnv } from '../support/test-stores.ts';
import { createLogger } from '../../src/logger.ts';
import { buildWalletOps, type WalletOps } from '../../src/wallet-ops.ts';
import { onboardParty } from '../../src/commands/back-office.ts';
import type { OperationCompleted, OperationExecutionStarted } from '../../src/domain/events.ts';
import type { PartyRef } from '../../src/domain/parties.ts';
import { Decimal } from '../../src/domain/money.ts';
import { streams } from '../../src/domain/streams.ts';
import {
  allEvents,
  allLedgerTransactions,
  assertLedgerMatchesProjections,
  type InvariantSubject,
} from '../support/invariants.ts';
import { issue } from '../support/executor-system.ts';
import { waitFor } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';
import {
  killAllChildren,
  running,
  spawnWalletOps,
  stopProcess,
  within,
  type WalletOpsProcess,
} from '../support/processes.ts';
import { onEvm, testLedgerEnv } from '../support/test-ledger.ts';

/**
 * Crash recovery and competing executors with real processes: `wallet-ops serve executor` on a data
 * directory that this process also opens (seeding operations, reading the ledger and the event store, and
 * running the projections for the invariants).
 *
 * Run by crash.e2e.test.ts on the embedded stores and ledger, by crash.on-postgres.e2e.test.ts on PostgreSQL, by crash.on-evm.e2e.test.ts on the EVM chain.
 */
export function executorCrashes(): void {
  type ExecutorProcess = WalletOpsProcess;
  const spawnExecutor = (dataDir: string, env: Record<string, string>) => spawnWalletOps(dataDir, ['executor'], env);

  /** A graceful stop (SIGTERM), which must end with exit code 0. */
  async function stop(p: ExecutorProcess): Promise<void> {
    if (!running(p)) return;
    const exit = await stopProcess(p);
    expect(exit, p.output()).toEqual({ code: 0, signal: null });
  }

  afterAll(killAllChildren);

  /**
   * On the EVM chain every operation is a real signed transaction, and on PostgreSQL every claim a round trip to the
   * server: fewer of them keep the suite within its time (the race of two executors shows within the first hundred;
   * `npm run soak` runs thousands).
   */
  const APPROVALS = onEvm() || onPostgres() ? 240 : 1000;

  /** No operation settling for this long is a stall (a stuck operation), whatever the machine's load. */
  const STALL_MS = 30_000;

  /** This process's view of a data directory: the stores, the ledger and the projections (no executor, no API). */
  async function observe(dataDir: string): Promise<{
    ops: WalletOps;
    subject: InvariantSubject & { system: WalletOps };
    distributor: (name?: string) => Promise<PartyRef>;
  }> {
    const config = loadConfig({
      DATA_DIR: dataDir,
      LOG_LEVEL: 'silent',
      ...(await testLedgerEnv(dataDir)),
      ...(await testStoreEnv(dataDir)),
    });
    const ops = await buildWalletOps(config, createLogger('silent'), undefined, ['projections']);
    let code = 700_000 + Math.floor(Math.random() * 100_000);
    return {
      ops,
      subject: { system: ops, config },
      async distributor(name = 'Crash Distributor') {
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

  async function operationEvents(ops: WalletOps, operationID: string) {
    return ops.stores.eventStore.readStream(streams.operation(operationID));
  }

  describe('executor crash recovery (real processes)', () => {
    const cleanups = cleanupsAfterEach();

    async function crashScenario(restartEnv: Record<string, string>, crashEnv: Record<string, string>) {
      const dir = tempDir('wallet-ops-crash-');
      cleanups.push(() => dir.cleanup());
      const { ops, subject, distributor } = await observe(dir.path);
      cleanups.push(() => ops.close());
      const to = await distributor();
      const operationID = await issue(subject, to, '250');

      // The executor dies (SIGKILL) right after the ledger committed the transaction.
      const crashing = spawnExecutor(dir.path, { ...crashEnv, LEDGER_CRASH_AFTER_ACCEPT: 'true' });
      const crash = await within(crashing.exited, 20_000, 'the crashing executor to die');
      expect(crash, crashing.output()).toEqual({ code: null, signal: 'SIGKILL' });

      const accepted = await ops.ledger.findByOperationID(operationID);
      expect(accepted).not.toBeNull();
      expect((await operationEvents(ops, operationID)).map((e) => e.type)).toEqual([
        'OperationRequested',
        'OperationApproved',
        'OperationExecutionStarted',
      ]);
      expect(await allEvents(ops.stores.eventStore, ['OperationCompleted'])).toEqual([]);

      // Restarted without the crash flag: it recovers from the ledger instead of paying twice.
      const restarted = spawnExecutor(dir.path, restartEnv);
      cleanups.push(() => stop(restarted));
      await waitFor(
        async () => (await operationEvents(ops, operationID)).some((e) => e.type === 'OperationCompleted'),
        20_000,
      );

      const ledgerTxs = await allLedgerTransactions(ops.ledger);
      expect(ledgerTxs).toEqual([accepted]);
      const completions = (await allEvents(ops.stores.eventStore, ['OperationCompleted'])) as unknown as Array<
        OperationCompleted & { metadata: { actor?: string } }
      >;
      expect(completions).toHaveLength(1);
      expect(completions[0]!.data).toMatchObject({
        operationID,
        blockchainID: accepted!.blockchainID,
        sequenceNumber: accepted!.sequenceNumber,
      });
      expect(completions[0]!.metadata.actor).toBe(`system:executor:${restartEnv.EXECUTOR_ID}`);

      const claims = (await operationEvents(ops, operationID))
        .filter((e) => e.type === 'OperationExecutionStarted')
        .map((e) => (e as unknown as OperationExecutionStarted).data);
      expect(claims.map((c) => [c.executorID, c.attempt])).toEqual([
        [crashEnv.EXECUTOR_ID, 1],
        [restartEnv.EXECUTOR_ID, 2],
      ]);

      await stop(restarted);
      await assertLedgerMatchesProjections(subject);
      expect(new Decimal(await ops.ledger.balance(`distributor:${to.id}`)).toFixed(2)).toBe('250.00');
      return { claims };
    }

    it('crash right after the ledger accepted; restarted with the same EXECUTOR_ID: one ledger transaction, one OperationCompleted', async () => {
      await crashScenario({ EXECUTOR_ID: 'crash-1' }, { EXECUTOR_ID: 'crash-1' });
    }, 60_000);

    it('crash right after the ledger accepted; another executor takes over once the 500 ms lease has run out', async () => {
      const { claims } = await crashScenario(
        { EXECUTOR_ID: 'crash-2', EXECUTOR_LEASE_MS: '500' },
        { EXECUTOR_ID: 'crash-1', EXECUTOR_LEASE_MS: '500' },
      );
      // The takeover came after the first claim's lease.
      expect(Date.parse(claims[1]!.startedAt)).toBeGreaterThanOrEqual(Date.parse(claims[0]!.leaseUntil));
    }, 60_000);

    it(`${APPROVALS} approvals with two executor processes at once: exactly ${APPROVALS} ledger transactions and ${APPROVALS} OperationCompleted`, async () => {
      const N = APPROVALS;
      const dir = tempDir('wallet-ops-race-');
      cleanups.push(() => dir.cleanup());
      const { ops, subject, distributor } = await observe(dir.path);
      cleanups.push(() => ops.close());
      const distributors = await Promise.all([
        distributor('Race A'),
        distributor('Race B'),
        distributor('Race C'),
        distributor('Race D'),
      ]);

      const executors = [
        spawnExecutor(dir.path, { EXECUTOR_ID: 'race-1', EXECUTOR_LEASE_MS: '2000' }),
        spawnExecutor(dir.path, { EXECUTOR_ID: 'race-2', EXECUTOR_LEASE_MS: '2000' }),
      ];
      for (const executor of executors) cleanups.push(() => stop(executor));
      const seeded: string[] = [];
      const seedOne = async () =>
        seeded.push(await issue(subject, distributors[seeded.length % distributors.length]!, '1.00'));
      const claimants = async () =>
        new Set(
          (await allEvents(ops.stores.eventStore, ['OperationExecutionStarted'])).map(
            (e) => (e as unknown as OperationExecutionStarted).data.executorID,
          ),
        );

      // Approvals trickle in until both executors have claimed something (so both are up and following, however
      // long a loaded machine takes to start them), then the rest arrive at once, 50 appends in flight at a time.
      while (seeded.length < N / 2 && (await claimants()).size < 2) {
        await seedOne();
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const trickled = seeded.length;
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
      expect(new Set(seeded).size).toBe(N);

      // Bounded by progress, not by the clock: it fails only when no operation settles for a long while (a stall).
      const completedCount = async () => (await allEvents(ops.stores.eventStore, ['OperationCompleted'])).length;
      let last = -1;
      let lastProgress = Date.now();
      for (let count = await completedCount(); count < N; count = await completedCount()) {
        for (const executor of executors)
          expect(running(executor), `an executor died: ${executor.output()}`).toBe(true);
        if (count > last) [last, lastProgress] = [count, Date.now()];
        if (Date.now() - lastProgress > STALL_MS) {
          const done = new Set(
            (await allEvents(ops.stores.eventStore, ['OperationCompleted'])).map(
              (e) => (e.data as { operationID: string }).operationID,
            ),
          );
          const stuck = await Promise.all(
            seeded
              .filter((id) => !done.has(id))
              .slice(0, 3)
              .map(async (id) => ({
                id,
                events: (await operationEvents(ops, id)).map((e) => e.type),
                ledger: await ops.ledger.findByOperationID(id),
              })),
          );
          throw new Error(
            `stalled at ${count} of ${N} completed; e.g. ${JSON.stringify(stuck)}\n${executors
              .map((e) => e.output())
              .join('\n')
              .slice(-5000)}`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      // No more come: a late duplicate would show up here.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      await Promise.all(executors.map(stop));

      const completions = (await allEvents(ops.stores.eventStore, ['OperationCompleted'])) as unknown as Array<
        OperationCompleted & { metadata: { actor?: string } }
      >;
      expect(completions).toHaveLength(N);
      expect(new Set(completions.map((c) => c.data.operationID))).toEqual(new Set(seeded));
      expect(await allEvents(ops.stores.eventStore, ['OperationFailed'])).toEqual([]);
      const ledgerTxs = await allLedgerTransactions(ops.ledger);
      expect(ledgerTxs).toHaveLength(N);
      expect(new Set(ledgerTxs.map((tx) => tx.operationID))).toEqual(new Set(seeded));
      const byActor = new Map<string, number>();
      for (const c of completions)
        byActor.set(c.metadata.actor ?? '?', (byActor.get(c.metadata.actor ?? '?') ?? 0) + 1);
      console.log(
        `completions by executor (${trickled} approvals trickled in before the burst):`,
        Object.fromEntries(byActor),
      );
      // Both processes were up and claiming, whatever share each got.
      expect(await claimants()).toEqual(new Set(['race-1', 'race-2']));
      expect(trickled).toBeLessThan(N);

      await assertLedgerMatchesProjections(subject, { timeoutMs: 30_000 });
      for (const d of distributors)
        expect(new Decimal(await ops.ledger.balance(`distributor:${d.id}`)).toFixed(2)).toBe(
          (N / distributors.length).toFixed(2),
        );
    }, 300_000);
  });
}
