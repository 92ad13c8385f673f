/**
 * Projection rebuild throughput on the embedded store:
 *   npm run bench:rebuild                      (writes the "Rebuild" section of docs/benchmarks.md)
 *   BENCH_EVENTS=100000 npm run bench:rebuild  (a quick check)
 * Generates BENCH_EVENTS events (default 1,000,000) of a realistic history: parties onboarded, then operations
 * of every type requested, approved, submitted and completed with their wallet movements, some rejected or
 * failed with their holds released, over a few thousand parties. They are appended with appendMulti in large
 * batches into a temporary embedded store. Then every projection is rebuilt with rebuildProjection (what
 * `projections rebuild` runs), beside the floor of any rebuild measured in the same run: reading the events
 * with readAll pages of the same size, all of them and with each projection's own filter.
 */
import { openStores } from '../src/adapters/open-stores.ts';
import type { EventFilter, EventStore } from '../src/ports/event-store.ts';
import { allProjections } from '../src/projections/index.ts';
import { rebuildProjection, rebuildProjections } from '../src/projections/rebuild.ts';
import { tempDir } from '../test/support/temp-dir.ts';
import { APPEND_BATCH_EVENTS, DISTRIBUTORS, generate, INDIVIDUALS, MERCHANTS } from './support/history.ts';
import { machineNote, writeBenchSection } from './support/report.ts';

const TARGET_EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
/** The page size the rebuild reads with (src/projections/rebuild.ts). */
const PAGE = 20_000;
const HEADING = '## Rebuild (npm run bench:rebuild)';
/** Events applied per second that a rebuild should reach on the embedded store. */
const AIM = 100_000;

// ---- the measurements -------------------------------------------------------------------------------------

/** The floor: readAll pages of PAGE events from the start to the head, as a rebuild reads them, nothing applied. */
async function readFloor(store: EventStore, filter?: EventFilter): Promise<{ events: number; seconds: number }> {
  const started = performance.now();
  const head = await store.headPosition();
  let position = 0;
  let events = 0;
  for (;;) {
    const page = await store.readAll({
      fromPosition: position + 1,
      toPosition: head,
      maxCount: PAGE,
      ...(filter ? { filter } : {}),
    });
    events += page.length;
    if (page.length < PAGE) break;
    position = page.at(-1)!.position;
  }
  return { events, seconds: (performance.now() - started) / 1000 };
}

const cpuSeconds = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1e6;
};
const rate = (events: number, seconds: number) => Math.round(events / seconds).toLocaleString('en-US');
const fmt = (n: number) => n.toLocaleString('en-US');

