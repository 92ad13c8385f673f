/**
 * Run as a separate process by the event store tests:
 *   node test/support/append-events.child.ts <file | postgres-url> <count> [writer]
 * Opens the store (the SQLite file, or the PostgreSQL database a postgres:// URL names) and appends events whose
 * data is {seq} (and {writer} when given) for seq 0..count-1, in commit order, using every way of appending
 * (single, multi-stream, several in flight at once) and batches of very different sizes.
 * It ends without process.exit: if close() left a timer or handle behind, the process would not exit.
 */
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import type { EventStore, NewEvent } from '../../src/ports/event-store.ts';

const [target, countArg, writer] = process.argv.slice(2);
if (!target || !countArg) throw new Error('usage: append-events.child.ts <file | postgres-url> <count> [writer]');
const count = Number(countArg);
const store: EventStore = /^postgres(ql)?:\/\//.test(target)
  ? await (
      await import('../../src/adapters/postgres/postgres-event-store.ts')
    ).openPostgresEventStore({
      url: target,
      poolSize: 4,
      statementTimeoutMs: 30_000,
      applicationName: `append-events.child ${writer ?? ''}`,
    })
  : openSqliteEventStore({ file: target });
const sizes = [1, 250, 3, 1, 64, 17, 999, 2, 100, 1, 40, 500, 7];
const streamPrefix = writer ? `${writer}-` : '';

let next = 0;
/** The next `size` events (fewer at the end), their seqs taken in order. */
const take = (size: number): NewEvent[] =>
  Array.from({ length: Math.min(size, count - next) }, () => ({
    type: 'Seq',
    data: writer ? { seq: next++, writer } : { seq: next++ },
    metadata: { actor: 'system:child' },
  }));

for (let round = 0; next < count; round++) {
  // Short pauses spread the appends over time, so the subscriber under test reads while this process writes.
  if (round % 2 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
  const size = sizes[round % sizes.length]!;
  const stream = `${streamPrefix}child-${round % 5}`;
  switch (round % 3) {
    case 0:
      await store.append(stream, take(size), 'any');
      break;
    case 1: {
      const first = take(Math.ceil(size / 2));
      const second = take(Math.floor(size / 2));
      const requests = [{ stream, events: first, expectedRevision: 'any' as const }];
      if (second.length > 0) requests.push({ stream: `${stream}-b`, events: second, expectedRevision: 'any' });
      await store.appendMulti(requests);
      break;
    }
    default: {
      // Several appends in flight at once: one group commit; queue order is commit order.
      const inFlight = [];
      for (let i = 0; i < 4 && next < count; i++)
        inFlight.push(store.append(`${stream}-${i}`, take(Math.ceil(size / 4)), 'any'));
      await Promise.all(inFlight);
    }
  }
}

// Leave a subscription open: close() must stop it, or its poll timer keeps this process alive.
const subscription = store.subscribeToAll({ from: Math.max(0, (await store.headPosition()) - 1) });
await subscription[Symbol.asyncIterator]().next();
void subscription[Symbol.asyncIterator]().next();
await store.close();
process.stdout.write(`appended ${count}\n`);
