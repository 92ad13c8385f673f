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
 * time is read where a server has one (PostgreSQL's statement_timestamp()); the embedded store's time is
 * this process's own, so there is nothing to compare there.
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

/** Measures at once and then every intervalMs; a store that does not answer is skipped (its health says so). Returns the stop. */
export function watchClockSkew(options: ClockSkewOptions): () => void {
  const check = async () => {
    try {
      const skewMs = await measureClockSkew(options.storeNow, options.clock);
      options.report?.(skewMs / 1000);
      if (Math.abs(skewMs) > options.warnMs) {
        options.logger.warn({ skewMs, warnMs: options.warnMs }, `this process's clock is ${Math.abs(skewMs)} ms ${skewMs > 0 ? 'ahead of' : 'behind'} the store's: check NTP on this host`);
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
