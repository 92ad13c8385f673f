/**
 * Seals and the first broken position, exhaustively on a small history: the sealer's seals, then every
 * single deletion, many swaps and alterations of a copy of the store file (below the port), each verified
 * in this process with verifyHistory.
 */
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { exportEvents, importEvents } from '../../src/audit/export-import.ts';
import { eventHash, withHashChain } from '../../src/audit/hash-chain.ts';
import { lastSeal, startSealer, toRecordedSeal } from '../../src/audit/sealer.ts';
import { type HistorySealedData, SEALS_STREAM, SealChecker } from '../../src/audit/seals.ts';
import { type AuditProblem, type AuditReport, verifyHistory } from '../../src/audit/verify.ts';
import type { EventStore, RecordedEvent } from '../../src/ports/event-store.ts';
import { tempDir } from '../support/temp-dir.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const dir = tempDir('seals-');
const original = join(dir.path, 'original.sqlite');
let copies = 0;

async function verifyFile(file: string): Promise<AuditReport> {
  const store = openSqliteEventStore({ file });
  try {
    return await verifyHistory({ eventStore: store, ledger: null, assetScale: 2, pageSize: 7 });
  } finally {
    await store.close();
  }
}

/** A copy of the original store file with a change made in SQL. */
function tampered(change: (db: Database.Database) => void): string {
  const file = join(dir.path, `copy-${copies++}.sqlite`);
  copyFileSync(original, file);
  const db = new Database(file);
  try {
    db.transaction(() => change(db))();
  } finally {
    db.close();
  }
  return file;
}

interface Row {
  position: number;
  stream: string;
  revision: number;
}
let rows: Row[] = [];
let sealedTo = 0;
/** Positions of events covered by seals (seal events themselves excluded). */
let sealed: Row[] = [];

async function until(condition: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(5);
  }
}

beforeAll(async () => {
  const raw = openSqliteEventStore({ file: original });
  const store = withHashChain(raw);
  const sealer = startSealer({ eventStore: store, every: 5, idleMs: 15 });
  const streams = ['alpha-1', 'beta-1', 'gamma-1', 'delta-1', 'epsilon-1'];
  let n = 0;
  for (let round = 0; round < 8; round++) {
    const a = streams[round % 5]!;
    const b = streams[(round + 2) % 5]!;
    await store.append(
      a,
      [
        { type: 'Happened', data: { n: n++ } },
        { type: 'Happened', data: { n: n++ } },
      ],
      'any',
    );
    await store.appendMulti([
      { stream: b, events: [{ type: 'Happened', data: { n: n++ } }], expectedRevision: 'any' },
      { stream: `single-${round}`, events: [{ type: 'Once', data: { n: n++ } }], expectedRevision: 'no_stream' },
    ]);
    if (round % 3 === 0) await sleep(30); // a partial range gets sealed by the idle timer
  }
  // Sealed when a seal covers the last event appended above (the head may already be a seal of the sealer's).
  const lastAppended = Math.max(
    ...(await raw.readAll()).filter((event) => event.stream !== SEALS_STREAM).map((event) => event.position),
  );
  await until(async () => ((await lastSeal(raw))?.data.toPosition ?? 0) >= lastAppended);
  await sealer.stop();
  const all = await raw.readAll();
  rows = all.map(({ position, stream, revision }) => ({ position, stream, revision }));
  sealedTo = (await lastSeal(raw))!.data.toPosition;
  sealed = rows.filter((row) => row.stream !== SEALS_STREAM && row.position <= sealedTo);
  await store.close();
}, 30_000);

afterAll(() => dir.cleanup());

