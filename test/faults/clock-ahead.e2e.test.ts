import { existsSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { afterAll, expect, it } from 'vitest';
import type { OperationExecutionStarted } from '../../src/domain/events.ts';
import { streams } from '../../src/domain/streams.ts';
import { approve, issue, waitUntilSettled } from '../support/executor-system.ts';
import {
  freePort,
  killAllChildren,
  running,
  spawnWalletOps,
  stopProcess,
  type WalletOpsProcess,
} from '../support/processes.ts';
import { startTestSystem, waitFor } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';
import { startWebhookReceiver } from '../support/webhook-receiver.ts';
import { registerEndpoint } from '../support/webhooks.ts';

/**
 * Time from one place: an executor, a webhooks process and a write-api process whose clocks run a day ahead
 * (Debian's libfaketime, FAKETIME=+1d, preloaded into the child: its wall clock only; its monotonic clock stays
 * true) beside normal ones, on one data directory. No process may act on another's wall clock: no claim is
 * taken from a live executor, no webhook is delivered twice (every receiver answer is a quick 200, so
 * at-least-once has nothing to retry), a retried Idempotency-Key never creates a second operation, and the fast
 * API opens no "tomorrow" of a key's daily volume (the day is the store's: the kernel's stamp on a file of the
 * data directory, which libfaketime does not shift), and warns of its clock.
 */
afterAll(killAllChildren);

const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
const A_DAY_AHEAD = { LD_PRELOAD: LIBFAKETIME, FAKETIME: '+1d', FAKETIME_DONT_FAKE_MONOTONIC: '1' };
const ENV = {
  WEBHOOK_ALLOW_INSECURE_LOCALHOST: 'true',
  WEBHOOK_POLL_INTERVAL_MS: '50',
  WEBHOOK_TIMEOUT_MS: '1000',
  WEBHOOK_LEASE_MS: '4000',
  EXECUTOR_LEASE_MS: '20000',
  EXECUTOR_SWEEP_INTERVAL_MS: '600000',
};
const OPERATIONS = 30;

it('given an executor, a webhooks process and a write-api process a day ahead beside normal ones, then no claim is stolen, no webhook is delivered twice, no Idempotency-Key creates twice, and no volume goes into "tomorrow" beyond the key’s max', async () => {
  expect(existsSync(LIBFAKETIME), `${LIBFAKETIME} (Debian package faketime) is needed`).toBe(true);
  const dir = tempDir('wallet-ops-clock-ahead-');
  const sys = await startTestSystem({ ...ENV, DATA_DIR: dir.path }, undefined, ['projections']);
  // Deliveries signed by the process a day ahead carry its clock: a Standard Webhooks receiver refuses them as
  // too new, rightly. This test is about duplicates, so its receiver verifies nothing.
  const receiver = await startWebhookReceiver('/hooks', 0, { oracle: false });
  const children: WalletOpsProcess[] = [];
  try {
    const distributor = await sys.party('distributor');
    // A max daily volume of exactly what the creates below use: today is full after them, whichever API took each.
    const { apiKey } = await distributor.key({ maxDailyVolume: String(OPERATIONS) });
    const phone = await sys.individual('+2348127300001');
    await registerEndpoint(sys, distributor, receiver.url, ['operation.completed']);

    const ports = [await freePort(), await freePort()];
    const spawn = (parts: string[], env: Record<string, string>) => {
      const child = spawnWalletOps(dir.path, parts, { ...ENV, ...env });
      children.push(child);
      return child;
    };
    spawn(['write-api'], { PORT: String(ports[0]), HOST: '127.0.0.1' });
    spawn(['write-api'], { PORT: String(ports[1]), HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...A_DAY_AHEAD });
    spawn(['executor'], { EXECUTOR_ID: 'on-time' });
    spawn(['executor'], { EXECUTOR_ID: 'a-day-ahead', ...A_DAY_AHEAD });
    spawn(['webhooks'], {});
    spawn(['webhooks'], A_DAY_AHEAD);
    for (const port of ports) {
      await waitFor(
        async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.status === 200,
        60_000,
      ).catch((error: unknown) => {
        throw new Error(
          `the write-api on ${port} did not start: ${children.map((child) => child.output()).join('\n---\n')}`,
          { cause: error },
        );
      });
    }
    // The float, on the ledger too: issued and carried out by one of the executors.
    expect((await waitUntilSettled(sys, await issue(sys, distributor.ref, '1000'), 60_000)).status).toBe('completed');
    const health = await fetch(`http://127.0.0.1:${ports[1]}/health`);
    expect(Date.parse(health.headers.get('date')!) - Date.now(), 'the second API runs a day ahead').toBeGreaterThan(
      23 * 3600_000,
    );

    const post = (port: number, key: string) =>
      fetch(`http://127.0.0.1:${port}/api/v1/distributors/${distributor.ref.id}/operations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ operationType: 'cash-in', amount: '1', phoneTo: phone }),
      });
    const create = async (port: number, key: string) => {
      const response = await post(port, key);
      const body = (await response.json()) as { operationID?: string };
      expect(response.status, JSON.stringify(body)).toBe(200);
      return { operationID: body.operationID!, replayed: response.headers.get('idempotent-replayed') === 'true' };
    };

    // Each create goes to one API and is retried through the other: the retry replays, whichever clock is ahead.
    const operations: string[] = [];
    for (let i = 0; i < OPERATIONS; i++) {
      const key = randomUUID();
      const [first, retry] = i % 2 === 0 ? [ports[0]!, ports[1]!] : [ports[1]!, ports[0]!];
      const created = await create(first, key);
      expect(created.replayed).toBe(false);
      expect(await create(retry, key)).toEqual({ operationID: created.operationID, replayed: true });
      operations.push(created.operationID);
    }
    // The day is the store's, not the fast API's: it opens no "tomorrow" beside the full today.
    const beyond = await post(ports[1]!, randomUUID());
    expect(beyond.status, 'the API a day ahead accepts no volume beyond the max').toBe(403);
    expect(((await beyond.json()) as { detail: string }).detail).toMatch(/max daily volume/);
    // And it warns of its clock, measured against the kernel's stamp on a file of the data directory.
    expect(children[1]!.output()).toMatch(/clock is \d+ ms ahead of the store's/);

    for (const operationID of operations) await approve(sys, distributor, operationID);
    for (const operationID of operations)
      expect((await waitUntilSettled(sys, operationID, 60_000)).status).toBe('completed');

    // No takeover: with leases of 20 s and a ledger that answers at once, every operation has one claim.
    const claims = await Promise.all(
      operations.map(async (operationID) => {
        const events = await sys.system.stores.eventStore.readStream(streams.operation(operationID));
        return events
          .filter((event) => event.type === 'OperationExecutionStarted')
          .map((event) => (event.data as OperationExecutionStarted['data']).executorID);
      }),
    );
    expect(claims.filter((byExecutor) => byExecutor.length !== 1)).toEqual([]);

    // Every completion delivered, once.
    await receiver.waitForRequests(OPERATIONS, 60_000);
    await new Promise((resolve) => setTimeout(resolve, 2_000)); // time for a second send of anything
    const delivered = receiver.received.map((request) => request.json.data.operation.operationID as string);
    expect([...delivered].sort()).toEqual([...operations].sort());
  } finally {
    for (const child of children) if (running(child)) await stopProcess(child);
    await receiver.close();
    await sys.close();
    dir.cleanup();
  }
}, 240_000);
