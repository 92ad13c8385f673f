/**
 * Run as a separate process by the SQLite and PostgreSQL read store tests:
 *   node test/support/counter-and-take.child.ts <file or postgres:// URL> <increments>
 * Opens the read store (an SQLite file, or a PostgreSQL database through a pool of its own), increments the
 * counter `shared` that many times (several calls in flight at once) and tries to take each of the documents `doc-0`..`doc-19`; prints one JSON line with the counts it
 * saw and the ids it took.
 */
import { openPostgresReadStore } from '../../src/adapters/postgres/postgres-read-store.ts';
import { openSqliteReadStore } from '../../src/adapters/sqlite/sqlite-read-store.ts';

const [file, countArg] = process.argv.slice(2);
if (!file || !countArg) throw new Error('usage: counter-and-take.child.ts <file or postgres:// URL> <increments>');
const store = /^postgres(ql)?:\/\//.test(file)
  ? await openPostgresReadStore({
      url: file,
      poolSize: 4,
      statementTimeoutMs: 10_000,
      applicationName: 'wallet-ops-test-child',
    })
  : openSqliteReadStore({ file });
await store.defineCollections([{ name: 'counters', indexes: [['expiresAt']] }, { name: 'held' }]);
const now = Date.now();
const counts: number[] = [];
for (let done = 0; done < Number(countArg); done += 4) {
  const batch = await Promise.all(
    Array.from({ length: 4 }, () =>
      store.incrementCounter('counters', 'shared', { by: 1, now, expiresAt: now + 600_000 }),
    ),
  );
  counts.push(...batch.map((counter) => counter.count));
}
const taken = (await Promise.all(Array.from({ length: 20 }, (_, i) => store.take('held', `doc-${i}`)))).flatMap(
  (doc) => (doc ? [doc.id] : []),
);
await store.close();
process.stdout.write(`${JSON.stringify({ counts, taken })}\n`);
