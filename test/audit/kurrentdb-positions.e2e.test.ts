/**
 * The audit commands in a KurrentDB-shaped position space. A real history (system with the executor, sealed
 * by the sealer on the embedded store, so its seals carry the embedded store's positions) is read through
 * withSparsePositions (test/support/sparse-positions.ts): positions become large, uneven, never contiguous
 * numbers, and a read of $all from a number that is not at an event fails with InvalidPosition, as KurrentDB
 * does. That is the situation after `events copy` into KurrentDB. `audit operation` and `audit verify` are
 * run as the CLI runs them (operationHistory, verifyHistory with the ledger and its chain), and a sealer resumes
 * on that store. No KurrentDB here: the same checks against a real server are in the KurrentDB contract file.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chainID, openEmbeddedLedger } from '../../src/adapters/ledger/embedded-ledger.ts';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { withHashChain } from '../../src/audit/hash-chain.ts';
import { operationHistory } from '../../src/audit/queries.ts';
import { lastSeal, resumePosition, startSealer } from '../../src/audit/sealer.ts';
import { verifyHistory } from '../../src/audit/verify.ts';
import { streams } from '../../src/domain/streams.ts';
import type { EventStore } from '../../src/ports/event-store.ts';
import { approve, issue, waitUntilSettled } from '../support/executor-system.ts';
import { withSparsePositions } from '../support/sparse-positions.ts';
import { call, startTestSystem, waitFor, type TestSystem } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';
import { copyDataDir, snapshotDataDir, tamper } from './support.ts';

describe('audit commands over KurrentDB-shaped positions', () => {
  const work = tempDir('audit-sparse-');
  const sealedDir = join(work.path, 'sealed');
  let sys: TestSystem;
  let cashIn = '';
  let embeddedStory: string[] = [];
  let copies = 0;

  /** A copy of the sealed data directory, its events seen through KurrentDB-shaped positions. */
  function open(change?: Parameters<typeof tamper>[2]): { store: EventStore; dir: string; close(): Promise<void> } {
    const dir = join(work.path, `copy-${copies++}`);
    copyDataDir(sealedDir, dir);
    if (change) tamper(dir, 'events.sqlite', change);
    const store = withHashChain(withSparsePositions(openSqliteEventStore({ file: join(dir, 'events.sqlite') })));
    return { store, dir, close: () => store.close() };
  }

  async function verify(store: EventStore, dir: string) {
    const ledger = openEmbeddedLedger({ file: join(dir, 'ledger.sqlite') });
    try {
      return await verifyHistory({ eventStore: store, ledger, ledgerChainID: chainID, assetScale: 2, pageSize: 7 });
    } finally {
      await ledger.close();
    }
  }

  beforeAll(async () => {
    sys = await startTestSystem();
    const sealer = startSealer({ eventStore: sys.system.stores.eventStore, every: 5, idleMs: 40 });
    try {
      const distributor = await sys.party('distributor');
      const { apiKey } = await distributor.key();
      const phone = await sys.individual('+2348123456077', 'Sparse Sam');
      await waitUntilSettled(sys, await issue(sys, distributor.ref, '500.00'));
      const created = await call(sys.baseUrl, 'POST', `/api/v1/distributors/${distributor.ref.id}/operations`, {
        apiKey,
        body: { operationType: 'cash-in', amount: '40.00', phoneTo: phone },
      });
      expect(created.status).toBe(200);
      cashIn = created.body.operationID as string;
      await approve(sys, distributor, cashIn);
      expect((await waitUntilSettled(sys, cashIn)).status).toBe('completed');
      const head = await sys.system.stores.eventStore.headPosition();
      await waitFor(
        async () => ((await lastSeal(sys.system.stores.eventStore))?.data.toPosition ?? 0) >= head - 1,
        10_000,
      );
    } finally {
      await sealer.stop();
    }
    embeddedStory = (await operationHistory(sys.system.stores.eventStore, cashIn)).events.map((event) => event.type);
    snapshotDataDir(sys.config.DATA_DIR, sealedDir);
  }, 60_000);

  afterAll(async () => {
    await sys?.close();
    work.cleanup();
  });

  it('given the double, when a read starts next to an event rather than at one, then it is refused as KurrentDB refuses it (the double is strict)', async () => {
    const { store, close } = open();
    try {
      const [requested] = await store.readStream(streams.operation(cashIn), { maxCount: 1 });
      expect(requested!.position).toBeGreaterThan(20_000);
      await expect(
        store.readAll({ fromPosition: requested!.position - 8, toPosition: requested!.position + 8 }),
      ).rejects.toThrow(/InvalidPosition/);
      // The seals carry the embedded store's numbers, which name no event here.
      const seal = await lastSeal(store);
      await expect(
        store.readAll({ fromPosition: seal!.data.toPosition, toPosition: seal!.data.toPosition, maxCount: 1 }),
      ).rejects.toThrow(/InvalidPosition/);
    } finally {
      await close();
    }
  });

  it("when audit operation runs, then the operation's whole story is told as on the embedded store, at the new positions", async () => {
    const { store, close } = open();
    try {
      const history = await operationHistory(store, cashIn);
      expect(embeddedStory).toEqual([
        'OperationRequested',
        'FundsHeld',
        'OperationApproved',
        'OperationExecutionStarted',
        'OperationSubmitted',
        'OperationCompleted',
        'WalletDebited',
        'WalletCredited',
      ]);
      expect(history.events.map((event) => event.type)).toEqual(embeddedStory);
      expect(history.status).toBe('completed');
      const positions = history.events.map((event) => event.position);
      expect(positions).toEqual([...positions].sort((a, b) => a - b));
      expect(positions.every((position) => position % 4 === 0 && position > 20_000)).toBe(true);
    } finally {
      await close();
    }
  });

  it('when audit verify runs, then the seals are found by stream and revision and checked by event id, and everything passes', async () => {
    const { store, dir, close } = open();
    try {
      const report = await verify(store, dir);
      expect(report.problems).toEqual([]);
      expect(report.ok).toBe(true);
      expect(report.checked.seals).toBeGreaterThan(2);
      expect(report.checked.ledgerTransactions).toBe(2);
      expect(report.checked.sealedEvents + report.checked.unsealedEvents + report.checked.seals).toBe(
        report.checked.events,
      );
      expect(report.checked.headPosition).toBeGreaterThan(20_000);
    } finally {
      await close();
    }
  });

  it('given the last event of a sealed stream removed below the port, when audit verify runs, then a seal names the change', async () => {
    const { store, dir, close } = open((db) => {
      // The last event of a user's stream: no per-stream chain can see it go, only a seal.
      const row = db
        .prepare("SELECT position FROM events WHERE stream LIKE 'user-%' ORDER BY revision DESC, position DESC LIMIT 1")
        .get() as { position: number };
      db.prepare('DELETE FROM events WHERE position = ?').run(row.position);
    });
    try {
      const report = await verify(store, dir);
      expect(report.ok).toBe(false);
      expect(report.problems).toContainEqual(expect.objectContaining({ check: 'seal' }));
    } finally {
      await close();
    }
  });

  it('when a sealer starts on that store, then it resumes after the last sealed event and seals what comes next, and verify still passes', async () => {
    const { store, dir, close } = open();
    try {
      const before = await lastSeal(store);
      expect(await resumePosition(store, before!.data)).toBeGreaterThan(20_000);
      const errors: unknown[] = [];
      const sealer = startSealer({ eventStore: store, every: 1, onError: (error) => errors.push(error) });
      try {
        await store.append(
          'sparse-probe',
          [
            { type: 'Probed', data: { n: 1 } },
            { type: 'Probed', data: { n: 2 } },
          ],
          'no_stream',
        );
        await waitFor(
          async () =>
            (await lastSeal(store))!.data.lastEventStream === 'sparse-probe' &&
            (await lastSeal(store))!.data.lastEventRevision === 1,
          10_000,
        );
      } finally {
        await sealer.stop();
      }
      expect(errors).toEqual([]);
      const after = await lastSeal(store);
      expect(after!.revision).toBeGreaterThan(before!.revision);
      expect(after!.data.toPosition).toBe((await store.readStream('sparse-probe'))[1]!.position);
      const report = await verify(store, dir);
      expect(report.problems).toEqual([]);
    } finally {
      await close();
    }
  });
});
