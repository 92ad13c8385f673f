import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  openPostgresEventStore,
  type PostgresEventStoreOptions,
} from '../../src/adapters/postgres/postgres-event-store.ts';
import { DuplicateEventIdError } from '../../src/adapters/sqlite/sqlite-append.ts';
import { withHashChain, eventHash } from '../../src/audit/hash-chain.ts';
import {
  type EventStore,
  EventStoreUnavailableError,
  type RecordedEvent,
  WrongExpectedVersionError,
} from '../../src/ports/event-store.ts';
import { describeEventStoreContract } from '../contracts/event-store.contract.ts';
import { freshPostgresDatabase } from '../support/postgres-server.ts';
import { freePort } from '../support/processes.ts';

const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const APPEND_CHILD = fileURLToPath(new URL('../support/append-events.child.ts', import.meta.url));

const options = (url: string, more: Partial<PostgresEventStoreOptions> = {}): PostgresEventStoreOptions => ({
  url,
  poolSize: 5,
  statementTimeoutMs: 10_000,
  applicationName: 'wallet-ops test',
  pollIntervalMs: 50,
  ...more,
});

// One database for the contract suite: its tests write under their own stream prefixes, as on a shared server.
let contractDatabase: Promise<string> | undefined;
describeEventStoreContract('PostgreSQL', async () => {
  contractDatabase ??= freshPostgresDatabase();
  const url = await contractDatabase;
  const store = await openPostgresEventStore(options(url));
  return {
    store,
    cleanup: () => store.close(),
    openSecondHandle: () => openPostgresEventStore(options(url)),
  };
});