describe('the sealer', () => {
  it('when it follows a history, then seals cover every event once, in order, chained, each at most N events', async () => {
    const store = openSqliteEventStore({ file: original });
    try {
      const seals = (await store.readStream(SEALS_STREAM)).map(toRecordedSeal);
      expect(seals.length).toBeGreaterThan(4);
      let previousTo = 0;
      let previousDigest = '0'.repeat(64);
      for (const seal of seals) {
        expect(seal.data.previousDigest).toBe(previousDigest);
        expect(seal.data.fromPosition).toBeGreaterThan(previousTo);
        expect(seal.data.count).toBeGreaterThan(0);
        expect(seal.data.count).toBeLessThanOrEqual(5);
        expect(seal.data.fingerprints).toHaveLength(seal.data.count * 4);
        expect(seal.data.contiguous).toBe(true);
        expect(seal.position).toBeGreaterThan(seal.data.toPosition);
        previousTo = seal.data.toPosition;
        previousDigest = seal.data.digest;
      }
      const covered = seals.reduce((sum, seal) => sum + seal.data.count, 0);
      expect(covered).toBe(rows.filter((row) => row.stream !== SEALS_STREAM).length);
    } finally {
      await store.close();
    }
    const report = await verifyFile(original);
    expect(report.problems).toEqual([]);
    expect(report.checked.unsealedEvents).toBe(0);
  });

  it('when two sealers follow one store, then each seal is written once and the seals verify', async () => {
    const file = join(dir.path, 'two-sealers.sqlite');
    const store = withHashChain(openSqliteEventStore({ file }));
    const other = withHashChain(openSqliteEventStore({ file }));
    const sealers = [startSealer({ eventStore: store, every: 3 }), startSealer({ eventStore: other, every: 3 })];
    try {
      for (let i = 0; i < 30; i++)
        await (i % 2 ? store : other).append(`s-${i % 4}`, [{ type: 'Happened', data: { i } }], 'any');
      await until(async () => ((await lastSeal(store))?.revision ?? -1) >= 9);
    } finally {
      await Promise.all(sealers.map((sealer) => sealer.stop()));
      await other.close();
    }
    const seals = (await store.readStream(SEALS_STREAM)).map(toRecordedSeal);
    expect(seals.map((seal) => seal.data.count)).toEqual(Array(10).fill(3));
    await store.close();
    const report = await verifyFile(file);
    expect(report.problems).toEqual([]);
  });
});

