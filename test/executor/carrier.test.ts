import { afterEach, describe, expect, it } from 'vitest';
import { Carrier } from '../../src/executor/carrier.ts';
import type { PassResult } from '../../src/executor/pass.ts';
import { createLogger } from '../../src/logger.ts';

/**
 * The carrier runs the passes of the operations an executor carries: at most `concurrency` at once, and an
 * operation waiting between passes (another executor's lease, a backoff) holds no slot. The passes here are
 * scripted: each operation's script says how its passes end, in turn (the last one repeats).
 */
type Step = PassResult | Error | 'hang';

function carrierOf(scripts: Record<string, Step[]>, concurrency = 1) {
  const calls: Array<{ operationID: string; lastError: string | undefined }> = [];
  let running = 0;
  let mostAtOnce = 0;
  const hanging: Array<() => void> = [];
  const carrier = new Carrier({
    concurrency,
    clock: () => new Date(),
    logger: createLogger('silent'),
    errorBackoff: { firstMs: 5, maxMs: 10 },
    async pass(operationID, lastError, signal) {
      signal.throwIfAborted();
      const done = calls.filter((call) => call.operationID === operationID).length;
      calls.push({ operationID, lastError });
      const script = scripts[operationID]!;
      const step = script[Math.min(done, script.length - 1)]!;
      running += 1;
      mostAtOnce = Math.max(mostAtOnce, running);
      try {
        if (step === 'hang') await new Promise<void>((resolve) => hanging.push(resolve));
        else await new Promise((resolve) => setTimeout(resolve, 5));
        if (step instanceof Error) throw step;
        return step === 'hang' ? { kind: 'settled' } : step;
      } finally {
        running -= 1;
      }
    },
  });
  return {
    carrier,
    calls,
    mostAtOnce: () => mostAtOnce,
    release: () => hanging.splice(0).forEach((resolve) => resolve()),
  };
}

const settled: PassResult = { kind: 'settled' };
const within = <T>(promise: Promise<T>, ms = 2_000) =>
  Promise.race([
    promise,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`not within ${ms} ms`)), ms)),
  ]);
const stillPending = async (promise: Promise<unknown>) =>
  (await Promise.race([
    promise.then(() => 'settled'),
    new Promise((resolve) => setTimeout(() => resolve('pending'), 50)),
  ])) === 'pending';

describe("the carrier of an executor's operations", () => {
  const stops: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const stop of stops.splice(0)) await stop();
  });
  const started = (subject: ReturnType<typeof carrierOf>) => {
    stops.push(() => subject.carrier.stop());
    return subject;
  };

  it("when an operation waits out another executor's live claim, then with a single slot another operation still runs and settles at once", async () => {
    const { carrier } = started(carrierOf({ claimedElsewhere: [{ kind: 'wait', delayMs: 60_000 }], free: [settled] }));
    const waiting = carrier.carry('claimedElsewhere');
    await within(carrier.carry('free'));
    expect(await stillPending(waiting)).toBe(true);
    expect(carrier.size).toBe(1);
  });

  it('when the ledger asks for a retry later, then the operation waits its backoff outside the slot, and is passed again with the cause', async () => {
    const { carrier, calls } = started(
      carrierOf({ flaky: [{ kind: 'retry', delayMs: 150, cause: 'ledger down' }, settled], other: [settled] }),
    );
    const flaky = carrier.carry('flaky');
    await within(carrier.carry('other'), 100);
    await within(flaky);
    expect(calls.filter((call) => call.operationID === 'flaky')).toEqual([
      { operationID: 'flaky', lastError: undefined },
      { operationID: 'flaky', lastError: 'ledger down' },
    ]);
  });

  it('when a pass fails unexpectedly, then it is passed again after a backoff, with the cause, until it settles', async () => {
    const { carrier, calls } = started(
      carrierOf({ unlucky: [new Error('store down'), new Error('still down'), settled] }),
    );
    await within(carrier.carry('unlucky'));
    expect(calls.map((call) => call.lastError)).toEqual([undefined, 'store down', 'still down']);
    expect(carrier.size).toBe(0);
  });

  it('when the same operation is carried twice (the sweep and the subscription), then it runs once and both wait on the same settling', async () => {
    const { carrier, calls } = started(carrierOf({ twice: [settled] }));
    const first = carrier.carry('twice');
    expect(carrier.carry('twice')).toBe(first);
    await within(first);
    expect(calls).toHaveLength(1);
  });

  it('when many operations arrive, then no more than `concurrency` passes run at once, and all settle', async () => {
    const scripts = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`op${i}`, [settled]]));
    const subject = started(carrierOf(scripts, 3));
    await within(Promise.all(Object.keys(scripts).map((id) => subject.carrier.carry(id))));
    expect(subject.mostAtOnce()).toBe(3);
  });

  it('when it stops, then the pass under way ends, no pass begins any more, and what is not settled never settles', async () => {
    const subject = started(
      carrierOf({ running: ['hang'], retrying: [{ kind: 'retry', delayMs: 20, cause: 'ledger down' }] }, 2),
    );
    const running = subject.carrier.carry('running');
    const retrying = subject.carrier.carry('retrying');
    await new Promise((resolve) => setTimeout(resolve, 30));
    const stopped = subject.carrier.stop();
    subject.release();
    await within(stopped);
    await within(running); // it settled while stopping: that is kept
    const passes = subject.calls.length;
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(subject.calls).toHaveLength(passes);
    expect(await stillPending(retrying)).toBe(true);
    expect(await stillPending(subject.carrier.carry('late'))).toBe(true);
  });
});
