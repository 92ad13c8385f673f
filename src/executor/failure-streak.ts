import type { Logger } from '../logger.ts';

/**
 * A periodic task's failures, logged once per streak (the first failure with its cause, then the recovery),
 * so that a store outage does not write five lines a second. The task's rejection never escapes.
 */
export class FailureStreak {
  private readonly logger: Logger;
  private readonly failed: string;
  private readonly recovered: string;
  private failures = 0;

  constructor(logger: Logger, failed: string, recovered: string) {
    this.logger = logger;
    this.failed = failed;
    this.recovered = recovered;
  }

  async track(task: Promise<unknown>): Promise<void> {
    try {
      await task;
      if (this.failures > 0) this.logger.info({ failures: this.failures }, this.recovered);
      this.failures = 0;
    } catch (error) {
      if (this.failures++ === 0) this.logger.warn({ err: error }, this.failed);
    }
  }
}
