import { readFileSync } from 'node:fs';
import { Child, healthy, type ChildSpec, type ExitInfo } from './children.ts';
import type { SoakStats } from './stats.ts';
import { pause, pick, randomBetween, sleep } from './util.ts';

/** How long a start may take before /health answers (generous: on 2 busy cores a start can take half a minute). */
const START_TIMEOUT_MS = 90_000;
const RESTART_ATTEMPTS = 3;
/** The killer leaves at least one child up: at most this many are down (restarting) at once. */
const MAX_DOWN = 2;
/**
 * How the health monitor polls, and how many consecutive failed /health polls make the soak, like an
 * orchestrator's liveness probe, restart the process. The PostgreSQL soak polls every second (its probes are
 * the record of /health through the faults) and waits 45 s: a process must come back by itself from a
 * server outage, without a restart.
 */
export interface HealthPolicy {
  pollMs: number;
  failuresToRestart: number;
}
export const DEFAULT_HEALTH_POLICY: HealthPolicy = { pollMs: 2000, failuresToRestart: 3 };
/** More unexpected exits than this within a minute is a crash loop: restarts are then spaced out. */
const CRASH_LOOP_EXITS = 5;

/** The last lines of a log file, for incident reports. */
export function logTail(file: string, lines = 8): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** The consumers a 503 of /health names as failing (src/health.ts), or its status when it names none. */
function failingConsumers(body: string): string {
  try {
    const parsed = JSON.parse(body) as { status?: string; failing?: Array<{ consumer: string }> };
    const names = (parsed.failing ?? []).map((entry) => entry.consumer);
    return names.length > 0 ? names.join(', ') : (parsed.status ?? '?');
  } catch {
    return body.slice(0, 80);
  }
}

/**
 * The child processes and their supervision: start, restart after a SIGKILL (waiting for /health), restart
 * after an exit nobody asked for or a /health that keeps failing (recorded as incidents), the killer, and the
 * graceful stop at the end. Operations on one child are serialized.
 */
export class Fleet {
  private readonly stats: SoakStats;
  private readonly log: (line: string) => void;
  private readonly health: HealthPolicy;
  readonly children: Child[];
  private stopping = false;
  private readonly locks = new Map<Child, Promise<unknown>>();
  private readonly exitTimes = new Map<Child, number[]>();
  /** Children with a kill or a restart queued or under way: the killer and the health monitor leave them alone. */
  private readonly pendingLocks = new Set<Child>();

  constructor(
    specs: ChildSpec[],
    dataDir: string,
    stats: SoakStats,
    log: (line: string) => void,
    health: HealthPolicy = DEFAULT_HEALTH_POLICY,
  ) {
    this.stats = stats;
    this.log = log;
    this.health = health;
    this.children = specs.map((spec) => new Child(spec, dataDir, (child, exit) => this.unexpectedExit(child, exit)));
  }

  get api(): Child {
    return this.children.find((child) => child.spec.kind === 'api')!;
  }

  /** Running, with no kill or restart queued or under way. */
  isSteady(child: Child): boolean {
    return child.running && !this.pendingLocks.has(child);
  }

  /**
   * The base URL of an API process for the next request, as a load balancer with health checks picks one: a
   * steady one at random, or any when none is.
   */
  apiTarget(): string {
    const steady = this.apis.filter((api) => this.isSteady(api));
    return `http://127.0.0.1:${pick(steady.length > 0 ? steady : this.apis).spec.port}`;
  }

  /** Every API process (the PostgreSQL soak runs two behind the clients). */
  get apis(): Child[] {
    return this.children.filter((child) => child.spec.kind === 'api');
  }

  /** Starts every child; one that does not answer /health is started again (a start can fail on an injected fault). */
  async startAll(): Promise<void> {
    for (const child of this.children) child.start();
    for (const child of this.children) {
      if (await child.waitHealthy(START_TIMEOUT_MS)) continue;
      this.stats.notes.push(
        `${child.spec.name}: no /health within ${START_TIMEOUT_MS / 1000} s of the first start; started again`,
      );
      if (!(await this.supervise(child, 'no /health at the first start')))
        throw new Error(`${child.spec.name} never answered /health:\n${logTail(child.logFile, 20)}`);
    }
  }

  /** Serializes what is done to one child (a kill and its restart, a supervisor restart). */
  private withLock<T>(child: Child, action: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(child) ?? Promise.resolve();
    const next = previous.then(action, action);
    this.locks.set(
      child,
      next.catch(() => undefined),
    );
    return next;
  }

  /** Starts the child again (after killing what is left of it) until /health answers; false if it never does. */
  private async restart(child: Child, reason: string): Promise<boolean> {
    const started = performance.now();
    for (let attempt = 1; attempt <= RESTART_ATTEMPTS; attempt++) {
      if (this.stopping) return false;
      if (child.running) await child.kill();
      child.start();
      if (await child.waitHealthy(START_TIMEOUT_MS)) {
        this.stats.restarts[child.spec.kind] += 1;
        this.stats.restartMs[child.spec.kind].push(performance.now() - started);
        return true;
      }
      this.log(`${child.spec.name}: no /health ${attempt} time(s) after a restart (${reason})`);
    }
    const failure = {
      child: child.spec.name,
      at: new Date().toISOString(),
      detail: `no /health after ${RESTART_ATTEMPTS} restarts (${reason})`,
      logTail: logTail(child.logFile),
    };
    this.stats.restartFailures.push(failure);
    this.stats.problem(`${failure.child} could not be restarted: ${failure.detail}`);
    return false;
  }

