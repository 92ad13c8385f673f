import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanupsAfterEach } from '../support/cleanups.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { buildWalletOps } from '../../src/wallet-ops.ts';
import { onboardParty } from '../../src/commands/back-office.ts';
import { streams } from '../../src/domain/streams.ts';
import { allLedgerTransactions, assertLedgerMatchesProjections } from '../support/invariants.ts';
import { issue, operationOf } from '../support/executor-system.ts';
import { waitFor } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';
import { runCli } from '../support/cli.ts';
import {
  freePort,
  killAllChildren,
  running,
  spawnWalletOps,
  stopProcess,
  type WalletOpsProcess,
} from '../support/processes.ts';
import { parsePrometheusText, sampleValue } from '../support/prometheus-text.ts';
import { onEvm, testLedgerEnv } from '../support/test-ledger.ts';
import { createPublicClient, decodeFunctionData, http } from 'viem';
import { walletLedgerAbi } from '../../src/adapters/evm/wallet-ledger-artifact.ts';

/**
 * A paused executor (issue 26, item 1): executor A stops itself (SIGSTOP, LEDGER_STOP_WHILE_HOLDING) while it
 * holds the ledger: on the embedded ledger inside its write transaction (the lock held, nothing committed), on
 * the chain with its transaction signed and not yet sent. Its leases run out; executor B, whose submits never
 * get through (LEDGER_TRANSIENT_FAILURE_RATE=1), takes every operation over, spends its attempts and gives up.
 * Then A resumes (SIGCONT) and its transaction commits, or goes to the chain. Whatever the order, every
 * operation ends completed or failed exactly once, as the ledger says: completed where the transaction
 * committed, failed only where the void did. Before voids, B read "no transaction" and recorded the operation
 * failed, and A's transaction then moved the money of a failed operation.
 *
 * Run by paused.e2e.test.ts on the embedded stores and ledger, by paused.on-evm.e2e.test.ts on the EVM chain.
 */
