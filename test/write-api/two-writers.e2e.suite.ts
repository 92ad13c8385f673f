import { afterAll, expect, it } from 'vitest';
import { freePort, killAllChildren, spawnWalletOps, stopProcess } from '../support/processes.ts';
import { seedPayingDistributor, waitFor } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';

/**
 * Several write-api processes on one store are the documented way to scale creates: they must answer as one
 * does. Two `wallet-ops serve write-api` processes on one data directory take creates from 8 connections at
 * once, all on one payer's wallet and one key (the worst case: every create of both processes decides on the
 * same streams). The lock that serializes a wallet's decisions is per process, so the processes do conflict
 * in the store; a conflict is decided again from the newer state, with a backoff, until a deadline: at most
 * 1% of the creates may end as 409 concurrency-conflict (16.6% did with a fixed count of 8 immediate retries).
 *
 * Run by two-writers.e2e.test.ts on the embedded stores and ledger, by two-writers.on-postgres.e2e.test.ts on PostgreSQL.
 */
export function twoWritersEndToEnd(): void {
  afterAll(killAllChildren);

  const CONNECTIONS = 8;
  const CREATES = 480;

  it('given two write-api processes on one store, when 8 connections create operations on one wallet through both, then at most 1% end in a concurrency conflict and every other create succeeds', async () => {
    const dir = tempDir('wallet-ops-two-writers-');
    const { distributor, apiKey, phone } = await seedPayingDistributor(dir.path, '+2348127100002');

    const ports = [await freePort(), await freePort()];
    const servers = ports.map((port) =>
      spawnWalletOps(dir.path, ['write-api'], { PORT: String(port), HOST: '127.0.0.1' }),
    );
    try {
      for (const port of ports)
        await waitFor(
          async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.status === 200,
          30_000,
        );

      const outcomes = new Map<string, number>();
      let next = 0;
      const connection = async (index: number): Promise<void> => {
        const url = `http://127.0.0.1:${ports[index % 2]}/api/v1/distributors/${distributor.ref.id}/operations`;
        while (next < CREATES) {
          next += 1;
          const response = await fetch(url, {
            method: 'POST',
            headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
            body: JSON.stringify({ operationType: 'cash-in', amount: '1', phoneTo: phone }),
          });
          const body = (await response.json()) as { type?: string };
          const outcome = response.status === 200 ? '200' : `${response.status} ${body.type ?? ''}`;
          outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
        }
      };
      await Promise.all(Array.from({ length: CONNECTIONS }, (_, index) => connection(index)));

      const total = [...outcomes.values()].reduce((a, b) => a + b, 0);
      const conflicts = [...outcomes]
        .filter(([outcome]) => outcome.startsWith('409'))
        .reduce((sum, [, count]) => sum + count, 0);
      expect(total).toBe(CREATES);
      expect(conflicts, JSON.stringify(Object.fromEntries(outcomes))).toBeLessThanOrEqual(CREATES * 0.01);
      expect(outcomes.get('200'), JSON.stringify(Object.fromEntries(outcomes))).toBe(CREATES - conflicts);
    } finally {
      for (const server of servers) await stopProcess(server);
      dir.cleanup();
    }
  }, 180_000);
}