describe('the first broken position, below the port', () => {
  const brokenAt = (report: AuditReport) => report.firstBrokenPosition;

  it('when any single sealed event is deleted, then exactly its position is named first', async () => {
    expect(sealed.length).toBeGreaterThan(30);
    for (const row of sealed) {
      const report = await verifyFile(
        tampered((db) => db.prepare('DELETE FROM events WHERE position = ?').run(row.position)),
      );
      expect(brokenAt(report), `deleting position ${row.position} (${row.stream}@${row.revision})`).toBe(row.position);
      expect(report.problems).toContainEqual(expect.objectContaining({ check: 'seal', position: row.position }));
    }
  });

  it('when a whole stream is deleted, then its first position is named', async () => {
    const stream = sealed.find((row) => row.stream === 'beta-1')!;
    const report = await verifyFile(tampered((db) => db.prepare('DELETE FROM events WHERE stream = ?').run('beta-1')));
    expect(brokenAt(report)).toBe(stream.position);
  });

  it('when two sealed events swap positions, then the first of the two is named', async () => {
    const pairs: Array<[Row, Row]> = [];
    for (let i = 0; i < sealed.length; i++) {
      for (let j = i + 1; j < sealed.length; j += 1 + ((i + j) % 5)) pairs.push([sealed[i]!, sealed[j]!]);
    }
    expect(pairs.length).toBeGreaterThan(100);
    for (const [a, b] of pairs) {
      const report = await verifyFile(
        tampered((db) => {
          db.prepare('UPDATE events SET position = -1 WHERE position = ?').run(a.position);
          db.prepare('UPDATE events SET position = ? WHERE position = ?').run(a.position, b.position);
          db.prepare('UPDATE events SET position = ? WHERE position = -1').run(b.position);
        }),
      );
      expect(brokenAt(report), `swapping ${a.position} and ${b.position}`).toBe(a.position);
    }
  });

  it("when an event's data is altered, then its hash fails there; when its hash is recomputed too, the chain or the seal still names it", async () => {
    for (const row of sealed) {
      const altered = await verifyFile(
        tampered((db) =>
          db.prepare("UPDATE events SET data = json_set(data, '$.n', 999) WHERE position = ?").run(row.position),
        ),
      );
      expect(altered.problems).toEqual([expect.objectContaining({ check: 'hash', position: row.position })]);

      const forged = await verifyFile(
        tampered((db) => {
          const event = db.prepare('SELECT * FROM events WHERE position = ?').get(row.position) as {
            id: string;
            stream: string;
            revision: number;
            type: string;
            data: string;
            metadata: string;
          };
          const data = { ...JSON.parse(event.data), n: 999 };
          const metadata = JSON.parse(event.metadata);
          metadata.hash = eventHash({ ...event, data, metadata });
          db.prepare('UPDATE events SET data = ?, metadata = ? WHERE position = ?').run(
            JSON.stringify(data),
            JSON.stringify(metadata),
            row.position,
          );
        }),
      );
      expect(forged.problems.some((p: AuditProblem) => p.check === 'hash')).toBe(false);
      expect(brokenAt(forged), `forging position ${row.position}`).toBe(row.position);
    }
  });

  it('when a seal itself is deleted or altered, then the history does not verify', async () => {
    const sealRows = rows.filter((row) => row.stream === SEALS_STREAM && row.revision > 0 && row.position < sealedTo);
    for (const seal of sealRows.slice(0, 3)) {
      const deleted = await verifyFile(
        tampered((db) => db.prepare('DELETE FROM events WHERE position = ?').run(seal.position)),
      );
      expect(deleted.ok, `deleting seal at ${seal.position}`).toBe(false);
      expect(deleted.problems.some((p) => p.check === 'seal')).toBe(true);
    }
    const altered = await verifyFile(
      tampered((db) =>
        db
          .prepare("UPDATE events SET data = json_set(data, '$.count', 4) WHERE position = ?")
          .run(sealRows[0]!.position),
      ),
    );
    expect(altered.ok).toBe(false);
  });

  it('given a history whose positions are not the sealed ones (imported elsewhere), when checked by event ids, then a deletion is still found', async () => {
    const sealEvents = await (async () => {
      const store = openSqliteEventStore({ file: original });
      try {
        return (await store.readStream(SEALS_STREAM)).map(toRecordedSeal);
      } finally {
        await store.close();
      }
    })();
    // The first event of a seal's range, and the one after it.
    const range = sealEvents.find((seal) => seal.data.count >= 3)!;
    const index = sealed.findIndex((row) => row.position === range.data.fromPosition);
    const [target, next] = [sealed[index]!, sealed[index + 1]!];
    const file = tampered((db) => db.prepare('DELETE FROM events WHERE position = ?').run(target.position));
    const store: EventStore = openSqliteEventStore({ file });
    try {
      const events = await store.readAll();
      const problems: unknown[] = [];
      const seals = events.filter((event) => event.stream === SEALS_STREAM).map(toRecordedSeal);
      let served = false;
      const checker = new SealChecker(
        'ids',
        async () => (served ? [] : ((served = true), seals)),
        (problem) => problems.push(problem),
      );
      await checker.prepare(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
      // Renumber the positions as another store would: same order, other numbers.
      for (const event of events)
        checker.feed(
          { ...event, position: event.position * 1000 } as RecordedEvent,
          (event.metadata.hash as string) ?? eventHash(event),
        );
      await checker.finish();
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatchObject({ check: 'seal', position: next.position * 1000 });
      expect((seals[0]!.data as HistorySealedData).lastEventID).toBeTruthy();
    } finally {
      await store.close();
    }
  });

  it('given the history imported into a store that numbers events otherwise, when verified and sealed on, then old and new seals verify', async () => {
    const file = join(dir.path, 'export.jsonl');
    const storeFile = join(dir.path, 'shifted.sqlite');
    const source = openSqliteEventStore({ file: original });
    await exportEvents(source, file);
    await source.close();
    // A store whose positions start at 101: emptied, but its AUTOINCREMENT remembers.
    const filler = openSqliteEventStore({ file: storeFile });
    await filler.append(
      'filler-1',
      Array.from({ length: 100 }, () => ({ type: 'Filler', data: {} })),
      'no_stream',
    );
    await filler.close();
    const db = new Database(storeFile);
    db.exec('DELETE FROM events; DELETE FROM streams;');
    db.close();
    const raw = openSqliteEventStore({ file: storeFile });
    await importEvents(raw, file);
    expect((await raw.readAll({ maxCount: 1 }))[0]!.position).toBe(101);
    const imported = await verifyHistory({ eventStore: raw, ledger: null, assetScale: 2 });
    expect(imported.problems).toEqual([]);
    expect(imported.checked.unsealedEvents).toBe(0);

    const store = withHashChain(raw);
    const sealsBefore = (await raw.readStream(SEALS_STREAM)).length;
    const sealer = startSealer({ eventStore: store, every: 4 });
    try {
      for (let i = 0; i < 8; i++) await store.append(`after-${i % 3}`, [{ type: 'Happened', data: { i } }], 'any');
      await until(async () => (await raw.readStream(SEALS_STREAM)).length >= sealsBefore + 2);
    } finally {
      await sealer.stop();
    }
    const report = await verifyHistory({ eventStore: raw, ledger: null, assetScale: 2 });
    expect(report.problems).toEqual([]);
    expect(report.checked.unsealedEvents).toBe(0);
    await store.close();
  });
});
