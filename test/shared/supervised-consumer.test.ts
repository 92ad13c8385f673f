/**
 * SupervisedConsumer, the one mechanism under every background consumer, driven with sessions the test
 * controls: each session owns a subscription (stopping it ends the session, as stopping a real subscription
 * ends its for-await) and fails, returns or reports progress when the test says so.
 *
 * Time is vitest's fake clock (timers and Date): a backoff is asserted to the millisecond, by showing that the
 * next session has not started one millisecond before its delay is over and has started once it is, with no
 * dependence on how fast the machine runs.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  describeError,
  SupervisedConsumer,
  type ConsumerLogger,
  type SessionContext,
  type SupervisedConsumerOptions,
} from '../../src/shared/supervised-consumer.ts';

const T0 = new Date('2030-01-01T00:00:00.000Z');

/** A subscription as sessions own it: stop() ends the session that iterates it. */
class TestSubscription {
  private readonly onStop: () => void;
  stopCalls = 0;
  private readonly caughtUpListeners: Array<() => void> = [];
  constructor(onStop: () => void) {
    this.onStop = onStop;
  }
  async stop(): Promise<void> {
    this.stopCalls += 1;
    this.onStop();
  }
  onCaughtUp(listener: () => void): void {
    this.caughtUpListeners.push(listener);
  }
  /** The store answered a read at its head. */
  caughtUp(): void {
    this.caughtUpListeners.forEach((listener) => listener());
  }
}

/** One session the test drives: it owns one subscription and runs until it is stopped, fails or returns. */
class TestSession {
  readonly context: SessionContext;
  readonly subscription: TestSubscription;
  private settle!: { resolve: () => void; reject: (error: unknown) => void };
  readonly done: Promise<void>;

  constructor(context: SessionContext) {
    this.context = context;
    this.done = new Promise<void>((resolve, reject) => (this.settle = { resolve, reject }));
    this.subscription = context.own(new TestSubscription(() => this.settle.resolve()));
  }

  fail(error: unknown = new Error('subscription dropped')): void {
    this.settle.reject(error);
  }

  /** Returns although nobody stopped it, as a for-await does over a subscription that ended by itself. */
  end(): void {
    this.settle.resolve();
  }

  progress(position: number): void {
    this.context.progress(position);
  }
}

/** The consumer under test, its sessions in the order they started, and every call it made to its logger. */
function supervised(options: Partial<Omit<SupervisedConsumerOptions, 'session' | 'logger'>> = {}) {
  const sessions: TestSession[] = [];
  const logs = {
    info: [] as Array<{ object: Record<string, unknown>; message: string }>,
    warn: [] as Array<{ object: Record<string, unknown>; message: string }>,
  };
  const logger: ConsumerLogger = {
    info: (object, message) => logs.info.push({ object: object as Record<string, unknown>, message }),
    warn: (object, message) => logs.warn.push({ object: object as Record<string, unknown>, message }),
  };
  const consumer = new SupervisedConsumer({
    name: 'test-consumer',
    logger,
    baseDelayMs: 100,
    maxDelayMs: 400,
    stableAfterMs: 60_000,
    random: () => 0,
    ...options,
    session: (context) => {
      const session = new TestSession(context);
      sessions.push(session);
      return session.done;
    },
  });
  consumers.push(consumer);
  /** The session that is running now (the last one started). */
  const current = () => {
    const session = sessions.at(-1);
    if (!session) throw new Error('no session has started');
    return session;
  };
  return { consumer, sessions, logs, current };
}

const consumers: SupervisedConsumer[] = [];

/** Lets the supervisor's promise continuations run (no fake time passes). */
async function settle(): Promise<void> {
  await vi.advanceTimersByTimeAsync(0);
}

/** Moves the fake clock on by `ms`, running every timer due and the continuations they cause. */
async function advance(ms: number): Promise<void> {
  await vi.advanceTimersByTimeAsync(ms);
}

/** The random draws a test scripts, in order; running out means the supervisor drew more than expected. */
function scripted(...draws: number[]): () => number {
  return () => {
    const draw = draws.shift();
    if (draw === undefined) throw new Error('unexpected random draw');
    return draw;
  };
}

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});
afterEach(async () => {
  for (const consumer of consumers.splice(0)) {
    const stopped = consumer.stop();
    await settle();
    await stopped;
  }
  vi.useRealTimers();
});

