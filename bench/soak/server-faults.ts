import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { healthy } from './children.ts';
import { cli } from './cli.ts';
import type { Fleet } from './fleet.ts';
import type { SoakPostgres } from './postgres.ts';
import type { World } from './setup.ts';
import type { HealthProbe, ServerFault, SoakStats } from './stats.ts';
import { fmtInt, pause, sleep, waitUntil } from './util.ts';

/** After the server is started again, every process must answer /health 200 within this long, without a restart. */
export const RECOVERY_CAP_MS = 60_000;

/**
 * The PostgreSQL faults of `--store postgres`, at fixed shares of the load phase, one after the other: every
 * wallet-ops connection terminated (`terminations` times), an exclusive lock on the events table held past the
 * statement timeout (once), and the server stopped for `outageSeconds` and started again (once). During the
 * outage and until every process answers /health 200 again, `hold` keeps the killer's hands off, so that
 * /health can be judged on processes that were not restarted.
 */
export async function serverFaults(
  server: SoakPostgres,
  fleet: Fleet,
  stats: SoakStats,
  plan: { loadMs: number; outageSeconds: number; terminations: number; lockSeconds: number },
  hold: { held: boolean },
  signal: AbortSignal,
  log: (line: string) => void,
): Promise<void> {
  const steps: Array<{ share: number; run: () => Promise<void> }> = [];
  const terminationShares = [0.1, 0.3, 0.75, 0.9];
  for (let i = 0; i < plan.terminations; i++) {
    const share = terminationShares[i] ?? 0.1 + (0.8 * i) / plan.terminations;
    steps.push({ share, run: () => terminate(server, stats, log) });
  }
  if (plan.lockSeconds > 0) steps.push({ share: 0.2, run: () => lock(server, stats, plan.lockSeconds, log) });
  if (plan.outageSeconds > 0)
    steps.push({ share: 0.45, run: () => outage(server, fleet, stats, plan.outageSeconds, hold, log) });
  steps.sort((a, b) => a.share - b.share);
  for (const step of steps) {
    await pause(stats.loadStartedAt + step.share * plan.loadMs - Date.now(), signal);
    if (signal.aborted) return;
    try {
      await step.run();
    } catch (error) {
      stats.problem(
        `a PostgreSQL fault could not be inflicted: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }
}

async function terminate(server: SoakPostgres, stats: SoakStats, log: (line: string) => void): Promise<void> {
  const startedAt = Date.now();
  const terminated = await server.terminateAll();
  stats.serverFaults.push({
    kind: 'terminate',
    startedAt,
    endedAt: Date.now(),
    detail: `${terminated} connections terminated`,
  });
  log(`PostgreSQL: pg_terminate_backend on every wallet-ops connection: ${terminated} terminated`);
}

async function lock(
  server: SoakPostgres,
  stats: SoakStats,
  seconds: number,
  log: (line: string) => void,
): Promise<void> {
  const startedAt = Date.now();
  log(`PostgreSQL: es_events locked (EXCLUSIVE) for ${seconds} s`);
  const waiting = await server.holdAppendLock(seconds * 1000);
  stats.serverFaults.push({
    kind: 'lock',
    startedAt,
    endedAt: Date.now(),
    detail: `es_events locked ${seconds} s; up to ${waiting} sessions waited on a lock`,
  });
  log(`PostgreSQL: lock released (up to ${waiting} sessions waited on it)`);
}

async function outage(
  server: SoakPostgres,
  fleet: Fleet,
  stats: SoakStats,
  seconds: number,
  hold: { held: boolean },
  log: (line: string) => void,
): Promise<void> {
  hold.held = true;
  try {
    const startedAt = Date.now();
    const before = new Map(
      fleet.children.filter((child) => fleet.isSteady(child)).map((child) => [child, child.starts]),
    );
    log(`PostgreSQL: stopped for ${seconds} s`);
    await server.stopServer();
    await sleep(seconds * 1000 - (Date.now() - startedAt));
    await server.startServer();
    const endedAt = Date.now();
    const fault: ServerFault = {
      kind: 'outage',
      startedAt,
      endedAt,
      detail: `stopped ${((endedAt - startedAt) / 1000).toFixed(1)} s`,
    };
    stats.serverFaults.push(fault);
    log('PostgreSQL: started again; waiting for every process to answer /health 200');
    const recovered = await waitUntil(
      async () =>
        (
          await Promise.all(fleet.children.map(async (child) => !child.running || (await healthy(child.spec.port)).ok))
        ).every(Boolean),
      RECOVERY_CAP_MS,
      500,
    );
    fault.steady = [...before]
      .filter(([child, starts]) => child.starts === starts && fleet.isSteady(child))
      .map(([child]) => child.spec.name);
    fault.detail += recovered
      ? `; every process answered /health 200 ${((Date.now() - endedAt) / 1000).toFixed(1)} s after the start`
      : `; not every process answered /health 200 within ${RECOVERY_CAP_MS / 1000} s`;
    log(`PostgreSQL: ${fault.detail}`);
  } finally {
    hold.held = false;
  }
}

/**
 * Judges /health over the outage, from the health monitor's probes, for every process not restarted in the
 * window: while the server was down past the grace (CONSUMER_UNHEALTHY_AFTER_MS), its consumers could not run,
 * so it must have answered 503 at least once then (and never 200 from the grace plus a poll to the start);
 * after the start it must answer 200 again within RECOVERY_CAP_MS, in the same run of the process.
 */
export function judgeHealth(stats: SoakStats, children: string[], graceMs: number): string[] {
  const lines: string[] = [];
  for (const fault of stats.serverFaults.filter((f) => f.kind === 'outage')) {
    const lieFrom = fault.startedAt + graceMs + 2000;
    for (const child of children) {
      const probes = stats.healthProbes.filter(
        (p) => p.child === child && p.at >= fault.startedAt && p.at <= fault.endedAt + RECOVERY_CAP_MS,
      );
      const during = probes.filter((p) => p.at <= fault.endedAt);
      if (!fault.steady?.includes(child) || during.length === 0) {
        lines.push(
          `${child}: not judged (${fault.steady?.includes(child) ? 'no probe during the outage' : 'down or restarted around the outage'})`,
        );
        continue;
      }
      const lies = during.filter((p) => p.at >= lieFrom && p.status === 200);
      const first503 = during.find((p) => p.status === 503);
      const back = probes.find((p) => p.at > fault.endedAt && p.status === 200);
      const verdict: string[] = [];
      if (fault.endedAt > lieFrom && !first503)
        stats.problem(
          `/health of ${child} never answered 503 while PostgreSQL was down (${during.length} probes: ${statuses(during)})`,
        );
      if (lies.length > 0)
        stats.problem(
          `/health of ${child} answered 200 ${lies.length} time(s) while PostgreSQL had been down longer than the grace`,
        );
      if (!back)
        stats.problem(
          `/health of ${child} did not answer 200 again within ${RECOVERY_CAP_MS / 1000} s of PostgreSQL's start without a restart (${statuses(probes.filter((p) => p.at > fault.endedAt))})`,
        );
      verdict.push(
        first503
          ? `503 from ${((first503.at - fault.startedAt) / 1000).toFixed(1)} s into the outage (${first503.failing ?? '?'})`
          : 'no 503',
      );
      verdict.push(
        back
          ? `200 again ${((back.at - fault.endedAt) / 1000).toFixed(1)} s after the start, no restart`
          : 'no 200 again',
      );
      lines.push(`${child}: ${verdict.join('; ')}`);
    }
  }
  return lines;
}

