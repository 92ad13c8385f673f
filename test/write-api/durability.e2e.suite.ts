import { afterAll, expect, it } from 'vitest';
import { streams } from '../../src/domain/streams.ts';
import { freePort, killAllChildren, spawnWalletOps, within } from '../support/processes.ts';
import { seedPayingDistributor, startTestSystem, waitFor } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';

/**
 * A create is on disk before its 200: `wallet-ops serve write-api` in a child process takes creates 32 at a time
 * (so that they share group commits), and is killed with SIGKILL the moment a response arrives. Every
 * operation that was answered 200 must then be in the event store, with its hold: the answer never runs
 * ahead of the commit, whatever the batching.
 *
 * Run by durability.e2e.test.ts on the embedded stores and ledger, by durability.on-postgres.e2e.test.ts on PostgreSQL.
 */
export function durabilityEndToEnd(): void {
  afterAll(killAllChildren);

  const IN_FLIGHT = 32;

  it('when the server is killed (-9) right after answering creates, then every operation answered 200 exists, with its hold', async () => {
    const dir = tempDir('wallet-ops-durability-');
    // Given a distributor with a key and money, made in this process, which then lets go of the files
    const { distributor, apiKey, phone } = await seedPayingDistributor(dir.path, '+2348127100001');

    const port = await freePort();
    const server = spawnWalletOps(dir.path, ['write-api'], { PORT: String(port), HOST: '127.0.0.1' });
    const url = `http://127.0.0.1:${port}/api/v1/distributors/${distributor.ref.id}/operations`;
    await waitFor(
      async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.status === 200,
      30_000,
    );

    // When creates stream in, and the process is killed the moment the 100th answer arrives
    const answered: string[] = [];
    let killed = false;
    const create = async (): Promise<void> => {
      while (!killed) {
        const response = await fetch(url, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ operationType: 'cash-in', amount: '1', phoneTo: phone }),
        }).catch(() => null);
        if (response === null) return; // the process is gone
        if (response.status !== 200) throw new Error(`unexpected ${response.status}: ${await response.text()}`);
        const { operationID } = (await response.json()) as { operationID: string };
        if (killed) return;
        answered.push(operationID);
        if (answered.length >= 100) {
          killed = true;
          server.child.kill('SIGKILL');
        }
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, create));
    expect(await within(server.exited, 10_000, 'the killed server to exit')).toEqual({ code: null, signal: 'SIGKILL' });

    // Then each answered operation is in the history, with the payer's hold appended in the same commit
    const after = await startTestSystem({ DATA_DIR: dir.path }, undefined, []);
    try {
      const wallet = await after.system.stores.eventStore.readStream(streams.wallet(distributor.wallet));
      const held = new Set(
        wallet
          .filter((event) => event.type === 'FundsHeld')
          .map((event) => (event.data as { operationID: string }).operationID),
      );
      for (const operationID of answered) {
        const events = await after.system.stores.eventStore.readStream(streams.operation(operationID));
        expect(
          events.map((event) => event.type),
          operationID,
        ).toEqual(['OperationRequested']);
        expect(held.has(operationID), operationID).toBe(true);
      }
      expect(answered.length).toBeGreaterThanOrEqual(100);
    } finally {
      await after.close();
      dir.cleanup();
    }
  }, 90_000);
}
