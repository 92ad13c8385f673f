import { afterAll, expect, it } from 'vitest';
import { startPartsSystem } from '../support/executor-system.ts';
import { killAllChildren, running, spawnWalletOps, stopProcess, within } from '../support/processes.ts';
import { waitFor } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';
import { completedCashIn, payingDistributor, registerEndpoint } from '../support/webhooks.ts';
import { startWebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * kill -9 of the process that delivers webhooks, in the middle of a backlog: `wallet-ops serve webhooks` in a
 * child process on a data directory this process fills (operations created over HTTP, approved, executed).
 * The restarted process must deliver every event (at least once, in order), the one in flight at the kill again
 * with the same id.
 *
 * Run by delivery-crash.e2e.test.ts on the embedded stores and ledger, by delivery-crash.on-postgres.e2e.test.ts on PostgreSQL.
 */
export function deliveryCrashes(): void {
  afterAll(killAllChildren);

  const ENV = {
    WEBHOOK_ALLOW_INSECURE_LOCALHOST: 'true',
    WEBHOOK_RETRY_BASE_MS: '20',
    WEBHOOK_RETRY_MAX_MS: '200',
    WEBHOOK_POLL_INTERVAL_MS: '100',
    WEBHOOK_TIMEOUT_MS: '1000',
    WEBHOOK_LEASE_MS: '4000',
  };
  const BACKLOG = 10;

  it('when the delivering process is killed mid-backlog and restarted, then every event arrives, in order, the one in flight again with its id', async () => {
    const dir = tempDir('wallet-ops-webhook-crash-');
    const sys = await startPartsSystem({ ...ENV, DATA_DIR: dir.path }, ['write-api', 'read-api', 'projections']);
    const receiver = await startWebhookReceiver();
    try {
      const executor = await sys.startExecutor();
      const distributor = await payingDistributor(sys, '+2348126100001');
      await registerEndpoint(sys, distributor, receiver.url, ['operation.completed']);

      // Given a backlog of completed operations that no process has delivered yet
      const operations: string[] = [];
      for (let i = 0; i < BACKLOG; i++) operations.push(await completedCashIn(sys, distributor));
      await executor.stop();

      // When the receiver takes three, holds the fourth, and the delivering process is killed meanwhile
      receiver.respond((_request, index) => (index < 3 ? 200 : new Promise<number>(() => {})));
      const first = spawnWalletOps(dir.path, ['webhooks'], ENV);
      await receiver.waitForRequests(4, 60_000);
      first.child.kill('SIGKILL');
      expect(await within(first.exited, 10_000, 'the killed process to exit')).toEqual({
        code: null,
        signal: 'SIGKILL',
      });
      const inFlight = receiver.received[3]!.json.id;

      // Then a restarted process delivers the rest, once its dead predecessor's lease on the queue has run out. It
      // counts that lease on its own clock and with its own WEBHOOK_LEASE_MS: half the first one's (the first needed
      // a 1 s timeout, so that the kill finds a request in flight, and a lease is at least 4 timeouts).
      receiver.respond(() => 200);
      const second = spawnWalletOps(dir.path, ['webhooks'], {
        ...ENV,
        WEBHOOK_TIMEOUT_MS: '500',
        WEBHOOK_LEASE_MS: '2000',
      });
      try {
        await receiver.waitForRequests(BACKLOG + 1, 60_000);
        const arrived = receiver.received.map((r) => r.json.data.operation.operationID as string);
        expect([...new Set(arrived)]).toEqual(operations);
        const repeated = receiver
          .eventIDs()
          .filter((id) => receiver.received.filter((r) => r.json.id === id).length > 1);
        expect(repeated).toEqual([inFlight]);
      } finally {
        if (running(second)) expect(await stopProcess(second), second.output()).toEqual({ code: 0, signal: null });
      }
    } finally {
      await receiver.close();
      await sys.close();
      dir.cleanup();
    }
  }, 120_000);

  it('given transient errors injected on both stores of the delivering process, then every event still arrives, in order, and the process keeps running', async () => {
    const dir = tempDir('wallet-ops-webhook-faults-');
    const sys = await startPartsSystem({ ...ENV, DATA_DIR: dir.path }, ['write-api', 'read-api', 'projections']);
    const receiver = await startWebhookReceiver();
    try {
      const executor = await sys.startExecutor();
      const distributor = await payingDistributor(sys, '+2348126100002');
      await registerEndpoint(sys, distributor, receiver.url, ['operation.approved', 'operation.completed']);
      const operations: string[] = [];
      for (let i = 0; i < 20; i++) operations.push(await completedCashIn(sys, distributor));
      await executor.stop();

      // A fifth of the read store's calls and a tenth of the event store's fail (before or after writing). A beat
      // whose answer was lost is recognised as the process's own at its next look (endpoint-lease.ts), not waited
      // out; a short lease (four attempts' timeouts, the least allowed) and failed consumers back within 200 ms (10 s
      // by default) keep the test short.
      const faulty = spawnWalletOps(dir.path, ['webhooks'], {
        ...ENV,
        WEBHOOK_TIMEOUT_MS: '250',
        WEBHOOK_LEASE_MS: '1000',
        FAULT_READ_STORE_ERROR_RATE: '0.2',
        FAULT_EVENT_STORE_ERROR_RATE: '0.1',
        CONSUMER_RETRY_BASE_MS: '10',
        CONSUMER_RETRY_MAX_MS: '200',
        LOG_LEVEL: 'warn',
      });
      try {
        await waitFor(() => receiver.eventIDs().length >= 2 * operations.length, 90_000);
        const firstArrivals = receiver.eventIDs().map((id) => receiver.received.find((r) => r.json.id === id)!.json);
        expect(firstArrivals.map((e) => [e.data.operation.operationID, e.type])).toEqual(
          operations.flatMap((id) => [
            [id, 'operation.approved'],
            [id, 'operation.completed'],
          ]),
        );
        expect(running(faulty), faulty.output()).toBe(true);
        expect(faulty.output().match(/\(injected\)/g)?.length ?? 0, 'faults logged').toBeGreaterThan(5);
      } finally {
        if (running(faulty)) await stopProcess(faulty);
      }
    } finally {
      await receiver.close();
      await sys.close();
      dir.cleanup();
    }
  }, 180_000);
}
