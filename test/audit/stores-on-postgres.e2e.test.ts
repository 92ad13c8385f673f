/**
 * The operator CLI on PostgreSQL stores (this file's test systems are on PostgreSQL: runOnPostgres): a system with the
 * executor runs operations end to end on its database, then `audit verify` passes on that store, `events export`
 * and `events import` carry the history to a fresh database where it verifies again, and `projections rebuild`
 * builds there the read models the original's rebuild builds; `projections status` then reports them current.
 * (`projections rebuild` while serving and `projections status` against a live server: read-api/rebuild.e2e.)
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openReadStore } from '../../src/adapters/open-stores.ts';
import type { AuditReport } from '../../src/audit/verify.ts';
import { allProjections } from '../../src/projections/index.ts';
import { runCli, runCliJson } from '../support/cli.ts';
import { approve, issue, waitUntilSettled } from '../support/executor-system.ts';
import { freshPostgresDatabase } from '../support/postgres-server.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';
import { knownStoreEnv, runOnPostgres } from '../support/test-stores.ts';
import { create, keyed, newPhone, type Keyed } from '../executor/support.ts';
import { snapshotDataDir } from './support.ts';

runOnPostgres();

describe('the operator CLI on PostgreSQL stores', () => {
  const work = tempDir('cli-on-postgres-');
  let sys: TestSystem;
  let distributor: Keyed;
  let head: number;

  /** `audit verify --json` on a data directory (and whatever stores `env` names): the exit code and the report. */
  async function verify(
    dataDir: string,
    env: Record<string, string> = {},
  ): Promise<{ code: number; report: AuditReport }> {
    const result = await runCli(['audit', 'verify', '--json', '--data-dir', dataDir], env);
    try {
      return { code: result.code, report: JSON.parse(result.stdout) as AuditReport };
    } catch {
      throw new Error(`audit verify printed no report (exit ${result.code}): ${result.stderr}`);
    }
  }

  beforeAll(async () => {
    sys = await startTestSystem();
    distributor = await keyed(sys, 'distributor');
    const merchant = await keyed(sys, 'merchant');
    const phone = await sys.individual(newPhone());
    expect((await waitUntilSettled(sys, await issue(sys, distributor.ref, '1000'))).status).toBe('completed');
    for (const body of [
      { operationType: 'cash-in', amount: '300', phoneTo: phone },
      { operationType: 'cash-in', amount: '200', merchantToShortCode: merchant.shortCode },
    ]) {
      const operationID = await create(sys, distributor, body);
      await approve(sys, distributor, operationID);
      expect((await waitUntilSettled(sys, operationID)).status).toBe('completed');
    }
    head = await sys.system.stores.eventStore.headPosition();
  });
  afterAll(async () => {
    await sys?.close();
    work.cleanup();
  });

  it('given a history made on PostgreSQL, when audit verify runs on that store, then every check passes, the ledger reconciled', async () => {
    // On the server, not in files of the data directory.
    expect(existsSync(join(sys.config.DATA_DIR, 'events.sqlite'))).toBe(false);
    const { code, report } = await verify(sys.config.DATA_DIR);
    expect(report.problems).toEqual([]);
    expect(code).toBe(0);
    expect(report.checked.events).toBe(head);
  });

  it("when exported, imported into a fresh database and rebuilt there, then the copy verifies, its read models are the original's rebuilt ones, and its projections are current", async () => {
    const file = join(work.path, 'history.jsonl');
    const exported = await runCliJson<{ events: number; lastPosition: number }>([
      'events',
      'export',
      '--out',
      file,
      '--data-dir',
      sys.config.DATA_DIR,
    ]);
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    // One line per event, then the end marker with the count (src/audit/export-import.ts).
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ endOfExport: { events: exported.events } });
    expect(exported.events).toBe(lines.length - 1);
    expect(exported.lastPosition).toBeGreaterThanOrEqual(head);

    // Another deployment: a fresh database, a data directory holding only the (embedded) ledger, which an export does not carry.
    const copyDir = join(work.path, 'copy');
    const copy = { ...knownStoreEnv(sys.config.DATA_DIR), POSTGRES_URL: await freshPostgresDatabase() };
    const imported = await runCliJson<{ events: number }>(
      ['events', 'import', '--in', file, '--data-dir', copyDir],
      copy,
    );
    expect(imported.events).toBe(exported.events);
    snapshotDataDir(sys.config.DATA_DIR, copyDir, ['ledger.sqlite']);
    const { code, report } = await verify(copyDir, copy);
    expect(report.problems).toEqual([]);
    expect(code).toBe(0);
    expect(report.checked.events).toBe(exported.events);

    // Rebuilt on both sides (balances' updatedAt is the commit time, which neither side can keep).
    const original = knownStoreEnv(sys.config.DATA_DIR);
    await runCliJson(['projections', 'rebuild', '--data-dir', sys.config.DATA_DIR], original);
    await runCliJson(['projections', 'rebuild', '--data-dir', copyDir], copy);
    const models = async (env: Record<string, string>) => {
      const readStore = await openReadStore({
        DATA_DIR: copyDir,
        READ_STORE: 'postgres',
        POSTGRES_URL: env.POSTGRES_URL!,
        MONGODB_DATABASE: 'unused',
      });
      try {
        await readStore.defineCollections(allProjections(2).map((p) => p.collection));
        const out: Record<string, unknown[]> = {};
        for (const projection of allProjections(2)) {
          const docs = (await readStore.find(projection.collection.name)).sort((x, y) => (x.id < y.id ? -1 : 1));
          out[projection.name] = docs.map((doc) =>
            projection.name === 'balances' ? { ...doc, updatedAt: undefined } : doc,
          );
        }
        return out;
      } finally {
        await readStore.close();
      }
    };
    const [before, after] = await Promise.all([models(original), models(copy)]);
    expect(after.balances!.length).toBeGreaterThanOrEqual(4);
    expect(after).toEqual(before);

    type Status = {
      checkpoints: Array<{ projection: string; position: number | null; head: number; lagEvents: number }>;
    };
    const { checkpoints } = await runCliJson<Status>(
      ['projections', 'status', '--server', 'http://127.0.0.1:9', '--data-dir', copyDir],
      copy,
    );
    const projections = checkpoints.filter((c) => allProjections(2).some((p) => p.name === c.projection));
    expect(projections).toHaveLength(allProjections(2).length);
    for (const status of projections)
      expect(status, status.projection).toMatchObject({
        position: expect.any(Number),
        head: exported.lastPosition,
        lagEvents: 0,
      });
  });
});
