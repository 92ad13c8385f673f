import { stat, writeFile } from 'node:fs/promises';

/** The logger's shape this needs (src/shared reaches only ports). */
export interface SkewLogger {
  warn(object: object, message: string): void;
  debug(object: object, message: string): void;
}

/**
 * This process's clock against the store's. Nothing in wallet-ops decides on a comparison of two hosts' clocks
 * (leases watch heartbeats with the monotonic clock, idempotency records do not expire by a clock), but
 * timestamps shown to people, retries' due times, key expiry and the volume day still come from the local
 * clock: a skew beyond a few seconds is worth an operator's look (NTP stopped, a VM resumed). The store's
 * time is read where a server has one (PostgreSQL's statement_timestamp()); on the embedded store, whose
 * processes share one machine, it is the time the kernel (or a network file system's server) stamps on a file
 * of the data directory that this process writes (`fileTime`): a process's shifted clock (libfaketime, a
 * clock set by hand) does not move it. The volume day is decided on the store's time (`CorrectedClock`).
 */
export interface ClockSkewOptions {
  /** The store's time now (one round trip). */
  storeNow: () => Promise<Date>;
  clock: () => Date;
  /** A skew beyond this (either way) is logged as a warning. */
  warnMs: number;
  intervalMs: number;
  logger: SkewLogger;
  /** Told every measure, in seconds (local minus store: positive when this clock runs ahead). */
  report?: (skewSeconds: number) => void;
}

/** Local minus store time (ms), the local time taken at the middle of the round trip. */
export async function measureClockSkew(storeNow: () => Promise<Date>, clock: () => Date): Promise<number> {
  const before = clock().getTime();
  const store = (await storeNow()).getTime();
  const after = clock().getTime();
  return Math.round((before + after) / 2 - store);
}

/**
 * Measures at once and then every intervalMs; a store that does not answer is skipped (its health says so). Returns the
 * stop.
 */
export function watchClockSkew(options: ClockSkewOptions): () => void {
  const check = async () => {
    try {
      const skewMs = await measureClockSkew(options.storeNow, options.clock);
      options.report?.(skewMs / 1000);
      if (Math.abs(skewMs) > options.warnMs) {
        options.logger.warn(
          { skewMs, warnMs: options.warnMs },
          `this process's clock is ${Math.abs(skewMs)} ms ${skewMs > 0 ? 'ahead of' : 'behind'} the store's: ` +
            'check NTP on this host',
        );
      }
    } catch (error) {
      options.logger.debug({ err: error }, 'clock skew not measured: the store did not answer');
    }
  };
  void check();
  const timer = setInterval(() => void check(), options.intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * The embedded store's time: the modification time the kernel stamps on `file` (in the data directory) as this
 * process writes it. The kernel's clock, not this process's: a process's own clock calls may be shifted (a clock
 * set by hand, libfaketime) while the file's stamp is not; on a network file system, the file server stamps it.
 */
export function fileTime(file: string): () => Promise<Date> {
  return async () => {
    // 0600 like every file of the data directory (the mode applies when it is created; then it is only rewritten).
    await writeFile(file, '', { mode: 0o600 });
    return (await stat(file)).mtime;
  };
}

/**
 * This process's clock less the skew last measured against the store's: the store's time, for decisions that
 * every process must take on one clock (the volume day). Until a skew is measured it is the local clock.
 */
export class CorrectedClock {
  private readonly clock: () => Date;
  private skewMs = 0;

  constructor(clock: () => Date) {
    this.clock = clock;
  }

  readonly now = (): Date => new Date(this.clock().getTime() - this.skewMs);

  /** A measure (local minus store, ms). */
  measured(skewMs: number): void {
    this.skewMs = skewMs;
  }
}