  private supervise(child: Child, reason: string): Promise<boolean> {
    this.pendingLocks.add(child);
    return this.withLock(child, () => this.restart(child, reason)).finally(() => this.pendingLocks.delete(child));
  }

  /** An exit the soak did not cause: recorded with the end of the log, then restarted (spaced out in a crash loop). */
  private unexpectedExit(child: Child, exit: ExitInfo): void {
    const now = Date.now();
    const times = [...(this.exitTimes.get(child) ?? []), now].filter((t) => now - t < 60_000);
    this.exitTimes.set(child, times);
    const incident = {
      child: child.spec.name,
      at: new Date(now).toISOString(),
      detail: `exited by itself: code ${exit.code}, signal ${exit.signal}`,
      logTail: logTail(child.logFile),
    };
    this.stats.unexpectedExits.push(incident);
    this.log(`${child.spec.name} ${incident.detail}`);
    if (this.stopping) return;
    const crashLoop = times.length > CRASH_LOOP_EXITS;
    if (crashLoop && times.length === CRASH_LOOP_EXITS + 1)
      this.stats.problem(
        `${child.spec.name}: crash loop, ${times.length} unexpected exits within a minute, at ${incident.at}; last: ${incident.logTail.split('\n').at(-1)}`,
      );
    void sleep(crashLoop ? 10_000 : 500).then(() => this.supervise(child, 'unexpected exit'));
  }

  /**
   * SIGKILLs a random running child every few seconds, until the signal aborts. Each victim is started again
   * in the background (its /health awaited), so the next kill may come while it restarts: at times two
   * children are down at once (never all three). No kill while `held()` says so (a server outage, during
   * which /health is being judged).
   */
  async killer(
    signal: AbortSignal,
    minSeconds: number,
    maxSeconds: number,
    held: () => boolean = () => false,
  ): Promise<void> {
    while (!signal.aborted) {
      await pause(randomBetween(minSeconds, maxSeconds) * 1000, signal);
      if (signal.aborted) return;
      if (held()) continue;
      const candidates = this.children.filter((child) => child.running && !this.pendingLocks.has(child));
      if (candidates.length === 0 || this.pendingLocks.size >= MAX_DOWN) continue;
      const victim = pick(candidates);
      this.pendingLocks.add(victim);
      void this.withLock(victim, async () => {
        if (!victim.running) return;
        await victim.kill();
        this.stats.kills[victim.spec.kind] += 1;
        await this.restart(victim, 'SIGKILL by the soak');
      }).finally(() => this.pendingLocks.delete(victim));
    }
  }

  /** Polls every child's /health; one that keeps failing is restarted, as an orchestrator would. */
  async healthMonitor(signal: AbortSignal): Promise<void> {
    const failures = new Map<Child, { count: number; last: string }>();
    while (!signal.aborted) {
      await pause(this.health.pollMs, signal);
      const polled = await Promise.all(
        this.children.map(async (child) => {
          if (signal.aborted || this.pendingLocks.has(child) || !child.running) return { child, health: undefined };
          const starts = child.starts;
          const health = await healthy(child.spec.port, 2000);
          this.stats.healthProbes.push({
            at: Date.now(),
            child: child.spec.name,
            status: health.status,
            starts,
            ...(health.status === 503 ? { failing: failingConsumers(health.body) } : {}),
          });
          return { child, health };
        }),
      );
      for (const { child, health } of polled) {
        if (!health) {
          failures.delete(child);
          continue;
        }
        if (health.ok) {
          failures.delete(child);
          continue;
        }
        const seen = {
          count: (failures.get(child)?.count ?? 0) + 1,
          last: `${health.status ?? 'no answer'} ${health.body.slice(0, 400)}`,
        };
        failures.set(child, seen);
        if (seen.count < this.health.failuresToRestart) continue;
        failures.delete(child);
        this.stats.unhealthyRestarts.push({
          child: child.spec.name,
          at: new Date().toISOString(),
          detail: `/health failed ${seen.count} times in a row: ${seen.last}`,
          logTail: logTail(child.logFile),
        });
        this.log(`${child.spec.name}: /health failing (${seen.last.slice(0, 120)}); restarting it`);
        void this.supervise(child, 'failing /health');
      }
    }
  }

  /** Waits until no restart is in progress and every child answers /health (after the killer stopped). */
  async settle(timeoutMs = START_TIMEOUT_MS): Promise<boolean> {
    await Promise.all([...this.locks.values()]);
    for (const child of this.children) {
      if (!child.running) await this.supervise(child, 'down when the load ended');
      if (!(await child.waitHealthy(timeoutMs))) return false;
    }
    return true;
  }

  /** SIGTERM to every child; each must exit with code 0. */
  async stopAll(): Promise<void> {
    this.stopping = true;
    await Promise.all([...this.locks.values()]);
    const exits = await Promise.all(
      this.children.map(async (child) => ({ child: child.spec.name, ...(await child.stop()) })),
    );
    this.stats.gracefulStops.push(...exits);
  }

  /** Last resort (the soak itself failed): no child outlives it. */
  killAllNow(): void {
    this.stopping = true;
    for (const child of this.children) if (child.running) void child.kill();
  }
}