export function pausedExecutor(): void {
  const OPERATIONS = 3;
  const LEASE_MS = '1000';

  afterAll(killAllChildren);

  /** A process's state letter from /proc: T when stopped. */
  const processState = (pid: number) => readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0];

  async function stop(p: WalletOpsProcess): Promise<void> {
    if (!running(p)) return;
    const exit = await stopProcess(p);
    expect(exit, p.output()).toEqual({ code: 0, signal: null });
  }

  /** On the chain: the movements (not voids) for these operations mined from a block on, with their receipt's status. */
  async function movementsMinedFrom(
    rpcUrl: string,
    fromBlock: bigint,
    operationIDs: string[],
  ): Promise<Array<{ operationID: string; status: string }>> {
    const client = createPublicClient({ transport: http(rpcUrl) });
    const mined: Array<{ operationID: string; status: string }> = [];
    for (let n = fromBlock, last = await client.getBlockNumber(); n <= last; n++) {
      for (const tx of (await client.getBlock({ blockNumber: n, includeTransactions: true })).transactions) {
        let call;
        try {
          call = decodeFunctionData({ abi: walletLedgerAbi, data: tx.input });
        } catch {
          continue;
        }
        const operationID = (call.args as readonly unknown[] | undefined)?.[0];
        if (call.functionName === 'void' || typeof operationID !== 'string' || !operationIDs.includes(operationID))
          continue;
        mined.push({ operationID, status: (await client.getTransactionReceipt({ hash: tx.hash })).status });
      }
    }
    return mined;
  }

  /** Operations the executor of a process on this port carries and has not settled yet (its queue gauge). */
  async function queueDepth(port: number): Promise<number | undefined> {
    const response = await fetch(`http://127.0.0.1:${port}/metrics`).catch(() => undefined);
    if (!response?.ok) return undefined;
    return sampleValue(parsePrometheusText(await response.text()), 'wallet_ops_executor_queue_depth');
  }

  /** The operations B logged a failed give-up for (its void got no answer): JSON log lines of the retry. */
  function gaveUpOn(output: string): Set<string> {
    const ids = new Set<string>();
    for (const line of output.split('\n')) {
      if (!line.includes('"step":"give-up"')) continue;
      const id = /"operationID":"([^"]+)"/.exec(line)?.[1];
      if (id) ids.add(id);
    }
    return ids;
  }

  describe("an executor paused while it holds the ledger, past its lease and another executor's attempts", () => {
    const cleanups = cleanupsAfterEach();

    it('when it resumes, every operation is completed or failed exactly once, as the ledger decided; audit verify passes', async () => {
      const dir = tempDir('wallet-ops-paused-');
      cleanups.push(() => dir.cleanup());
      const config = loadConfig({ DATA_DIR: dir.path, LOG_LEVEL: 'silent', ...(await testLedgerEnv(dir.path)) });
      const ops = await buildWalletOps(config, createLogger('silent'), undefined, ['projections']);
      cleanups.push(() => ops.close());
      const subject = { system: ops, config };
      const backOffice = { store: ops.stores.eventStore, clock: () => new Date(), assetScale: config.ASSET_SCALE };
      const { partyID } = await onboardParty(
        backOffice,
        {
          partyType: 'distributor',
          name: 'Paused Distributor',
          shortCode: String(800_000 + Math.floor(Math.random() * 100_000)),
        },
        { actor: 'operator:test', correlationId: randomUUID() },
      );
      const seeded: string[] = [];
      for (let i = 0; i < OPERATIONS; i++)
        seeded.push(await issue(subject, { type: 'distributor', id: partyID }, '10'));

      // A takes the ledger and stops there.
      const [pausedPort, patientPort] = [await freePort(), await freePort()];
      const paused = spawnWalletOps(dir.path, ['executor'], {
        PORT: String(pausedPort),
        EXECUTOR_ID: 'paused-A',
        EXECUTOR_LEASE_MS: LEASE_MS,
        LEDGER_STOP_WHILE_HOLDING: 'true',
      });
      cleanups.push(() => stop(paused));
      cleanups.push(() => void (running(paused) && paused.child.kill('SIGCONT')));
      await waitFor(async () => processState(paused.child.pid!) === 'T', 30_000);
      for (const id of seeded) expect(await ops.ledger.fateOf(id)).toEqual({ kind: 'none' });

      // B takes over once A's leases ran out and spends its attempts: its submits never reach the ledger.
      const patient = spawnWalletOps(dir.path, ['executor'], {
        PORT: String(patientPort),
        EXECUTOR_ID: 'patient-B',
        EXECUTOR_LEASE_MS: LEASE_MS,
        EXECUTOR_MAX_ATTEMPTS: '2',
        EXECUTOR_RETRY_BASE_MS: '50',
        EXECUTOR_RETRY_MAX_MS: '200',
        EXECUTOR_SWEEP_INTERVAL_MS: '500',
        LEDGER_TRANSIENT_FAILURE_RATE: '1',
        // Its void waits this long on the embedded ledger A holds before it logs its give-up and tries again
        // (the default, 10 s, was most of this test's time); a chain has no lock to wait on.
        LEDGER_BUSY_BUDGET_MS: '300',
        LOG_LEVEL: 'warn',
      });
      cleanups.push(() => stop(patient));
      // B has given up on every operation: it failed it, or its void is waiting on the ledger A holds.
      await waitFor(async () => {
        const waiting = gaveUpOn(patient.output());
        const states = await Promise.all(seeded.map((id) => operationOf(subject, id)));
        return seeded.every((id, i) => states[i]!.status === 'failed' || waiting.has(id));
      }, 60_000);
      expect(processState(paused.child.pid!)).toBe('T');

      // A resumes: its transaction commits (or goes to the chain) after B gave up.
      const resumedAtBlock = onEvm()
        ? (await createPublicClient({ transport: http(config.EVM_RPC_URL!) }).getBlockNumber()) + 1n
        : 0n;
      paused.child.kill('SIGCONT');
      await waitFor(
        async () =>
          (await Promise.all(seeded.map((id) => operationOf(subject, id)))).every(
            (s) => s.status === 'completed' || s.status === 'failed',
          ),
        60_000,
      );
      // Anything A or B still had in flight lands (a late transaction, a second outcome): each executor has
      // settled every operation it carried, a pass waiting out a backoff or a lease included.
      await waitFor(async () => (await queueDepth(pausedPort)) === 0 && (await queueDepth(patientPort)) === 0, 30_000);
      await stop(paused);
      await stop(patient);

      const outcomes: Record<string, string> = {};
      for (const id of seeded) {
        const types = (await ops.stores.eventStore.readStream(streams.operation(id))).map((e) => e.type);
        const settled = types.filter((t) => t === 'OperationCompleted' || t === 'OperationFailed');
        expect(settled, `${id}: ${types.join(', ')}`).toHaveLength(1);
        const fate = await ops.ledger.fateOf(id);
        // The events say what the ledger says: completed where the transaction committed, failed only where the void did.
        expect(fate.kind, id).toBe(settled[0] === 'OperationCompleted' ? 'executed' : 'voided');
        outcomes[id] = settled[0]!;
      }
      const txs = await allLedgerTransactions(ops.ledger);
      expect(txs.map((tx) => tx.operationID).sort()).toEqual(
        seeded.filter((id) => outcomes[id] === 'OperationCompleted').sort(),
      );
      // On the embedded ledger A's held transaction committed before any void could (the lock): at least that one completed.
      if (!onEvm()) expect(txs.length).toBeGreaterThanOrEqual(1);
      if (onEvm()) {
        // On the chain B's voids were mined while A was stopped: A's transaction, mined after the give-up, reverted.
        const late = await movementsMinedFrom(config.EVM_RPC_URL!, resumedAtBlock, seeded);
        expect(late.length, JSON.stringify(late)).toBeGreaterThanOrEqual(1);
        for (const { operationID, status } of late)
          expect(status === 'reverted' || outcomes[operationID] === 'OperationCompleted', operationID).toBe(true);
      }
      await assertLedgerMatchesProjections(subject, { timeoutMs: 30_000 });
      const verify = await runCli(['audit', 'verify', '--json', '--data-dir', dir.path]);
      expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    }, 180_000);
  });
}
