/**
 * The load generator, run in its own process so that it does not share an event loop with the server it
 * measures: `node --import tsx bench/support/load-generator.ts '<json spec>'` prints one JSON result.
 */
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';

export interface LoadSpec {
  url: string;
  connections: number;
  durationSeconds: number;
  /** Stop after this many requests instead (the duration is then a bound): a fixed amount of work to time the server's CPU over. */
  amount?: number;
  /** Requests cycled in order across all connections. */
  requests: Array<{ method: 'GET' | 'POST'; path: string; headers?: Record<string, string>; body?: string }>;
}

export interface LoadResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  total: number;
  non2xx: number;
  errors: number;
}

const argument = process.argv[2] ?? '{}';
// `@file`: the spec in a file (run-load.ts passes long ones so).
const spec = JSON.parse(argument.startsWith('@') ? readFileSync(argument.slice(1), 'utf8') : argument) as LoadSpec;
let next = 0;
const result = await autocannon({
  url: spec.url,
  connections: spec.connections,
  duration: spec.durationSeconds,
  ...(spec.amount === undefined ? {} : { amount: spec.amount }),
  requests: [
    {
      setupRequest: (request) => {
        const chosen = spec.requests[next++ % spec.requests.length]!;
        return {
          ...request,
          method: chosen.method,
          path: chosen.path,
          headers: chosen.headers ?? {},
          ...(chosen.body === undefined ? {} : { body: chosen.body }),
        };
      },
    },
  ],
});
const output: LoadResult = {
  requestsPerSecond: result.requests.average,
  p50Ms: result.latency.p50,
  p99Ms: result.latency.p99,
  total: result.requests.total,
  non2xx: result.non2xx,
  errors: result.errors,
};
process.stdout.write(`${JSON.stringify(output)}\n`);