function statuses(probes: HealthProbe[]): string {
  const counts = new Map<string, number>();
  for (const probe of probes)
    counts.set(String(probe.status ?? 'none'), (counts.get(String(probe.status ?? 'none')) ?? 0) + 1);
  return [...counts].map(([status, n]) => `${fmtInt(n)} x ${status}`).join(', ') || 'none';
}

/** 503 answers outside the outage, by process and failing consumer (the other faults, a store that blinked). */
export function otherUnhealthy(stats: SoakStats): string {
  const outages = stats.serverFaults.filter((f) => f.kind === 'outage');
  const counts = new Map<string, number>();
  for (const probe of stats.healthProbes) {
    if (probe.status !== 503 || outages.some((f) => probe.at >= f.startedAt && probe.at <= f.endedAt + RECOVERY_CAP_MS))
      continue;
    const key = `${probe.child} (${probe.failing ?? '?'})`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return (
    [...counts]
      .sort((a, b) => b[1] - a[1])
      .map(([key, n]) => `${n} x ${key}`)
      .join('; ') || 'none'
  );
}

/**
 * A webhook receiver in the soak's process (http://127.0.0.1, allowed by WEBHOOK_ALLOW_INSECURE_LOCALHOST),
 * and one approved endpoint per merchant on it: the webhooks process has deliveries to make through the faults.
 */
export async function webhookReceiver(world: World, stats: SoakStats): Promise<Server> {
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      stats.webhooks.deliveries += 1;
      try {
        stats.webhooks.events.add((JSON.parse(body) as { id: string }).id);
      } catch {
        // Counted as a delivery all the same.
      }
      response.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  for (const merchant of world.merchants) {
    const { endpointID } = await cli(world.dataDir, [
      'webhook',
      'add',
      '--as',
      merchant.makerEmail,
      '--url',
      url,
      '--events',
      'operation.completed,operation.failed,payment.received',
    ]);
    await cli(world.dataDir, ['webhook', 'approve', endpointID, '--as', merchant.checkerEmail]);
  }
  return server;
}
