import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { CollectionDefinition, Document, ReadStore } from '../ports/read-store.ts';
import type { Logger } from '../logger.ts';

/**
 * How much each API key is used, for the console's Active keys tab: a count and the last time. Recorded in
 * memory on every authenticated request and written to the read store once a second, so a request never
 * waits for a write. Each process keeps its own document per key (no read-modify-write race between API
 * processes); the console adds them up. Telemetry, not history: it is not an event.
 */
export const KEY_USAGE_COLLECTION: CollectionDefinition = { name: 'api_key_usage', indexes: [['keyID']] };

interface UsageDoc extends Document {
  keyID: string;
  count: number;
  lastUsedAt: string;
}

export interface KeyUsage {
  count: number;
  lastUsedAt: string | null;
}

export class KeyUsageRecorder {
  private readonly readStore: ReadStore;
  private readonly logger: Logger;
  /** The last use as epoch ms: formatted at the flush, not on every request. */
  private pending = new Map<string, { count: number; lastUsedAt: number }>();
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();
  // One document per recorder: never shared, so no read-modify-write race; the console sums them.
  private readonly processID = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;

  constructor(readStore: ReadStore, logger: Logger, intervalMs = 1000) {
    this.readStore = readStore;
    this.logger = logger;
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
  }

  record(keyID: string, at: Date, count = 1): void {
    const entry = this.pending.get(keyID);
    const ms = at.getTime();
    if (entry) {
      entry.count += count;
      if (ms > entry.lastUsedAt) entry.lastUsedAt = ms;
    } else {
      this.pending.set(keyID, { count, lastUsedAt: ms });
    }
  }

  /** Writes what was recorded since the last flush (one commit for all keys). */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.pending.size === 0) return;
      const batch = this.pending;
      this.pending = new Map();
      try {
        const ids = [...batch.keys()].map((keyID) => `${keyID}@${this.processID}`);
        const existing = new Map(
          (await this.readStore.getMany<UsageDoc>(KEY_USAGE_COLLECTION.name, ids)).map((doc) => [doc.keyID, doc]),
        );
        const writes = [...batch].map(([keyID, used]) => {
          const before = existing.get(keyID);
          const lastUsedAt = new Date(used.lastUsedAt).toISOString();
          const doc: UsageDoc = {
            id: `${keyID}@${this.processID}`,
            keyID,
            count: (before?.count ?? 0) + used.count,
            lastUsedAt: before && before.lastUsedAt > lastUsedAt ? before.lastUsedAt : lastUsedAt,
          };
          return { op: 'upsert' as const, collection: KEY_USAGE_COLLECTION.name, doc };
        });
        await this.readStore.commit(writes);
      } catch (error) {
        // Kept for the next flush rather than lost: a read-store outage (a MongoDB election, a network cut)
        // must not erase the counts of the requests served meanwhile. Should the commit have happened with only
        // its answer lost, those requests are counted twice: telemetry, which errs on the side of use.
        for (const [keyID, used] of batch) this.record(keyID, new Date(used.lastUsedAt), used.count);
        this.logger.warn({ err: error }, 'could not record API key usage; kept for the next flush');
      }
    });
    return this.flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}

/** A key's usage over every process that served it. */
export async function keyUsage(readStore: ReadStore, keyID: string): Promise<KeyUsage> {
  const docs = await readStore.find<UsageDoc>(KEY_USAGE_COLLECTION.name, { where: { keyID } });
  return {
    count: docs.reduce((sum, doc) => sum + doc.count, 0),
    lastUsedAt: docs.reduce<string | null>(
      (last, doc) => (last === null || doc.lastUsedAt > last ? doc.lastUsedAt : last),
      null,
    ),
  };
}