describe('PostgreSQL event store, specifics', () => {
  const opened: EventStore[] = [];
  const children: ChildProcess[] = [];
  let admin: pg.Client;
  const event = (seq: number) => ({ type: 'Seq', data: { seq } });
  const open = async (url: string, more: Partial<PostgresEventStoreOptions> = {}) => {
    const store = await openPostgresEventStore(options(url, more));
    opened.push(store);
    return store;
  };

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: await freshPostgresDatabase() });
    await admin.connect();
  });
  afterAll(() => admin.end());
  afterEach(async () => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill();
    await Promise.all(opened.splice(0).map((store) => store.close()));
  });

  it('given a new database, when opened twice at once, then the schema is created once and the store is empty', async () => {
    const url = await freshPostgresDatabase();
    const [first, second] = await Promise.all([open(url), open(url)]);
    expect(await first.headPosition()).toBe(0);
    await first.append('a', [event(0)], 'no_stream');
    expect(await second.readAll()).toHaveLength(1);
  });

  it('given appended events, when the store is closed and reopened, then they are there and appends continue after them', async () => {
    const url = await freshPostgresDatabase();
    const first = await open(url);
    await first.append('a', [event(0), event(1)], 'no_stream');
    await first.appendMulti([{ stream: 'b', events: [event(2)], expectedRevision: 'no_stream' }]);
    const before = await first.readAll();
    await first.close();
    const reopened = await open(url);
    expect(await reopened.readAll()).toEqual(before);
    expect(await reopened.headPosition()).toBe(3);
    expect(await reopened.append('a', [event(3)], 1)).toEqual({ nextExpectedRevision: 2, position: 4 });
  });

  it('given a database whose append function is missing (as a release before it left the schema), when opened, then the function is created and appends work', async () => {
    const url = await freshPostgresDatabase();
    const first = await open(url);
    await first.append('a', [event(0)], 'no_stream');
    await first.close();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query('DROP FUNCTION es_append_v3');
    } finally {
      await client.end();
    }
    const reopened = await open(url);
    expect(await reopened.append('a', [event(1)], 0)).toEqual({ nextExpectedRevision: 1, position: 2 });
  });

  it('when a batch of appends to several streams commits, then it costs one statement: one round trip and one commit', async () => {
    const statements: boolean[] = [];
    const observer = {
      opened: () => ({ closed() {} }),
      statement: (_pool: string, _seconds: number, ok: boolean) => void statements.push(ok),
    };
    const store = await open(await freshPostgresDatabase(), { observer });
    await store.append('warm', [event(0)], 'no_stream');
    statements.length = 0;
    await store.appendMulti([
      { stream: 'a', events: [event(1), event(2)], expectedRevision: 'no_stream' },
      { stream: 'b', events: [event(3)], expectedRevision: 'any' },
    ]);
    expect(statements).toEqual([true]);
    expect((await store.readAll()).map((e) => [e.stream, e.revision, e.position])).toEqual([
      ['warm', 0, 1],
      ['a', 0, 2],
      ['a', 1, 3],
      ['b', 0, 4],
    ]);
  });

  it('when streams, types and data hold what an array literal quotes (quotes, backslashes, braces, commas, NULL, spaces), then they read back as given', async () => {
    const store = await open(await freshPostgresDatabase());
    const awkward = ['q"uo\\te', '{a,b}', 'NULL', ' padded ', 'é😀\\"', ''];
    await store.appendMulti(
      awkward.map((text, i) => ({
        stream: `s${i}${text}`,
        events: [{ type: `T${text}`, data: { text, [text]: i }, metadata: { note: text } }],
        expectedRevision: 'no_stream' as const,
      })),
    );
    expect((await store.readAll()).map((e) => [e.stream, e.type, e.data, e.metadata])).toEqual(
      awkward.map((text, i) => [`s${i}${text}`, `T${text}`, { text, [text]: i }, { note: text }]),
    );
  });

  it("given a subscriber, when an append is delivered to it, then its page reads went through the subscriptions' own pool and the append alone through the requests' pool", async () => {
    const statements: string[] = [];
    const observer = { opened: () => ({ closed() {} }), statement: (pool: string) => void statements.push(pool) };
    const store = await open(await freshPostgresDatabase(), { observer, applicationName: 'pools apart' });
    statements.length = 0;
    const subscription = store.subscribeToAll({ from: 'start' });
    const iterator = subscription[Symbol.asyncIterator]();
    const first = iterator.next();
    await store.append('a', [event(0)], 'no_stream');
    expect((await first).value).toMatchObject({ stream: 'a', position: 1 });
    await subscription.stop();
    expect(statements.filter((pool) => pool === 'pools apart')).toHaveLength(1);
    expect(statements.filter((pool) => pool === 'pools apart (subscriptions)').length).toBeGreaterThan(0);
  });

  it('given a closed store, when it is used, then it reports itself unavailable', async () => {
    const store = await open(await freshPostgresDatabase());
    await store.close();
    await store.close();
    await expect(store.append('a', [event(0)], 'any')).rejects.toBeInstanceOf(EventStoreUnavailableError);
    await expect(store.readAll()).rejects.toBeInstanceOf(EventStoreUnavailableError);
    await expect(store.headPosition()).rejects.toBeInstanceOf(EventStoreUnavailableError);
    expect(() => store.subscribeToAll({ from: 'start' })).toThrow(EventStoreUnavailableError);
  });

  describe('group commit', () => {
    it('when 100 appends and one conflicting append are issued together, then they share a transaction and only the conflict fails', async () => {
      const url = await freshPostgresDatabase();
      const batches: number[] = [];
      const store = await open(url, { onGroupCommit: (size) => batches.push(size) });
      await store.append('taken', [event(-1)], 'no_stream');
      batches.length = 0;
      const appends = Array.from({ length: 100 }, (_, i) => store.append(`s-${i}`, [event(i)], 'no_stream'));
      const conflicting = store.append('taken', [event(100)], 'no_stream');
      const results = await Promise.all(appends);
      await expect(conflicting).rejects.toBeInstanceOf(WrongExpectedVersionError);
      await expect(conflicting).rejects.toMatchObject({ actual: 0 });
      // Queue order is commit order: positions follow the calls.
      expect(results.map((r) => r.position)).toEqual(Array.from({ length: 100 }, (_, i) => i + 2));
      expect(batches.length).toBeLessThan(5);
      expect(await store.readStream('taken')).toHaveLength(1);
    });

    it("when appends in one batch reuse an event id, or reuse a stored one, then each fails alone with the embedded store's error", async () => {
      const store = await open(await freshPostgresDatabase());
      const id = '3f0e6e55-2f4e-4bb4-9a43-6c1f3a1f0c11';
      const first = store.append('a', [{ ...event(0), id }], 'any');
      const second = store.append('b', [event(1), { ...event(2), id }], 'any');
      const third = store.append('c', [event(3)], 'any');
      await expect(first).resolves.toMatchObject({ nextExpectedRevision: 0 });
      await expect(second).rejects.toBeInstanceOf(DuplicateEventIdError);
      await expect(third).resolves.toMatchObject({ nextExpectedRevision: 0 });
      await expect(store.append('a', [{ ...event(4), id }], 'any')).rejects.toThrow(/already stored/);
      await expect(store.append('d', [{ ...event(5), id: 'evt-1' }], 'any')).rejects.toThrow(/not a uuid/);
      expect((await store.readAll()).map((e) => e.stream)).toEqual(['a', 'c']);
    });

    it("when two appends sharing a batch build on each other's stream, then the second sees the first's revision", async () => {
      const store = await open(await freshPostgresDatabase());
      const [created, next, stale] = await Promise.allSettled([
        store.append('a', [event(0)], 'no_stream'),
        store.append('a', [event(1)], 0),
        store.append('a', [event(2)], 0),
      ]);
      expect(created).toMatchObject({ status: 'fulfilled', value: { nextExpectedRevision: 0 } });
      expect(next).toMatchObject({ status: 'fulfilled', value: { nextExpectedRevision: 1 } });
      expect(stale).toMatchObject({ status: 'rejected', reason: { actual: 1 } });
    });
  });

  describe('errors', () => {
    it('when the server refuses an append for good (a NUL in a stream name), then that error is thrown as it is, not as unavailable, and its batch neighbours commit', async () => {
      const store = await open(await freshPostgresDatabase());
      const good = store.append('fine', [event(0)], 'no_stream');
      const bad = store.append('nul\u0000name', [event(1)], 'no_stream');
      const error = await bad.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).not.toBeInstanceOf(EventStoreUnavailableError);
      expect(error).toMatchObject({ code: '22021' }); // invalid byte sequence for encoding "UTF8": 0x00
      await expect(good).resolves.toMatchObject({ nextExpectedRevision: 0 });
      await expect(store.readStream('nul\u0000name')).rejects.toMatchObject({ code: '22021' });
      expect((await store.readAll()).map((e) => e.stream)).toEqual(['fine']);
    });

    it('given an append waiting for the position lock, when its connection is killed, then it fails as unavailable and the store recovers', async () => {
      const url = await freshPostgresDatabase();
      const store = await open(url, { applicationName: 'wallet-ops killed' });
      await store.append('a', [event(0)], 'no_stream');
      // Another session holds the position lock, so the append is on the server, waiting, when its backend is killed.
      const holder = new pg.Client({ connectionString: url });
      await holder.connect();
      try {
        await holder.query("BEGIN; SELECT pg_advisory_xact_lock(hashtext('wallet-ops:event-store:positions'))");
        // Its refusal is taken at once: it may come while the kill below is still being confirmed.
        const waiting = store.append('a', [event(1)], 0).then(
          () => undefined,
          (error: unknown) => error,
        );
        const database = new URL(url).pathname.slice(1);
        await waitFor(async () => {
          const { rows } = await admin.query(
            "SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE datname = $1 AND application_name = 'wallet-ops killed' AND wait_event_type = 'Lock'",
            [database],
          );
          return rows.length > 0;
        });
        expect(await waiting).toBeInstanceOf(EventStoreUnavailableError);
        await holder.query('ROLLBACK');
        // Every connection of the store killed, idle ones too: the pool opens new ones.
        await admin.query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name LIKE 'wallet-ops killed%'",
          [database],
        );
        await retryUnavailable(() => store.append('a', [event(1)], 0));
        expect((await store.readStream('a')).map((e) => e.revision)).toEqual([0, 1]);
      } finally {
        await holder.end();
      }
    });
  });

  it("given no server at the address, when opened, then it is unavailable; given a wrong password, then the server's refusal as it is", async () => {
    const nobody = await freePort();
    await expect(
      openPostgresEventStore(options(`postgres://postgres:x@127.0.0.1:${nobody}/none`, { statementTimeoutMs: 2000 })),
    ).rejects.toBeInstanceOf(EventStoreUnavailableError);
    const wrong = new URL(await freshPostgresDatabase());
    wrong.password = 'not-the-password';
    const refused = await openPostgresEventStore(options(wrong.toString())).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).not.toBeInstanceOf(EventStoreUnavailableError);
    expect(refused).toMatchObject({ code: '28P01' }); // invalid_password
  });

  describe('subscriptions', () => {
    it("given a caught-up subscriber that follows other streams, when this process appends to streams it does not follow, then it reads no page for them; another process's event it follows still arrives", async () => {
      const statements: string[] = [];
      const observer = { opened: () => ({ closed() {} }), statement: (pool: string) => void statements.push(pool) };
      const url = await freshPostgresDatabase();
      const store = await open(url, { observer, applicationName: 'own', pollIntervalMs: 60_000 });
      const other = await open(url);
      // Never pulled, so never reads: it keeps the LISTEN connection, which wakes every subscriber when it opens.
      store.subscribeToAll({ from: 'start', filter: { streamPrefixes: ['never-'] } });
      const database = new URL(url).pathname.slice(1);
      await waitFor(
        async () =>
          (
            await admin.query(
              "SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND application_name = 'own (listen)' " +
                "AND query LIKE 'LISTEN%' AND state = 'idle'",
              [database],
            )
          ).rowCount === 1,
      );
      const subscription = store.subscribeToAll({ from: 'start', filter: { streamPrefixes: ['wanted-'] } });
      const caughtUp = new Promise<void>((resolve) => subscription.onCaughtUp!(resolve));
      const iterator = subscription[Symbol.asyncIterator]();
      const pending = iterator.next();
      await caughtUp;
      statements.length = 0;
      for (let i = 0; i < 10; i++) await store.append(`other-${i}`, [event(i)], 'no_stream');
      await other.append('wanted-a', [event(10)], 'no_stream');
      expect((await pending).value).toMatchObject({ stream: 'wanted-a', position: 11 });
      await store.append('other-x', [event(11)], 'no_stream');
      await store.append('wanted-b', [event(12)], 'no_stream');
      expect((await iterator.next()).value).toMatchObject({ stream: 'wanted-b', position: 13 });
      // One read, for the other process's event; none for this process's own appends, wanted (from memory) or not.
      expect(statements.filter((pool) => pool === 'own (subscriptions)')).toHaveLength(1);
      await subscription.stop();
    });

    it('given a caught-up subscriber, when this process appends events it follows, then it gets them as a read returns them, without reading a page; a later commit of another process is read from the server', async () => {
      const statements: string[] = [];
      const observer = { opened: () => ({ closed() {} }), statement: (pool: string) => void statements.push(pool) };
      const url = await freshPostgresDatabase();
      const store = await open(url, { observer, applicationName: 'own', pollIntervalMs: 60_000 });
      const other = await open(url);
      await store.append('before', [event(0)], 'no_stream');
      const subscription = store.subscribeToAll({ from: 'start', filter: { streamPrefixes: ['w-'] } });
      const caughtUp = new Promise<void>((resolve) => subscription.onCaughtUp!(resolve));
      const iterator = subscription[Symbol.asyncIterator]();
      const pending = iterator.next();
      await caughtUp;
      statements.length = 0;
      await store.appendMulti([
        { stream: 'w-a', events: [event(1), event(2)], expectedRevision: 'no_stream' },
        { stream: 'skipped', events: [event(3)], expectedRevision: 'no_stream' },
        { stream: 'w-b', events: [event(4)], expectedRevision: 'no_stream' },
      ]);
      const received = [(await pending).value, (await iterator.next()).value, (await iterator.next()).value];
      expect(statements.filter((pool) => pool === 'own (subscriptions)')).toHaveLength(0);
      expect(received).toEqual(await store.readAll({ fromPosition: 2, filter: { streamPrefixes: ['w-'] } }));
      expect(received.map((e: RecordedEvent) => [e.stream, e.revision, e.position])).toEqual([
        ['w-a', 0, 2],
        ['w-a', 1, 3],
        ['w-b', 0, 5],
      ]);
      await other.append('w-c', [event(5)], 'no_stream');
      expect((await iterator.next()).value).toMatchObject({ stream: 'w-c', position: 6 });
      expect(statements.filter((pool) => pool === 'own (subscriptions)')).toHaveLength(1);
      await subscription.stop();
    });

    it('given a poll interval of a minute, when another handle appends, then a caught-up subscriber is woken by the notification', async () => {
      const url = await freshPostgresDatabase();
      const store = await open(url, { pollIntervalMs: 60_000 });
      const other = await open(url);
      const subscription = store.subscribeToAll({ from: 'start' });
      const caughtUp = new Promise<void>((resolve) => subscription.onCaughtUp!(resolve));
      const iterator = subscription[Symbol.asyncIterator]();
      const pending = iterator.next();
      await caughtUp;
      await new Promise((resolve) => setTimeout(resolve, 200)); // the LISTEN connection is open by now
      const started = Date.now();
      await other.append('a', [event(0)], 'no_stream');
      expect((await pending).value).toMatchObject({ stream: 'a', data: { seq: 0 } });
      expect(Date.now() - started).toBeLessThan(2000);
    });

    it('given the LISTEN connection killed, when another handle appends after it is back, then a caught-up subscriber is still woken at once', async () => {
      const url = await freshPostgresDatabase();
      const store = await open(url, { pollIntervalMs: 60_000, applicationName: 'wallet-ops listener' });
      const other = await open(url);
      const iterator = store.subscribeToAll({ from: 'start' })[Symbol.asyncIterator]();
      const database = new URL(url).pathname.slice(1);
      const listening = async () =>
        (
          await admin.query(
            "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = 'wallet-ops listener (listen)' AND query LIKE 'LISTEN%'",
            [database],
          )
        ).rows as Array<{ pid: number }>;
      await waitFor(async () => (await listening()).length === 1);
      const [{ pid: killed }] = (await listening()) as [{ pid: number }];
      await admin.query('SELECT pg_terminate_backend($1)', [killed]);
      await waitFor(async () => (await listening()).some(({ pid }) => pid !== killed));
      const pending = iterator.next();
      await new Promise((resolve) => setTimeout(resolve, 100));
      const started = Date.now();
      await other.append('a', [event(0)], 'no_stream');
      expect((await pending).value).toMatchObject({ stream: 'a', data: { seq: 0 } });
      expect(Date.now() - started).toBeLessThan(2000);
    });

    it('given a rare event type spread over 25,000 events, when subscribing with a type filter, then exactly the matching events arrive in order', async () => {
      const store = await open(await freshPostgresDatabase());
      const rare = new Set([0, 999, 1000, 9999, 10_000, 10_001, 19_999, 24_999]);
      for (let start = 0; start < 25_000; start += 1000) {
        const events = Array.from({ length: 1000 }, (_, i) => ({
          type: rare.has(start + i) ? 'Rare' : 'Common',
          data: { seq: start + i },
        }));
        await store.append(`s-${start % 3}`, events, 'any');
      }
      const iterator = store
        .subscribeToAll({ from: 'start', filter: { eventTypes: ['Rare'] } })
        [Symbol.asyncIterator]();
      const received: number[] = [];
      for (let i = 0; i < rare.size; i++)
        received.push(((await iterator.next()).value as RecordedEvent<string, { seq: number }>).data.seq);
      expect(received).toEqual([...rare]);
      await store.append('late', [{ type: 'Rare', data: { seq: 25_000 } }], 'any');
      expect((await iterator.next()).value).toMatchObject({ stream: 'late', data: { seq: 25_000 } });
    });

    it('given a subscriber, when several processes append concurrently, then it receives every event once, in position order, and skips none', async () => {
      const url = await freshPostgresDatabase();
      const store = await open(url);
      const writers = ['w1', 'w2', 'w3', 'w4'];
      const perWriter = 1500;
      const total = writers.length * perWriter;
      const subscription = store.subscribeToAll({ from: 'start' });
      const runs = writers.map((writer) => {
        const child = spawn(process.execPath, [APPEND_CHILD, url, String(perWriter), writer], {
          cwd: PROJECT_ROOT,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        children.push(child);
        let output = '';
        child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
        child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
        return (once(child, 'exit') as Promise<[number | null]>).then(([code]) => ({ code, output }));
      });

      // Stopped if the events do not all come in time (a skipped event never comes), so the test fails with the count.
      const deadline = setTimeout(() => void subscription.stop(), 45_000);
      const received: RecordedEvent[] = [];
      for await (const e of subscription) {
        received.push(e);
        if (received.length === total) break;
      }
      clearTimeout(deadline);
      for (const { code, output } of await Promise.all(runs)) expect(code, output).toBe(0);

      expect(received).toHaveLength(total);
      const next = new Map(writers.map((writer) => [writer, 0]));
      received.forEach((e, i) => {
        if (i > 0 && e.position <= received[i - 1]!.position)
          throw new Error(`position ${e.position} after ${received[i - 1]!.position}`);
        const { seq, writer } = e.data as { seq: number; writer: string };
        if (next.get(writer) !== seq)
          throw new Error(`${writer}'s event ${seq} arrived when ${next.get(writer)} was due`);
        next.set(writer, seq + 1);
      });
      // What the subscriber got is the whole log, in the same order: nothing committed behind its back was skipped.
      expect(received.map((e) => e.position)).toEqual((await store.readAll()).map((e) => e.position));
    }, 90_000);
  });

  it('given the hash chain on top, when appending and reading, then every event carries its hash, as stored', async () => {
    const store = withHashChain(await open(await freshPostgresDatabase()));
    await store.append('a', [{ type: 'Opened', data: { b: 1, a: 'é', n: 1.5 } }], 'no_stream');
    await Promise.all([store.append('a', [event(1)], 0), store.append('a', [event(2)], 1)]);
    const events = await store.readStream('a');
    expect(events.map((e) => e.revision)).toEqual([0, 1, 2]);
    for (const e of events) expect(e.metadata.hash).toBe(eventHash(e));
    expect(events[1]!.metadata.previousHash).toBe(events[0]!.metadata.hash);
  });
});

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** What a consumer does after an unavailable store: tries again, a bounded number of times. */
async function retryUnavailable<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      if (!(error instanceof EventStoreUnavailableError) || attempt >= 5) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
