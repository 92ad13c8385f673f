/**
 * CPU profiles of this process taken with the inspector while a load runs, summarized as CPU time per request:
 * self time by function and by component (the package or the part of src/ it is in). Used by bench:profile.
 */
import { Session } from 'node:inspector/promises';

interface ProfileNode {
  id: number;
  children?: number[];
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface CostLine {
  name: string;
  /** Microseconds of CPU per request. */
  usPerRequest: number;
  /** Share of the busy (non-idle) time. */
  share: number;
}

export interface ProfileSummary {
  wallMs: number;
  /** Time the thread was busy (not idle), ms. */
  busyMs: number;
  usPerRequest: number;
  byComponent: CostLine[];
  byFunction: CostLine[];
}

/** Profiles the main thread while `load` runs (sampling every 100 µs). */
export async function profileWhile<T>(load: () => Promise<T>): Promise<{ result: T; profile: Profile }> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
  try {
    const result = await load();
    const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: Profile };
    return { result, profile };
  } finally {
    session.disconnect();
  }
}

const COMPONENTS: Array<[RegExp, string]> = [
  [/node_modules\/better-sqlite3\//, 'better-sqlite3 (JS side)'],
  [
    /node_modules\/express\/|node_modules\/router\/|node_modules\/body-parser\/|node_modules\/raw-body\/|node_modules\/(send|finalhandler|on-finished|type-is|content-type|accepts|negotiator|mime-types|qs|iconv-lite|cookie|statuses|http-errors|depd|parseurl|path-to-regexp|debug|ms|vary|etag|fresh|range-parser|encodeurl|escape-html|proxy-addr|forwarded|ipaddr\.js|media-typer)\//,
    'express and its modules',
  ],
  [/node_modules\/zod\//, 'zod'],
  [/node_modules\/libphonenumber-js\//, 'libphonenumber-js'],
  [/node_modules\/decimal\.js\//, 'decimal.js'],
  [/node_modules\/pino|node_modules\/sonic-boom|node_modules\/thread-stream/, 'pino'],
  [/node_modules\/prom-client\//, 'prom-client'],
  [/node_modules\/tsx\//, 'tsx (module loader)'],
  [/node_modules\//, 'other packages'],
  [/\/src\/audit\//, 'src/audit (hash chain)'],
  [/\/src\/adapters\/sqlite\//, 'src/adapters/sqlite (stores)'],
  [/\/src\/commands\//, 'src/commands (deciders, pipeline)'],
  [/\/src\/http\/|\/src\/write-api\/|\/src\/read-api\/|\/src\/metrics\//, 'src/http, write-api, read-api, metrics'],
  [/\/src\/projections\//, 'src/projections'],
  [/\/src\//, 'src (other)'],
  [/^node:|^internal\//, 'Node.js (http, streams, net, crypto, timers)'],
  // Native functions (C++ bindings) have no script: SQLite statements (with their fsync), hashing, writes to sockets.
  [/^$/, 'native calls (SQLite statements and fsync, hashing, sockets)'],
];

function componentOf(frame: ProfileNode['callFrame']): string {
  if (frame.functionName === '(garbage collector)') return 'garbage collection';
  if (frame.functionName === '(program)') return 'V8 and native (program)';
  for (const [pattern, name] of COMPONENTS) if (pattern.test(frame.url)) return name;
  return 'other';
}

function lines(totals: Map<string, number>, requests: number, busyUs: number, top: number): CostLine[] {
  return [...totals]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, us]) => ({ name, usPerRequest: us / requests, share: us / busyUs }));
}

export function summarize(
  profile: Profile,
  requests: number,
  top = Number(process.env.BENCH_PROFILE_TOP ?? 12),
): ProfileSummary {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map<number, ProfileNode>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node);
  const label = (frame: ProfileNode['callFrame']) => {
    const file = frame.url.replace(/^.*\/(node_modules\/|src\/|bench\/)/, '$1');
    return `${frame.functionName || '(anonymous)'}${file ? ` ${file}` : ''}`;
  };
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const byComponent = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let busyUs = 0;
  for (const [id, us] of selfUs) {
    const frame = nodes.get(id)!.callFrame;
    // Idle, and the profiler's own work (stopping it serializes the profile), are not the server's.
    if (frame.functionName === '(idle)' || frame.url === 'node:inspector') continue;
    busyUs += us;
    const component = componentOf(frame);
    byComponent.set(component, (byComponent.get(component) ?? 0) + us);
    // A native function is named by its caller: which statement, hash or write it was.
    const caller = frame.url === '' && parents.get(id) ? ` ← ${label(parents.get(id)!.callFrame)}` : '';
    const fn = `${label(frame)}${caller}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
  }
  return {
    wallMs: (profile.endTime - profile.startTime) / 1000,
    busyMs: busyUs / 1000,
    usPerRequest: busyUs / requests,
    byComponent: lines(byComponent, requests, busyUs, 20),
    byFunction: lines(byFunction, requests, busyUs, top),
  };
}
