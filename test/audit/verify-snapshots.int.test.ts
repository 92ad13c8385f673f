/**
 * audit verify's `snapshot` check: every StateSnapshotted agrees with the history it summarizes, so that a
 * decision that folds from it after a restart decides on the truth.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { withHashChain } from '../../src/audit/hash-chain.ts';
import { type AuditReport, verifyHistory } from '../../src/audit/verify.ts';
import { withSnapshots, type SnapshottingEventStore } from '../../src/commands/snapshots.ts';
import type { KeyVolumeEvent, WalletEvent, WalletRef } from '../../src/domain/events.ts';
import { streams } from '../../src/domain/streams.ts';
import type { EventStore } from '../../src/ports/event-store.ts';
import { tamper } from './support.ts';
import { tempDir } from '../support/temp-dir.ts';

const W: WalletRef = { kind: 'distributor', id: 'd1' };
const WALLET = streams.wallet(W);
const VOLUME = streams.keyVolume('k1', '2026-01-02');
const EVERY = 3;

const held = (i: number): WalletEvent => ({
  type: 'FundsHeld',
  data: { wallet: W, operationID: `op_${i}`, amount: `${i}.25` },
});
const released = (i: number): WalletEvent => ({
  type: 'HoldReleased',
  data: { wallet: W, operationID: `op_${i}`, amount: `${i}.25`, reason: 'rejected' },
});
const reserved = (i: number): KeyVolumeEvent => ({
  type: 'VolumeReserved',
  data: { keyID: 'k1', day: '2026-01-02', operationID: `op_${i}`, amount: `${i}.00` },
});

describe('audit verify: snapshots', () => {
  let dir: ReturnType<typeof tempDir>;
  let chained: EventStore;
  let store: SnapshottingEventStore;

  beforeEach(async () => {
    dir = tempDir('verify-snapshots-');
    chained = withHashChain(openSqliteEventStore({ file: join(dir.path, 'events.sqlite') }));
    store = withSnapshots(chained, { every: EVERY });
    // Holds and reservations, some released, appended one by one and in batches: snapshots at revisions 2, 5 and 8.
    for (let i = 1; i <= 4; i++) await store.append(WALLET, [held(i)], 'any');
    await store.appendMulti([
      { stream: WALLET, events: [released(2), held(5), held(6), released(5)], expectedRevision: 'any' },
      { stream: VOLUME, events: [1, 2, 3, 4].map(reserved), expectedRevision: 'any' },
    ]);
    await store.append(VOLUME, [reserved(5), reserved(6)], 'any');
    await store.settled();
  });
  afterEach(async () => {
    await store.close();
    dir.cleanup();
  });

  const verify = (): Promise<AuditReport> => verifyHistory({ eventStore: chained, ledger: null, assetScale: 2 });
  const snapshotProblems = (report: AuditReport) => report.problems.filter((problem) => problem.check === 'snapshot');

  it('given the snapshots the store wrote, when verified, then each is checked and none is a problem', async () => {
    expect(
      (await chained.readStream(streams.snapshot(WALLET))).map(
        (event) => (event.data as { revision: number }).revision,
      ),
    ).toEqual([2, 5]);
    expect(
      (await chained.readStream(streams.snapshot(VOLUME))).map(
        (event) => (event.data as { revision: number }).revision,
      ),
    ).toEqual([2, 5]);
    const report = await verify();
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.checked.snapshots).toBe(4);
  });

  it('when a snapshot that disagrees with the history is appended (through the hash chain), then verify fails naming its stream, revision and sums', async () => {
    await chained.append(
      streams.snapshot(WALLET),
      [
        {
          type: 'StateSnapshotted',
          data: { stream: WALLET, revision: 6, fold: 'wallet/1', state: { balance: '0', held: '1.00' } },
        },
      ],
      'any',
    );
    const report = await verify();
    expect(report.ok).toBe(false);
    expect(snapshotProblems(report)).toEqual([
      expect.objectContaining({
        stream: streams.snapshot(WALLET),
        detail: `the snapshot of ${WALLET} at revision 6 disagrees with the history: it says held 1.00, the events fold to held 20.25`,
      }),
    ]);
    expect(report.problems.filter((problem) => problem.check !== 'snapshot')).toEqual([]);
  });

  it('when a stored snapshot is tampered with in the file, then verify fails naming it (its hash, and the snapshot check)', async () => {
    await store.close();
    tamper(dir.path, 'events.sqlite', (db) => {
      const changed = db
        .prepare(
          "UPDATE events SET data = json_set(data, '$.state.total', '1000000.00') WHERE stream = ? AND revision = 1",
        )
        .run(streams.snapshot(VOLUME));
      expect(changed.changes).toBe(1);
    });
    chained = withHashChain(openSqliteEventStore({ file: join(dir.path, 'events.sqlite') }));
    store = withSnapshots(chained);
    const report = await verify();
    expect(report.ok).toBe(false);
    expect(snapshotProblems(report)).toEqual([
      expect.objectContaining({
        stream: streams.snapshot(VOLUME),
        detail: `the snapshot of ${VOLUME} at revision 5 disagrees with the history: it says total 1000000.00, the events fold to total 21.00`,
      }),
    ]);
    expect(report.problems).toContainEqual(
      expect.objectContaining({ check: 'hash', stream: streams.snapshot(VOLUME) }),
    );
  });

  it('when a snapshot summarizes a revision the stream never reached, or is malformed, or of a fold the audit does not know, then each is a problem', async () => {
    const snapshot = (data: Record<string, unknown>) =>
      chained.append(
        streams.snapshot(VOLUME),
        [{ type: 'StateSnapshotted', data: { stream: VOLUME, fold: 'keyVolume/1', ...data } }],
        'any',
      );
    await snapshot({ revision: 40, state: { total: '1.00' } });
    await snapshot({ revision: 5, state: { total: 'lots' } });
    await snapshot({ revision: 5, fold: 'keyVolume/9', state: { total: '21.00' } });
    const details = snapshotProblems(await verify()).map((problem) => problem.detail);
    expect(details).toEqual([
      `the snapshot of ${VOLUME} at revision 5 has no decimal total`,
      `a snapshot of ${VOLUME} by fold keyVolume/9, which the audit cannot check`,
      `the snapshot of ${VOLUME} at revision 40 summarizes a revision the stream never reached`,
    ]);
  });
});
