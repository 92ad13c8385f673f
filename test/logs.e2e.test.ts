/**
 * The log an operator reads at LOG_LEVEL=info: what happened, not the probes. Probes, scrapes and the console's
 * files are at debug; each operation's outcome is one info line with its ids (never a secret); a failed webhook
 * delivery is a warning; the start line names the stores, the parts and the addresses.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issue, startPartsSystem, waitUntilSettled, type PartsTestSystem } from './support/executor-system.ts';
import { freePort, killAllChildren, spawnWalletOps, stopProcess } from './support/processes.ts';
import { call, waitFor } from './support/system.ts';
import { tempDir } from './support/temp-dir.ts';
import { ALL_PARTS } from '../src/wallet-ops.ts';
import { completedCashIn, payingDistributor, registerEndpoint, type PayingParty } from './support/webhooks.ts';

interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}
const INFO = 30;
const WARN = 40;

function capture(): { stream: Writable; lines: () => LogLine[]; text: () => string } {
  let text = '';
  const stream = new Writable({ write: (chunk, _encoding, done) => ((text += String(chunk)), done()) });
  return {
    stream,
    text: () => text,
    lines: () =>
      text
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as LogLine),
  };
}

describe('the log at LOG_LEVEL=info', () => {
  const logs = capture();
  let sys: PartsTestSystem;
  let distributor: PayingParty;
  let operationID: string;

  beforeAll(async () => {
    // Nothing listens at the endpoint's port: every delivery fails.
    const deadPort = await freePort();
    sys = await startPartsSystem({ LOG_LEVEL: 'info', WEBHOOK_ALLOW_INSECURE_LOCALHOST: 'true' }, ALL_PARTS, {
      logs: logs.stream,
    });
    distributor = await payingDistributor(sys, '+2348123457001');
    await registerEndpoint(sys, distributor, `http://127.0.0.1:${deadPort}/hooks`, ['operation.completed']);
    operationID = await completedCashIn(sys, distributor, { amount: '12.50' });
  }, 60_000);
  afterAll(() => sys?.close());

  it("when probes, a scrape and the console's files are requested, then no info line says so; an API request is one info line", async () => {
    for (const path of ['/health', '/ready', '/metrics', '/console/assets/console.css'])
      expect((await call(sys.baseUrl, 'GET', path)).status, path).toBe(200);
    const balance = await call(sys.baseUrl, 'GET', `/api/v1/distributors/${distributor.ref.id}/balance`, {
      apiKey: distributor.apiKey,
      headers: { 'x-request-id': 'balance-read-1' },
    });
    expect(balance.status).toBe(200);
    await waitFor(() => logs.lines().some((line) => line.requestId === 'balance-read-1'), 5_000);

    const requests = logs.lines().filter((line) => line.msg === 'request' && line.level >= INFO);
    expect(requests.map((line) => line.path)).not.toEqual(
      expect.arrayContaining([expect.stringMatching(/^\/(health|ready|metrics|console\/assets\/)/)]),
    );
    expect(requests.find((line) => line.requestId === 'balance-read-1')).toMatchObject({
      level: INFO,
      status: 200,
      keyID: distributor.keyID,
    });
  });

  it('when an operation completes, then one info line says so with its ids, and no secret is in the log', () => {
    const outcomes = logs
      .lines()
      .filter((line) => line.operationID === operationID && /^operation (completed|failed)$/.test(line.msg));
    expect(outcomes).toEqual([
      expect.objectContaining({
        level: INFO,
        msg: 'operation completed',
        operationType: 'cash-in',
        party: `distributor:${distributor.ref.id}`,
        keyID: distributor.keyID,
        amount: '12.50',
        walletOperationID: expect.any(String),
      }),
    ]);
    expect(logs.text()).not.toContain(distributor.apiKey);
    expect(logs.text()).not.toContain(distributor.apiKey.split('.').at(-1)!);
  });

  it('when a webhook delivery fails, then it is a warning naming the endpoint and the event', async () => {
    await waitFor(() => logs.lines().some((line) => line.msg === 'webhook delivery attempt failed'), 15_000);
    expect(logs.lines().find((line) => line.msg === 'webhook delivery attempt failed')).toMatchObject({
      level: WARN,
      endpointID: expect.any(String),
      eventID: expect.any(String),
      attempt: 1,
    });
  });
});

describe('an operation the ledger refuses', () => {
  it('when it fails, then one info line says so with its id and why', async () => {
    const logs = capture();
    const sys = await startPartsSystem({ LOG_LEVEL: 'info', LEDGER_REJECTION_RATE: '1' }, ALL_PARTS, {
      logs: logs.stream,
    });
    try {
      const distributor = await sys.party('distributor');
      const operationID = await issue(sys, distributor.ref, '100');
      expect((await waitUntilSettled(sys, operationID)).status).toBe('failed');
      await waitFor(
        () => logs.lines().some((line) => line.operationID === operationID && line.msg === 'operation failed'),
        5_000,
      );
      const outcomes = logs
        .lines()
        .filter((line) => line.operationID === operationID && /^operation (completed|failed)$/.test(line.msg));
      expect(outcomes).toEqual([
        expect.objectContaining({
          level: INFO,
          msg: 'operation failed',
          result: 'rejected',
          lastError: expect.stringContaining('rejected'),
          amount: '100.00',
        }),
      ]);
    } finally {
      await sys.close();
    }
  }, 60_000);
});

describe('the start line', () => {
  const dir = tempDir();
  afterAll(async () => {
    await killAllChildren();
    dir.cleanup();
  });

  it('when wallet-ops starts, then its line names the stores, the parts and the addresses to open', async () => {
    const child = spawnWalletOps(dir.path, [], { LOG_LEVEL: 'info' });
    await waitFor(() => child.output().includes('wallet-ops started'), 30_000);
    const started = child
      .output()
      .split('\n')
      .filter((line) => line.includes('"wallet-ops started"'))
      .map((line) => JSON.parse(line) as LogLine & { port: number })[0]!;
    const base = `http://127.0.0.1:${started.port}`;
    expect(started).toMatchObject({
      level: INFO,
      parts: [...ALL_PARTS],
      stores: expect.objectContaining({
        events: expect.stringMatching(/^(embedded \(.+\)|postgres \(postgres:\/\/.*\))$/),
        readModels: expect.any(String),
        ledger: expect.any(String),
      }),
      urls: {
        api: `${base}/api/v1`,
        apiDocs: `${base}/api/v1/docs`,
        console: `${base}/console`,
        health: `${base}/health`,
        metrics: `${base}/metrics`,
      },
    });
    expect(JSON.stringify(started.stores)).not.toMatch(/:\/\/[^:/]+:(?!\*\*\*)[^@]+@/);
    expect((await stopProcess(child)).code).toBe(0);
  });
});