describe('SupervisedConsumer: restarting a failing session', () => {
  it('when a session keeps failing, then each next one starts after a capped exponential backoff with equal jitter', async () => {
    // base 100, cap 400: ceilings 100, 200, 400, 400, 400; delay = ceiling/2 + random × ceiling/2
    const { consumer, sessions, current } = supervised({ random: scripted(0, 0.5, 0.75, 0, 0.5) });
    const expectedDelays = [50, 150, 350, 200, 300];
    consumer.start();
    await settle();
    expect(sessions).toHaveLength(1);

    for (const [i, delay] of expectedDelays.entries()) {
      current().fail();
      await settle();
      await advance(delay - 1);
      expect(sessions, `session ${i + 2} started before its ${delay} ms backoff was over`).toHaveLength(i + 1);
      await advance(1);
      expect(sessions, `session ${i + 2} did not start after its ${delay} ms backoff`).toHaveLength(i + 2);
    }
    expect(consumer.status()).toMatchObject({ state: 'retrying', consecutiveFailures: 5, totalFailures: 5 });
  });

  it('when failures go on for ever, then the backoff stays at the cap and the consumer never gives up', async () => {
    const { consumer, sessions, current } = supervised({ baseDelayMs: 10, maxDelayMs: 40, random: () => 0.999 });
    consumer.start();
    await settle();
    for (let i = 0; i < 60; i++) {
      current().fail();
      await settle();
      await advance(40); // ceiling/2 + 0.999 × ceiling/2 < 40 once capped
    }
    expect(sessions).toHaveLength(61);
    expect(consumer.status()).toMatchObject({ state: 'retrying', consecutiveFailures: 60, totalFailures: 60 });
  });

  it('when a session fails, then the failure is logged once, as a warning with the consumer, the error and its cause', async () => {
    const { consumer, logs, current } = supervised();
    consumer.start();
    await settle();
    const error = new Error('could not read the event store', { cause: new Error('SQLITE_BUSY: database is locked') });
    current().fail(error);
    await settle();

    expect(logs.warn).toEqual([
      {
        object: { consumer: 'test-consumer', err: error, failures: 1, position: null },
        message: 'consumer failed; resubscribing from its checkpoint',
      },
    ]);
    expect(logs.info).toEqual([]);
    expect(consumer.status()).toMatchObject({
      lastError: 'could not read the event store: SQLITE_BUSY: database is locked',
      lastErrorAt: T0.toISOString(),
    });

    // Waiting out the backoff logs nothing more; the next failure is logged once, counted as the second.
    await advance(50);
    expect(logs.warn).toHaveLength(1);
    current().fail(new Error('subscription dropped'));
    await settle();
    expect(logs.warn).toHaveLength(2);
    expect(logs.warn[1]).toMatchObject({
      object: { consumer: 'test-consumer', failures: 2 },
      message: 'consumer failed; resubscribing from its checkpoint',
    });
    expect(consumer.status().lastError).toBe('subscription dropped');
  });

  it('when a session returns without being stopped, then it counts as a failure and a new one starts after the backoff', async () => {
    const { consumer, sessions, logs, current } = supervised();
    consumer.start();
    await settle();
    current().end();
    await settle();

    expect(consumer.status()).toMatchObject({
      state: 'retrying',
      consecutiveFailures: 1,
      totalFailures: 1,
      lastError: 'the subscription ended by itself',
    });
    expect(logs.warn.map((entry) => entry.message)).toEqual(['consumer failed; resubscribing from its checkpoint']);
    await advance(50);
    expect(sessions).toHaveLength(2);
  });

  it('when a session fails leaving its subscription open, then the subscription is stopped before the backoff, not after it', async () => {
    const { consumer, sessions, current } = supervised({ baseDelayMs: 10_000, maxDelayMs: 10_000 });
    consumer.start();
    await settle();
    const failed = current();
    failed.fail();
    await settle();

    expect(sessions).toHaveLength(1); // still waiting out the backoff
    expect(failed.subscription.stopCalls).toBe(1);
  });
});