async function main(): Promise<void> {
  const started = performance.now();
  const dir = tempDir('rebuild-bench-');
  const stores = await openStores({ dataDir: dir.path });
  try {
    console.log(`bench:rebuild: generating ${fmt(TARGET_EVENTS)} events`);
    const generated = await generate(stores.eventStore, TARGET_EVENTS);
    console.log(
      `appended ${fmt(generated.events)} events (${fmt(generated.operations)} operations) in ${generated.seconds.toFixed(1)} s`,
    );

    const all = await readFloor(stores.eventStore);
    console.log(`readAll floor: ${fmt(all.events)} events in ${all.seconds.toFixed(2)} s`);
    const rows: string[] = [];
    let rebuildSeconds = 0;
    let applied = 0;
    for (const projection of allProjections(2)) {
      const floor = await readFloor(stores.eventStore, { eventTypes: [...projection.eventTypes] });
      const result = await rebuildProjection(stores, projection);
      if (result.events !== floor.events)
        throw new Error(`${projection.name}: rebuilt ${result.events} events, the filter selects ${floor.events}`);
      rebuildSeconds += result.seconds;
      applied += result.events;
      console.log(
        `${projection.name}: ${fmt(result.events)} events in ${result.seconds.toFixed(2)} s; filtered read floor ${floor.seconds.toFixed(2)} s`,
      );
      const perSecond = result.events / result.seconds;
      rows.push(
        `| ${projection.name} | ${fmt(result.events)} | ${result.seconds.toFixed(2)} | ${rate(result.events, result.seconds)} | ${rate(floor.events, floor.seconds)} | ${floor.events === 0 ? '' : `${Math.round((100 * perSecond) / (floor.events / floor.seconds))}%`} | ${perSecond >= AIM ? 'met' : 'not met'} |`,
      );
    }
    // What `wallet-ops projections rebuild` does: all of them in one pass over the history.
    const count = allProjections(2).length;
    const cpuBefore = process.cpuUsage();
    const union = await readFloor(stores.eventStore, {
      eventTypes: [...new Set(allProjections(2).flatMap((p) => p.eventTypes))],
    });
    const cpuFloor = cpuSeconds(cpuBefore);
    // The process's CPU time as well: on a shared machine it moves less than the wall clock. Taken at the last
    // page's progress report, after its commit and before the promotes, as the one-pass seconds are.
    const cpuStart = process.cpuUsage();
    let cpuOnePass = 0;
    const onePass = await rebuildProjections(stores, allProjections(2), () => (cpuOnePass = cpuSeconds(cpuStart)));
    const onePassSeconds = onePass[0]!.seconds;
    console.log(
      `all ${count} in one pass: ${onePassSeconds.toFixed(2)} s; union read floor ${union.seconds.toFixed(2)} s; CPU ${cpuOnePass.toFixed(2)} s vs ${cpuFloor.toFixed(2)} s`,
    );
    const section = [
      HEADING,
      '',
      machineNote(),
      `${fmt(generated.events)} events of ${fmt(generated.operations)} operations (all seven types; 85% completed, 7% rejected, 5% failed, 3% pending) over`,
      `${DISTRIBUTORS} distributors, ${MERCHANTS} merchants and ${INDIVIDUALS} individuals, with their holds, wallet movements, volume reservations and`,
      `onboarding events, appended with appendMulti in batches of ${fmt(APPEND_BATCH_EVENTS)} events (${generated.seconds.toFixed(0)} s, ${rate(generated.events, generated.seconds)} events/s) into a temporary embedded store.`,
      `Each projection is rebuilt with rebuildProjection (readAll pages of ${PAGE} with the projection's type filter, folded into documents held in memory, committed to a shadow collection every 100,000 events read, promote).`,
      'The floor is the same paged readAll without applying anything: no rebuild can be faster.',
      '',
      `| projection | events applied | seconds | events/s | floor: its filtered readAll, events/s | vs floor | aim (${fmt(AIM)}/s) |`,
      '|---|---:|---:|---:|---:|---:|---|',
      ...rows,
      `| all ${count}, one after the other | ${fmt(applied)} | ${rebuildSeconds.toFixed(2)} | ${rate(applied, rebuildSeconds)} | | | ${applied / rebuildSeconds >= AIM ? 'met' : 'not met'} |`,
      `| **all ${count} in one pass (projections rebuild), per store event** | ${fmt(generated.events)} in the store, ${fmt(union.events)} read, ${fmt(applied)} applied | ${onePassSeconds.toFixed(2)} | ${rate(generated.events, onePassSeconds)} | ${rate(union.events, union.seconds)} | ${Math.round((100 * union.seconds) / onePassSeconds)}% | ${generated.events / onePassSeconds >= AIM ? 'met' : 'not met'} |`,
      `| floor: readAll of every event, no filter | ${fmt(all.events)} | ${all.seconds.toFixed(2)} | ${rate(all.events, all.seconds)} | | | |`,
      '',
      `Rebuilding all ${count} read models in one pass (what \`wallet-ops projections rebuild\` does) takes ${onePassSeconds.toFixed(1)} s for a store of ${fmt(generated.events)} events: ${rate(generated.events, onePassSeconds)} store events/s.`,
      `CPU time of the process (user + system): the union floor ${cpuFloor.toFixed(2)} s, the one pass ${cpuOnePass.toFixed(2)} s: ${Math.round((100 * cpuFloor) / cpuOnePass)}% of the floor's rate by CPU.`,
      `Whole run: ${((performance.now() - started) / 1000).toFixed(0)} s.`,
      '',
    ].join('\n');
    writeBenchSection(HEADING, section);
    console.log(section);
  } finally {
    await stores.close();
    dir.cleanup();
  }
}

await main();
