/**
 * What one page of the projections costs the SQLite read store, in this process alone: every projection folds the
 * page's events and commits its writes with its checkpoint in the same turn (one group commit), as the runners of
 * `npm start` do, on a read store seeded like bench:system's (10 distributors, `seed` operations each).
 *   node --import tsx bench/read-store-page.ts [pages=2000] [creates=1] [seed=100] [runs=3] [dir=/tmp] [trees=/a,/b]
 * A page holds `creates` creates (OperationRequested + FundsHeld of a cash-in to an individual, as bench:system
 * sends). Prints per create: the CPU of this process (user + system), the WAL frames written into the read store's
 * file, by table and index, and its commits. `trees`: the read store and projections of each source tree, run in
 * turn (runs of each, interleaved), for an A/B on a shared machine.
 */
import { join, resolve } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { StreamAppend } from '../src/ports/event-store.ts';
import type { ReadStore } from '../src/ports/read-store.ts';
import type { Projection, ProjectedEvent } from '../src/projections/projection.ts';
import { tempDir } from '../test/support/temp-dir.ts';
import { operationEvents } from './support/read-system.ts';
import { pinWalFrames } from './support/wal-frames.ts';

const args = new Map(
  process.argv.slice(2).map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] as [string, string]),
);
const PAGES = Number(args.get('pages') ?? 2000);
const CREATES = Number(args.get('creates') ?? 1);
const SEED = Number(args.get('seed') ?? 100);
const RUNS = Number(args.get('runs') ?? 3);
const DISTRIBUTORS = 10;
const trees = (args.get('trees') ?? resolve(import.meta.dirname, '..')).split(',');

interface Tree {
  root: string;
  openSqliteReadStore(options: { file: string }): ReadStore;
  allProjections(assetScale: number): Projection[];
  applyBatch(
    readStore: ReadStore,
    projection: Projection,
    events: ProjectedEvent[],
    target: { collection: string; checkpoint: string; expected?: number | null; generation?: number },
  ): Promise<number>;
}

async function load(root: string): Promise<Tree> {
  const store = (await import(join(root, 'src/adapters/sqlite/sqlite-read-store.ts'))) as Pick<
    Tree,
    'openSqliteReadStore'
  >;
  const index = (await import(join(root, 'src/projections/index.ts'))) as Pick<Tree, 'allProjections'>;
  const runner = (await import(join(root, 'src/projections/projection-runner.ts'))) as Pick<Tree, 'applyBatch'>;
  return { root, ...store, ...index, ...runner };
}

const distributors = Array.from({ length: DISTRIBUTORS }, (_, d) => ({
  id: `dst_${randomUUID().replaceAll('-', '')}`,
  name: `Distributor ${d}`,
  shortCode: String(1000 + d),
}));
const t0 = Date.UTC(2026, 0, 1);
let position = 0;
/** A create as bench:system sends it: a pending cash-in to an individual, and its hold. */
function createEvents(i: number, pending: boolean): ProjectedEvent[] {
  const distributor = distributors[i % DISTRIBUTORS]!;
  const append: StreamAppend = operationEvents(pending ? i * 10 : i, distributor, new Date(t0 + i * 1000));
  const events = append.events.map((event) => ({
    type: event.type,
    data: event.data,
    position: ++position,
    createdAt: new Date(t0 + i * 1000).toISOString(),
  }));
  const requested = events[0]!.data as { operationID: string; amount: string };
  if (!pending) return events;
  return [
    events[0]!,
    {
      type: 'FundsHeld',
      data: {
        wallet: { kind: 'distributor', id: distributor.id },
        operationID: requested.operationID,
        amount: requested.amount,
      },
      position: ++position,
      createdAt: events[0]!.createdAt,
    },
  ];
}

/** One page to every projection whose events it holds, all committed in the same turn, as the runners do. */
async function commitPage(tree: Tree, store: ReadStore, projections: Projection[], page: ProjectedEvent[]) {
  await Promise.all(
    projections.map((projection) => {
      const events = page.filter((event) => projection.eventTypes.includes(event.type));
      if (events.length === 0) return undefined;
      const expected = checkpoints.get(projection.name) ?? null;
      checkpoints.set(projection.name, events.at(-1)!.position);
      return tree.applyBatch(store, projection, events, {
        collection: projection.collection.name,
        checkpoint: projection.name,
        expected,
        generation: 0,
      });
    }),
  );
}
const checkpoints = new Map<string, number>();

async function measure(tree: Tree, frames: boolean): Promise<number> {
  if (args.get('dir')) process.env.TMPDIR = args.get('dir');
  const dir = tempDir('read-store-page-');
  const file = join(dir.path, 'read-models.sqlite');
  const store = tree.openSqliteReadStore({ file });
  const projections = tree.allProjections(2);
  checkpoints.clear();
  try {
    await store.defineCollections(projections.map((p) => p.collection));
    let i = 0;
    // The seeded history: completed operations, in pages of 100.
    for (let n = 0; n < SEED * DISTRIBUTORS; n += 100)
      await commitPage(tree, store, projections, Array.from({ length: 100 }, () => createEvents(++i, false)).flat());
    const pages = Array.from({ length: PAGES }, () =>
      Array.from({ length: CREATES }, () => createEvents(++i, true)).flat(),
    );
    // A write of its own first: a reader of a fully checkpointed WAL would not hold it (see create-cpu.ts).
    await store.commit([], { projection: 'bench', position: 1 });
    const count = frames ? pinWalFrames(file) : undefined;
    const started = process.cpuUsage();
    for (const page of pages) await commitPage(tree, store, projections, page);
    const used = process.cpuUsage(started);
    const cpuMs = (used.user + used.system) / 1000 / (PAGES * CREATES);
    const counted = count?.();
    if (counted) {
      const per = (n: number) => (n / (PAGES * CREATES)).toFixed(2);
      console.log(`  ${per(counted.frames)} WAL frames, ${per(counted.commits)} commits per create`);
      for (const [owner, n] of [...counted.byOwner].sort((a, b) => b[1] - a[1]))
        console.log(`    ${per(n).padStart(6)}  ${owner}`);
    }
    return cpuMs;
  } finally {
    await store.close();
    dir.cleanup();
  }
}

const loaded = await Promise.all(trees.map(load));
const results = new Map<string, number[]>(trees.map((t) => [t, []]));
for (const tree of loaded) {
  console.log(`${tree.root}: frames (one run, not timed)`);
  await measure(tree, true);
}
for (let run = 0; run < RUNS; run++)
  for (const tree of loaded) results.get(tree.root)!.push(await measure(tree, false));
console.log(`${PAGES} pages of ${CREATES} create(s), ${SEED * DISTRIBUTORS} operations seeded; CPU ms per create:`);
for (const [root, values] of results)
  console.log(`  ${root}: ${values.map((v) => v.toFixed(3)).join(' ')} (median ${median(values).toFixed(3)})`);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