describe('SupervisedConsumer: recovering', () => {
  it('given a consumer retrying, when its new session reports progress beyond where it started, then it is running and "consumer recovered" is logged once', async () => {
    const { consumer, logs, current } = supervised({ stableAfterMs: 5_000 });
    consumer.start();
    await settle();
    current().fail();
    await settle();
    await advance(50);
    current().fail();
    await settle();
    await advance(100);
    expect(consumer.status()).toMatchObject({
      state: 'retrying',
      consecutiveFailures: 2,
      failingSince: T0.toISOString(),
    });

    // Where the session starts (its checkpoint, read back) proves nothing: that read may be all that works.
    current().progress(6);
    expect(consumer.status()).toMatchObject({ state: 'retrying', position: 6, consecutiveFailures: 2 });
    current().progress(7);
    expect(consumer.status()).toMatchObject({
      state: 'running',
      position: 7,
      failingSince: null,
      consecutiveFailures: 0,
      totalFailures: 2,
    });
    expect(logs.info).toEqual([
      { object: { consumer: 'test-consumer', failures: 2, downMs: 150 }, message: 'consumer recovered' },
    ]);

    // More progress, and the session outliving stableAfterMs, recover nothing more.
    current().progress(8);
    current().progress(9);
    await advance(5_000);
    expect(logs.info).toHaveLength(1);
    expect(consumer.status()).toMatchObject({ state: 'running', position: 9 });
  });

  it('given a consumer retrying, when a session reads its checkpoint and then fails every time, then it never counts as recovered and the streak grows', async () => {
    const { consumer, logs, current } = supervised({ stableAfterMs: 5_000 });
    consumer.start();
    await settle();
    for (let i = 0; i < 4; i++) {
      current().progress(10);
      current().fail();
      await settle();
      await advance(500);
    }
    expect(consumer.status()).toMatchObject({
      state: 'retrying',
      consecutiveFailures: 4,
      failingSince: T0.toISOString(),
    });
    expect(logs.info).toEqual([]);
  });

  it("given a consumer retrying, when the new session's subscription says it caught up, then it is running at once; a late signal of an ended session changes nothing", async () => {
    const { consumer, logs, current } = supervised({ stableAfterMs: 60_000 });
    consumer.start();
    await settle();
    const first = current();
    first.fail();
    await settle();
    expect(consumer.status().state).toBe('retrying');
    first.subscription.caughtUp();
    expect(consumer.status().state).toBe('retrying');

    await advance(100);
    current().subscription.caughtUp();
    expect(consumer.status()).toMatchObject({ state: 'running', failingSince: null, consecutiveFailures: 0 });
    expect(logs.info).toHaveLength(1);
  });

  it('given a consumer retrying, when its new session runs for stableAfterMs without progress, then it is running and "consumer recovered" is logged once', async () => {
    const { consumer, logs, current } = supervised({ stableAfterMs: 1_000 });
    consumer.start();
    await settle();
    current().fail();
    await settle();
    await advance(50);
    expect(consumer.status().state).toBe('retrying');

    await advance(999);
    expect(consumer.status().state).toBe('retrying');
    expect(logs.info).toEqual([]);
    await advance(1);
    expect(consumer.status()).toMatchObject({
      state: 'running',
      failingSince: null,
      consecutiveFailures: 0,
      totalFailures: 1,
    });
    expect(logs.info).toEqual([
      { object: { consumer: 'test-consumer', failures: 1, downMs: 1_050 }, message: 'consumer recovered' },
    ]);

    await advance(10_000);
    expect(logs.info).toHaveLength(1);
  });

  it('given a new consumer, when its first session runs (progress or stableAfterMs), then it goes from starting to running without logging a recovery', async () => {
    const { consumer, logs, current } = supervised({ stableAfterMs: 1_000 });
    expect(consumer.status().state).toBe('starting');
    consumer.start();
    await settle();
    expect(consumer.status().state).toBe('starting');
    current().progress(3);
    expect(consumer.status()).toMatchObject({ state: 'running', position: 3, failingSince: null });

    const { consumer: idle, logs: idleLogs } = supervised({ stableAfterMs: 1_000 });
    idle.start();
    await advance(999);
    expect(idle.status().state).toBe('starting');
    await advance(1);
    expect(idle.status().state).toBe('running');
    expect([...logs.info, ...logs.warn, ...idleLogs.info, ...idleLogs.warn]).toEqual([]);
  });

  it('when a failing session backs off longer than stableAfterMs, then the wait is not a stable session: the streak, its start and the growing backoff go on', async () => {
    // stableAfterMs (100) is shorter than every backoff here (500 to 4000 ms): only a session that runs that long has recovered.
    const { consumer, sessions, logs, current } = supervised({
      baseDelayMs: 1_000,
      maxDelayMs: 8_000,
      stableAfterMs: 100,
    });
    consumer.start();
    await settle();
    const expectedDelays = [500, 1_000, 2_000, 4_000];
    for (const [i, delay] of expectedDelays.entries()) {
      current().fail();
      await settle();
      await advance(delay - 1);
      expect(consumer.status(), `after failure ${i + 1}`).toMatchObject({
        state: 'retrying',
        failingSince: T0.toISOString(),
        consecutiveFailures: i + 1,
      });
      expect(sessions).toHaveLength(i + 1);
      await advance(1);
      expect(sessions).toHaveLength(i + 2);
    }
    expect(consumer.downForMs()).toBe(7_500);
    expect(logs.info).toEqual([]);
  });
});

