import { describe, expect, it } from 'vitest';
import { liveness, WriteWatch } from '../src/health.ts';
import { EventStoreUnavailableError, WrongExpectedVersionError } from '../src/ports/event-store.ts';
import { ReadStoreUnavailableError } from '../src/ports/read-store.ts';

/** The write watch: what /ready and /health say of a process whose writes the stores refuse (a read-only database). */
describe('the write watch', () => {
  const clock = () => {
    let now = 1_000_000;
    return { now: () => now, advance: (ms: number) => (now += ms) };
  };
  const store = (outcome: () => Promise<unknown>) => ({ append: outcome, appendMulti: outcome, readAll: outcome });

  it('given appends that fail as unavailable, when asked, then it reports the streak from the first failure, until an append succeeds', async () => {
    const time = clock();
    const watch = new WriteWatch({ now: time.now });
    let fail = true;
    const watched = watch.watch(
      'events',
      store(() =>
        fail
          ? Promise.reject(new EventStoreUnavailableError('cannot execute INSERT in a read-only transaction'))
          : Promise.resolve('ok'),
      ),
      { writes: ['append', 'appendMulti'] },
    );
    expect(watch.report()).toBeNull();
    await watched.append().catch(() => {});
    time.advance(2_000);
    await watched.appendMulti().catch(() => {});
    expect(watch.report()).toEqual({
      store: 'events',
      since: new Date(1_000_000).toISOString(),
      downForMs: 2_000,
      failures: 2,
      lastError: 'cannot execute INSERT in a read-only transaction',
    });
    fail = false;
    await watched.append();
    expect(watch.report()).toBeNull();
  });

  it('given a read that fails, a conflict or a refusal, then nothing is reported: only writes refused as unavailable count', async () => {
    const watch = new WriteWatch();
    const watched = watch.watch(
      'events',
      store(() => Promise.reject(new EventStoreUnavailableError('down'))),
      { writes: ['append'] },
    );
    await watched.readAll().catch(() => {});
    watch.failed('events', new WrongExpectedVersionError('s', 1, 2));
    watch.failed('events', new Error('a bug'));
    expect(watch.report()).toBeNull();
    watch.failed('read models', new ReadStoreUnavailableError('read-only'));
    expect(watch.report()).toMatchObject({ store: 'read models', failures: 1 });
  });

  it("given one store's writes failing, when the other's succeed, then the failing streak stands (a lock on the events table only)", () => {
    const watch = new WriteWatch();
    watch.failed('events', new EventStoreUnavailableError('canceling statement due to statement timeout'));
    watch.succeeded('read models');
    expect(watch.report()).toMatchObject({ store: 'events', failures: 1 });
    watch.succeeded('events');
    expect(watch.report()).toBeNull();
  });

  it("given a command's read that fails as unavailable (a locked table), then the writes fail with it; a read that succeeds does not end the streak", async () => {
    let fail = true;
    const watch = new WriteWatch();
    const watched = watch.watch(
      'events',
      {
        readStream: () =>
          fail ? Promise.reject(new EventStoreUnavailableError('statement timeout')) : Promise.resolve([]),
        append: () => Promise.resolve('ok'),
      },
      { writes: ['append'], reads: ['readStream'] },
    );
    await watched.readStream().catch(() => {});
    expect(watch.report()).toMatchObject({ store: 'events', failures: 1, lastError: 'statement timeout' });
    fail = false;
    await watched.readStream();
    expect(watch.report()).toMatchObject({ failures: 1 });
    await watched.append();
    expect(watch.report()).toBeNull();
  });

  it('given a streak with no write tried for longer than staleAfterMs, then it is forgotten (the next writes tell again)', () => {
    const time = clock();
    const watch = new WriteWatch({ now: time.now, staleAfterMs: 5_000 });
    watch.failed('events', new EventStoreUnavailableError('down'));
    time.advance(5_001);
    expect(watch.report()).toBeNull();
    watch.failed('events', new EventStoreUnavailableError('down'));
    expect(watch.report()).toMatchObject({ failures: 1, downForMs: 0 });
  });

  it('given writes failing for longer than the grace, then liveness fails naming them; shorter, it holds', () => {
    const time = clock();
    const watch = new WriteWatch({ now: time.now, staleAfterMs: 60_000 });
    watch.failed('events', new EventStoreUnavailableError('read-only'));
    time.advance(500);
    watch.failed('events', new EventStoreUnavailableError('read-only'));
    expect(liveness([], 1_000, undefined, watch)).toEqual({ alive: true, failing: [] });
    time.advance(1_000);
    watch.failed('events', new EventStoreUnavailableError('read-only'));
    expect(liveness([], 1_000, undefined, watch)).toMatchObject({
      alive: false,
      writesFailing: { failures: 3, downForMs: 1_500 },
    });
  });
});
