import type { ConsumerLogger } from './supervised-consumer.ts';

/**
 * A repeated task's failures, logged once per streak (the first failure with its cause, then the recovery), so
 * that a store outage does not write five lines a second. A tracked task's rejection never escapes.
 */
export class FailureStreak {
  private readonly logger: ConsumerLogger;
  private readonly messages: { failed: string; recovered: string };
  private readonly fields: object;
  private failures = 0;

  constructor(logger: ConsumerLogger, messages: { failed: string; recovered: string }, fields: object = {}) {
    this.logger = logger;
    this.messages = messages;
    this.fields = fields;
  }

  async track(task: Promise<unknown>): Promise<void> {
    try {
      await task;
      this.succeeded();
    } catch (error) {
      this.failed(error);
    }
  }

  succeeded(): void {
    if (this.failures > 0) this.logger.info({ ...this.fields, failures: this.failures }, this.messages.recovered);
    this.failures = 0;
  }

  failed(error: unknown): void {
    if (this.failures++ === 0) this.logger.warn({ ...this.fields, err: error }, this.messages.failed);
  }
}