describe('SupervisedConsumer: measuring how long it has been down', () => {
  it('when failures follow each other, then downForMs and failingSince measure the whole streak, and both reset on recovery', async () => {
    const { consumer, current } = supervised({ stableAfterMs: 60_000 });
    consumer.start();
    await settle();
    expect(consumer.downForMs()).toBe(0);
    expect(consumer.status().failingSince).toBeNull();

    current().fail();
    await settle();
    expect(consumer.status().failingSince).toBe(T0.toISOString());
    expect(consumer.downForMs()).toBe(0);
    await advance(30);
    expect(consumer.downForMs()).toBe(30); // during the backoff
    await advance(20);
    await advance(10); // the second session has run 10 ms
    current().fail();
    await settle();
    expect(consumer.status().failingSince).toBe(T0.toISOString()); // the same streak
    expect(consumer.downForMs()).toBe(60);
    await advance(100);
    expect(consumer.downForMs()).toBe(160);

    current().progress(1);
    current().progress(2);
    expect(consumer.downForMs()).toBe(0);
    expect(consumer.status().failingSince).toBeNull();

    // A later failure starts a new streak from its own time.
    await advance(1_000);
    current().fail();
    await settle();
    expect(consumer.status()).toMatchObject({
      failingSince: new Date(T0.getTime() + 1_160).toISOString(),
      consecutiveFailures: 1,
      totalFailures: 3,
    });
    await advance(25);
    expect(consumer.downForMs()).toBe(25);
  });

  it('when the clock is injected, then downForMs reads it', async () => {
    let now = 1_000_000;
    const { consumer, current } = supervised({ now: () => now });
    consumer.start();
    await settle();
    current().fail();
    await settle();
    now += 42_000;
    expect(consumer.downForMs()).toBe(42_000);
    expect(consumer.status().failingSince).toBe(new Date(1_000_000).toISOString());
  });
});

describe('SupervisedConsumer: stopping', () => {
  it('when stop() is called during a backoff wait, then it returns without waiting the backoff out, ends in "stopped" and leaves no timer behind', async () => {
    const { consumer, sessions, logs, current } = supervised({ baseDelayMs: 60_000, maxDelayMs: 60_000 });
    consumer.start();
    await settle();
    current().fail();
    await settle();
    expect(consumer.status().state).toBe('retrying');

    let stopped = false;
    const stopping = consumer.stop().then(() => (stopped = true));
    await settle(); // no fake time passes: only a stop that does not wait for the backoff can be done
    expect(stopped).toBe(true);
    await stopping;
    expect(consumer.status().state).toBe('stopped');
    expect(vi.getTimerCount()).toBe(0);

    await advance(120_000);
    expect(sessions).toHaveLength(1);
    expect(logs.warn).toHaveLength(1);
  });

  it('when stop() is called while a session runs, then its subscription is stopped, the session ends, and nothing is counted as a failure', async () => {
    const { consumer, sessions, logs, current } = supervised();
    consumer.start();
    await settle();
    const running = current();
    running.progress(5);

    let stopped = false;
    const stopping = consumer.stop().then(() => (stopped = true));
    await settle();
    expect(stopped).toBe(true);
    await stopping;
    expect(running.subscription.stopCalls).toBeGreaterThanOrEqual(1);
    expect(running.context.stopping()).toBe(true);
    expect(consumer.status()).toMatchObject({
      state: 'stopped',
      totalFailures: 0,
      failingSince: null,
      lastError: null,
      position: 5,
    });
    expect(logs.warn).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
    await advance(60_000);
    expect(sessions).toHaveLength(1);
  });

  it('when a session fails because it was stopped, then the failure is neither logged nor counted', async () => {
    const { consumer, logs, current } = supervised();
    consumer.start();
    await settle();
    const running = current();
    // A subscription whose stop makes its for-await throw (a connection closed under it) rather than end.
    const stopping = consumer.stop();
    running.fail(new Error('connection closed'));
    await settle();
    await stopping;
    expect(consumer.status()).toMatchObject({ state: 'stopped', totalFailures: 0, lastError: null });
    expect(logs.warn).toEqual([]);
  });

  it('when a session subscribes after stop() was called, then that subscription is stopped at once', async () => {
    const { consumer, current } = supervised();
    consumer.start();
    await settle();
    const running = current();
    const stopping = consumer.stop();
    const late = running.context.own(new TestSubscription(() => {}));
    expect(late.stopCalls).toBe(1);
    await settle();
    await stopping;
  });

  it('given a consumer never started, when it is stopped, then it is stopped', async () => {
    const { consumer, sessions } = supervised();
    await consumer.stop();
    expect(consumer.status().state).toBe('stopped');
    expect(sessions).toEqual([]);
  });
});

describe('describeError', () => {
  it('when an error has causes, then its message is followed by theirs', () => {
    const error = new Error('could not commit to the event store', {
      cause: new Error('SQLITE_BUSY: database is locked'),
    });
    expect(describeError(error)).toBe('could not commit to the event store: SQLITE_BUSY: database is locked');
    expect(describeError('a string')).toBe('a string');
  });

  it('when a plain object is thrown, then its fields are shown, not "[object Object]"', () => {
    expect(describeError({ code: 'ECONNRESET', attempt: 2 })).toBe("{ code: 'ECONNRESET', attempt: 2 }");
  });
});
