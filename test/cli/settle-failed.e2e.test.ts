import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addUser } from '../../src/commands/back-office.ts';
import { issueFloat } from '../../src/commands/channel-operations.ts';
import { PartyLookup } from '../../src/commands/party-lookup.ts';
import type { StreamWrite } from '../../src/commands/pipeline.ts';
import type { OperationRequested } from '../../src/domain/events.ts';
import { streams } from '../../src/domain/streams.ts';
import { claimEvent, completionWrites, failureWrites, legsOf } from '../../src/executor/workflow.ts';
import { verifyViaCli } from '../audit/support.ts';
import { runCli, runCliJson } from '../support/cli.ts';
import {
  call,
  startTestSystem,
  waitFor,
  WITHOUT_EXECUTOR,
  type TestParty,
  type TestSystem,
} from '../support/system.ts';

/**
 * An operation recorded as failed whose money moved (a paused executor's transfer landing after another
 * executor recorded the failure, as before the ledger arbitrated fates), settled through the CLI against the
 * running system: audit verify reports it; one platform administrator asks, the same one cannot approve,
 * another does; then audit verify passes and the API's balance is the ledger's. The executor's writes are
 * made by hand with its own functions (the system runs without one), so the race needs no pause.
 */
describe('wallet-ops ledger settle-failed', () => {
  let sys: TestSystem;
  let distributor: TestParty;
  let apiKey: string;
  const alice = 'alice-ops@platform.example';
  const bob = 'bob-ops@platform.example';

  beforeAll(async () => {
    sys = await startTestSystem({}, undefined, WITHOUT_EXECUTOR);
    distributor = await sys.party('distributor');
    ({ apiKey } = await distributor.key());
    const operator = { actor: 'operator:test', correlationId: randomUUID() };
    for (const email of [alice, bob])
      await addUser(
        sys.backOffice,
        { party: null, email, password: 'platform password 1', roles: [], platformAdmin: true },
        operator,
      );
  });
  afterAll(async () => sys?.close());

  /** The executor's claim, then its completion, or its failure followed by the transfer landing anyway. */
  async function execute(operationID: string, outcome: 'completed' | 'failed-but-moved'): Promise<void> {
    const store = sys.system.stores.eventStore;
    const stream = await store.readStream(streams.operation(operationID));
    const operation = stream[0]!.data as OperationRequested['data'];
    const now = new Date().toISOString();
    const executor = { actor: 'system:executor:e-paused', correlationId: operationID };
    await store.append(
      streams.operation(operationID),
      [{ ...claimEvent(operationID, 'e-paused', 1, new Date(), 10_000), metadata: executor }],
      stream.length - 1,
    );
    const append = (writes: StreamWrite[]) =>
      store.appendMulti(
        writes.map((write) => ({
          stream: write.stream,
          expectedRevision: write.expectedRevision ?? 'any',
          events: write.events.map((event) => ({ ...event, metadata: executor })),
        })),
      );
    if (outcome === 'completed') {
      await append(
        completionWrites(
          operation,
          await sys.system.ledger.submit({ operationID, legs: legsOf(operation) }),
          stream.length,
          now,
          sys.config.ASSET_SCALE,
        ),
      );
      return;
    }
    await append(
      failureWrites(operation, 'gave up after 8 attempts: ledger busy', stream.length, now, sys.config.ASSET_SCALE),
    );
    await sys.system.ledger.submit({ operationID, legs: legsOf(operation) });
  }

  it("when a failed operation whose money moved is settled by one administrator asking and another approving, then audit verify passes and the API balance is the ledger's", async () => {
    const dataDir = ['--data-dir', sys.config.DATA_DIR];
    const deps = {
      store: sys.system.stores.eventStore,
      lookup: new PartyLookup(sys.system.stores.eventStore),
      clock: () => new Date(),
      assetScale: sys.config.ASSET_SCALE,
    };
    const { operationID: issued } = await issueFloat(
      deps,
      { to: distributor.ref, amount: '100.00' },
      { actor: 'operator:treasury', correlationId: randomUUID() },
    );
    await execute(issued, 'completed');
    const phone = await sys.individual('+2348000000077');
    const created = await call(sys.baseUrl, 'POST', `/api/v1/distributors/${distributor.ref.id}/operations`, {
      apiKey,
      body: { operationType: 'cash-in', amount: '40.00', phoneTo: phone },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const operationID = created.body.operationID as string;
    const approved = await runCli(['operation', 'approve', operationID, '--as', distributor.checkerEmail, ...dataDir]);
    expect(approved.code, approved.stderr).toBe(0);
    await execute(operationID, 'failed-but-moved');

    const balance = async () =>
      (await call(sys.baseUrl, 'GET', `/api/v1/distributors/${distributor.ref.id}/balance`, { apiKey })).body
        .balance as string;
    const onLedger = await sys.system.ledger.balance(`distributor:${distributor.ref.id}`);
    expect(onLedger).toMatch(/^60(\.0+)?$/);
    await waitFor(async () => (await balance()) === '100.00');

    const before = await verifyViaCli(sys.config.DATA_DIR);
    expect(before.code).toBe(1);
    expect(before.report.failedButMoved.map((entry) => entry.operationID)).toEqual([operationID]);

    const requested = await runCliJson([
      'ledger',
      'settle-failed',
      'request',
      operationID,
      '--reason',
      'audit verify: failedButMoved',
      '--as',
      alice,
      ...dataDir,
    ]);
    expect(requested).toMatchObject({
      operationID,
      status: 'settlement-requested',
      sequenceNumber: before.report.failedButMoved[0]!.ledgerTransaction.sequenceNumber,
    });

    const self = await runCli(['ledger', 'settle-failed', 'approve', operationID, '--as', alice, ...dataDir]);
    expect(self.code).toBe(1);
    expect(self.stderr).toMatch(/asked by this same user: another platform administrator approves it/);

    expect(
      await runCliJson(['ledger', 'settle-failed', 'approve', operationID, '--as', bob, ...dataDir]),
    ).toMatchObject({ operationID, status: 'completed' });

    await waitFor(async () => (await balance()) === '60.00');
    const listed = await call(sys.baseUrl, 'GET', `/api/v1/distributors/${distributor.ref.id}/operations`, { apiKey });
    expect(JSON.stringify(listed.body)).toContain(before.report.failedButMoved[0]!.ledgerTransaction.blockchainID);
    const after = await verifyViaCli(sys.config.DATA_DIR);
    expect(after.report.problems).toEqual([]);
    expect(after.code).toBe(0);
    expect(after.report.failedButMoved).toEqual([]);
    // The embedded ledger's own count: the issuance and the cash-in, which moved money but made none.
    expect(await runCli(['ledger', 'status', ...dataDir])).toEqual({
      code: 0,
      stdout: 'embedded ledger: 2 operations executed, supply 100.00\n',
      stderr: '',
    });
    expect(await runCliJson(['ledger', 'status', ...dataDir])).toEqual({
      ledger: 'embedded',
      sequence: 2,
      supply: '100.00',
    });
  }, 60_000);
});
