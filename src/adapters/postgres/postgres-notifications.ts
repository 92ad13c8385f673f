import pg from 'pg';
import type { PostgresConnectionOptions } from './postgres-pool.ts';

/**
 * The channel every append transaction notifies, with the new head as payload: a subscription that has read up to
 * it already is not woken (this process's own commits wake its subscriptions before their notification arrives).
 */
export const NOTIFY_CHANNEL = 'wallet_ops_events';

/** Wait before opening a LISTEN connection again after it broke or could not open. */
const RECONNECT_DELAY_MS = 1000;

/**
 * One LISTEN connection per store, open while it has subscriptions: each notification (another process's, or
 * this one's, committed events) wakes them. A LISTEN connection cannot come from the pool (it must stay on
 * one session), so it is a client of its own. When it breaks, it is opened again after a delay; notifications
 * sent meanwhile are lost, which the subscriptions' polling covers.
 */
export class EventNotifications {
  private readonly options: PostgresConnectionOptions;
  /** Told the head a notification carries (undefined: look, whatever the head). */
  private readonly wake: (head?: number) => void;
  private client: pg.Client | undefined;
  private wanted = false;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;
  private connecting: Promise<void> | undefined;

  constructor(options: PostgresConnectionOptions, wake: (head?: number) => void) {
    this.options = options;
    this.wake = wake;
  }

  /** A subscription exists: listen, if not already. */
  needed(): void {
    this.wanted = true;
    if (!this.client && !this.retry && !this.connecting && !this.closed)
      this.connecting = this.connect().finally(() => (this.connecting = undefined));
  }

  /** No subscription is left: the connection is given up until one comes. */
  idle(): void {
    this.wanted = false;
    this.stop();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wanted = false;
    await this.connecting;
    this.stop();
  }

  private stop(): void {
    clearTimeout(this.retry);
    this.retry = undefined;
    const client = this.client;
    this.client = undefined;
    void client?.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.options.url,
      connectionTimeoutMillis: this.options.statementTimeoutMs,
      application_name: `${this.options.applicationName} (listen)`,
      keepAlive: true,
    });
    const broken = () => {
      if (this.client !== client) return;
      this.client = undefined;
      void client.end().catch(() => {});
      // Events may have committed while no one listened: let the subscriptions look, then listen again.
      this.wake();
      this.scheduleReconnect();
    };
    client.on('error', broken);
    client.on('end', broken);
    client.on('notification', (message) => this.wake(headOf(message.payload)));
    try {
      await client.connect();
      await client.query(`LISTEN ${NOTIFY_CHANNEL}`);
    } catch {
      void client.end().catch(() => {});
      this.scheduleReconnect();
      return;
    }
    if (!this.wanted || this.closed) {
      void client.end().catch(() => {});
      return;
    }
    this.client = client;
    // Anything committed between the subscriptions' last read and the LISTEN would otherwise wait for a poll.
    this.wake();
  }

  private scheduleReconnect(): void {
    if (!this.wanted || this.closed || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.needed();
    }, RECONNECT_DELAY_MS);
    // A process waiting only for this retry may exit: subscriptions keep their own timers while they are read.
    this.retry.unref();
  }
}

/** The head an append transaction notified; undefined when the payload is not one (then every subscription looks). */
function headOf(payload: string | undefined): number | undefined {
  const head = Number(payload);
  return payload && Number.isSafeInteger(head) ? head : undefined;
}
