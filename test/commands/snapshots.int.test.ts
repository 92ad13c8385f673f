import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { withHashChain } from '../../src/audit/hash-chain.ts';
import { loadState, runDecision, StateCache } from '../../src/commands/pipeline.ts';
import {
  latestSnapshot,
  snapshotRevision,
  withSnapshots,
  writeSnapshot,
  type SnapshottingEventStore,
} from '../../src/commands/snapshots.ts';
import { foldStream } from '../../src/commands/stream-fold.ts';
import { keyVolumeState, walletState } from '../../src/commands/wallet-state.ts';
import type { KeyVolumeEvent, WalletEvent, WalletRef } from '../../src/domain/events.ts';
import { streams } from '../../src/domain/streams.ts';
import type { EventStore, NewEvent, ReadStreamOptions } from '../../src/ports/event-store.ts';
import { tempDir } from '../support/temp-dir.ts';

/**
 * Snapshots of the wallet and key-volume states: written by the store decorator when an append crosses a
 * multiple of `every`, and a cold load (no cached state, as after a restart) starts from the newest one.
 */

const EVERY = 7;
const W: WalletRef = { kind: 'distributor', id: 'd-1' };
const WALLET = streams.wallet(W);
const VOLUME = streams.keyVolume('key_A', '2026-03-10');

/** A small deterministic generator (mulberry32): each seed is one reproducible history. */
function random(seed: number) {
  let a = seed;
  const next = () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (max: number) => Math.floor(next() * max),
    amount: () => `${1 + Math.floor(next() * 9999)}.${String(Math.floor(next() * 100)).padStart(2, '0')}`,
  };
}

/** A wallet's life: holds, their releases and debits, credits; every hold settled at most once. */
function walletHistory(rng: ReturnType<typeof random>, count: number): WalletEvent[] {
  const events: WalletEvent[] = [];
  const open: Array<{ operationID: string; amount: string }> = [];
  for (let i = 0; events.length < count; i++) {
    const roll = rng.int(4);
    if (roll === 0 || open.length === 0) {
      const hold = { operationID: `op_${i}`, amount: rng.amount() };
      open.push(hold);
      events.push({ type: 'FundsHeld', data: { wallet: W, ...hold } });
    } else if (roll === 1) {
      const [hold] = open.splice(rng.int(open.length), 1);
      events.push({ type: 'HoldReleased', data: { wallet: W, ...hold!, reason: 'rejected' } });
    } else if (roll === 2) {
      const [hold] = open.splice(rng.int(open.length), 1);
      events.push({
        type: 'WalletDebited',
        data: { wallet: W, operationID: hold!.operationID, amount: hold!.amount, heldAmount: hold!.amount },
      });
    } else {
      events.push({ type: 'WalletCredited', data: { wallet: W, operationID: `in_${i}`, amount: rng.amount() } });
    }
  }
  return events;
}

function volumeHistory(rng: ReturnType<typeof random>, count: number): KeyVolumeEvent[] {
  const events: KeyVolumeEvent[] = [];
  const open: Array<{ operationID: string; amount: string }> = [];
  for (let i = 0; events.length < count; i++) {
    const data = { keyID: 'key_A', day: '2026-03-10' };
    if (rng.int(3) === 0 && open.length > 0)
      events.push({ type: 'VolumeReleased', data: { ...data, ...open.splice(rng.int(open.length), 1)[0]! } });
    else {
      const reservation = { operationID: `op_${i}`, amount: rng.amount() };
      open.push(reservation);
      events.push({ type: 'VolumeReserved', data: { ...data, ...reservation } });
    }
  }
  return events;
}

/** Counts the events each stream's reads return. */
function counting(store: EventStore) {
  const read = new Map<string, number>();
  const counted: EventStore = {
    ...store,
    append: (...args) => store.append(...args),
    appendMulti: (...args) => store.appendMulti(...args),
    readAll: (...args) => store.readAll(...args),
    headPosition: () => store.headPosition(),
    subscribeToAll: (...args) => store.subscribeToAll(...args),
    close: () => store.close(),
    async readStream(stream: string, options?: ReadStreamOptions) {
      const events = await store.readStream(stream, options);
      read.set(stream, (read.get(stream) ?? 0) + events.length);
      return events;
    },
  };
  return { store: counted, read };
}

/** Appends the events in batches of random sizes (1 to 2 x every), alone or beside the other stream, as creates and the executor do. */
async function appendInBatches(
  store: EventStore,
  rng: ReturnType<typeof random>,
  histories: Array<{ stream: string; events: NewEvent[] }>,
) {
  const left = histories.map((history) => ({ ...history, next: 0 }));
  while (left.some((history) => history.next < history.events.length)) {
    const requests = left
      .filter((history) => history.next < history.events.length && rng.int(2) === 0)
      .map((history) => {
        const events = history.events.slice(history.next, history.next + 1 + rng.int(2 * EVERY));
        history.next += events.length;
        return { stream: history.stream, events, expectedRevision: 'any' as const };
      });
    if (requests.length === 1 && rng.int(2) === 0) await store.append(requests[0]!.stream, requests[0]!.events, 'any');
    else if (requests.length > 0) await store.appendMulti(requests);
  }
}

describe('snapshots', () => {
  let dir: ReturnType<typeof tempDir>;
  let raw: EventStore;
  let store: SnapshottingEventStore;

  beforeEach(() => {
    dir = tempDir('snapshots-');
    raw = withHashChain(openSqliteEventStore({ file: join(dir.path, 'events.sqlite') }));
    store = withSnapshots(raw, { every: EVERY });
  });

  afterEach(async () => {
    await store.close();
    dir.cleanup();
  });

  describe('when an append takes a stream past a multiple of every', () => {
    it('then the snapshot is taken at the last multiple it crossed, and at none when it crossed none', () => {
      expect(snapshotRevision(6, 1, 7)).toBe(6);
      expect(snapshotRevision(5, 6, 7)).toBeNull();
      expect(snapshotRevision(8, 3, 7)).toBe(6);
      expect(snapshotRevision(30, 25, 7)).toBe(27);
      expect(snapshotRevision(9, 2, 7)).toBeNull();
    });
  });

  it('when generated histories are appended in random batches, then the state loaded from the newest snapshot equals the state folded from the whole history, and the load reads fewer than every events of the stream', async () => {
    for (let seed = 1; seed <= 12; seed++) {
      const rng = random(seed);
      const wallet = `${WALLET}-${seed}`;
      const volume = `${VOLUME}-${seed}`;
      const walletEvents = walletHistory(rng, 20 + rng.int(120));
      const volumeEvents = volumeHistory(rng, 20 + rng.int(120));
      await appendInBatches(store, rng, [
        { stream: wallet, events: walletEvents },
        { stream: volume, events: volumeEvents },
      ]);
      await store.settled();

      for (const [stream, fold, events] of [
        [wallet, walletState, walletEvents],
        [volume, keyVolumeState, volumeEvents],
      ] as const) {
        const whole = (events as Array<WalletEvent | KeyVolumeEvent>).reduce(
          fold.evolve as (state: unknown, event: unknown) => unknown,
          fold.initialState(),
        );
        const counted = counting(raw);
        const loaded = await loadState(
          { store: counted.store, cache: new StateCache() },
          stream,
          fold as typeof walletState,
        );
        expect(loaded, `seed ${seed}, ${stream}`).toEqual({ state: whole, revision: events.length - 1 });
        expect(
          await latestSnapshot(raw, stream, fold as typeof walletState),
          `seed ${seed}: a snapshot was written`,
        ).not.toBeNull();
        expect(counted.read.get(stream) ?? 0, `seed ${seed}: events of ${stream} read`).toBeLessThan(EVERY);
      }
    }
  });

  it('when a snapshot was never written (a process stopped before), then the load folds from the one before and still finds the same state', async () => {
    const events = walletHistory(random(99), 40);
    for (const event of events.slice(0, 10)) await store.append(WALLET, [event], 'any');
    await store.settled();
    // The crossings at revisions 13, 20 and 27 go through the bare store: no snapshot for them.
    for (const event of events.slice(10, 30)) await raw.append(WALLET, [event], 'any');
    for (const event of events.slice(30)) await store.append(WALLET, [event], 'any');
    await store.settled();
    const loaded = await loadState({ store: raw, cache: new StateCache() }, WALLET, walletState);
    expect(loaded.state).toEqual(events.reduce(walletState.evolve, walletState.initialState()));
    expect((await latestSnapshot(raw, WALLET, walletState))?.revision).toBe(34);
  });

  it('when the newest snapshot is of another fold version, then the load ignores it', async () => {
    const events = walletHistory(random(7), 10);
    await raw.append(WALLET, events, 'any');
    await raw.append(
      streams.snapshot(WALLET),
      [
        {
          type: 'StateSnapshotted',
          data: { stream: WALLET, revision: 9, fold: 'wallet/0', state: { balance: '5.00', held: '0' } },
        },
      ],
      'any',
    );
    expect(await latestSnapshot(raw, WALLET, walletState)).toBeNull();
    const loaded = await loadState({ store: raw, cache: new StateCache() }, WALLET, walletState);
    expect(loaded.state).toEqual(events.reduce(walletState.evolve, walletState.initialState()));
  });

  it('when a snapshot as new already exists, then writing it again changes nothing', async () => {
    const events = walletHistory(random(3), 14);
    await raw.append(WALLET, events, 'any');
    expect(await writeSnapshot(raw, WALLET, walletState, 13)).toBe(true);
    expect(await writeSnapshot(raw, WALLET, walletState, 6)).toBe(false);
    expect(await raw.readStream(streams.snapshot(WALLET))).toHaveLength(1);
  });

  it('when a snapshot cannot be written, then the append that crossed is answered all the same and the failure is reported', async () => {
    const failures: string[] = [];
    const failing = withSnapshots(
      {
        ...raw,
        append: raw.append.bind(raw),
        appendMulti: raw.appendMulti.bind(raw),
        readAll: raw.readAll.bind(raw),
        headPosition: raw.headPosition.bind(raw),
        subscribeToAll: raw.subscribeToAll.bind(raw),
        close: async () => undefined,
        readStream: async () => {
          throw new Error('store blinked');
        },
      },
      { every: EVERY, onError: (error, stream) => failures.push(`${stream}: ${(error as Error).message}`) },
    );
    const result = await failing.appendMulti([
      { stream: WALLET, events: walletHistory(random(5), EVERY), expectedRevision: 'any' },
    ]);
    expect(result[0]!.nextExpectedRevision).toBe(EVERY - 1);
    await failing.settled();
    expect(failures).toEqual([`${WALLET}: store blinked`]);
  });

  it('when other streams cross a multiple, then no snapshot is written for them', async () => {
    await store.append(
      'operation-op_1',
      Array.from({ length: EVERY }, () => ({ type: 'Noted', data: {} })),
      'any',
    );
    await store.settled();
    expect(await raw.readStream(streams.snapshot('operation-op_1'))).toEqual([]);
  });

  it('when a cold load folds from a snapshot, then the snapshot is read from the end of its stream and the stream from after its revision', async () => {
    const events = walletHistory(random(11), 3 * EVERY + 2);
    await store.appendMulti([{ stream: WALLET, events, expectedRevision: 'any' }]);
    await store.settled();
    const calls: Array<[string, ReadStreamOptions | undefined]> = [];
    const watched = {
      ...raw,
      readStream: (stream: string, options?: ReadStreamOptions) => (
        calls.push([stream, options]),
        raw.readStream(stream, options)
      ),
    };
    await loadState({ store: watched as EventStore, cache: new StateCache() }, WALLET, walletState);
    expect(calls[0]).toEqual([streams.snapshot(WALLET), { direction: 'backwards', maxCount: 3 }]);
    expect(calls[1]).toEqual([WALLET, { fromRevision: 3 * EVERY, maxCount: 1000 }]);
  });

  it('when a decision reads a wallet and a key volume cold (as a create does), then it decides on the states folded from their snapshots', async () => {
    const walletEvents = walletHistory(random(13), 5 * EVERY + 3);
    const volumeEvents = volumeHistory(random(14), 4 * EVERY + 1);
    await store.appendMulti([
      { stream: WALLET, events: walletEvents, expectedRevision: 'any' },
      { stream: VOLUME, events: volumeEvents, expectedRevision: 'any' },
    ]);
    await store.settled();
    const counted = counting(raw);
    const seen = await runDecision(
      { store: counted.store, cache: new StateCache() },
      {
        read: { wallet: { stream: WALLET, ...walletState }, volume: { stream: VOLUME, ...keyVolumeState } },
        decide: (states) => ({ writes: [], result: states }),
        context: { actor: 'user:u-1', correlationId: 'c-1' },
      },
    );
    expect(seen).toEqual({
      wallet: walletEvents.reduce(walletState.evolve, walletState.initialState()),
      volume: volumeEvents.reduce(keyVolumeState.evolve, keyVolumeState.initialState()),
    });
    expect(counted.read.get(WALLET)).toBe(3);
    expect(counted.read.get(VOLUME)).toBe(1);
  });
});

// foldStream is what both the loads and the snapshots fold with: `upTo` stops exactly at a revision.
describe('folding a stream up to a revision', () => {
  it('when a stream is folded up to a revision, then exactly its events up to that one are folded', async () => {
    const dir = tempDir('fold-');
    const store = openSqliteEventStore({ file: join(dir.path, 'events.sqlite') });
    try {
      const events = walletHistory(random(21), 30);
      await store.append(WALLET, events, 'any');
      const folded = await foldStream(
        store,
        WALLET,
        walletState.evolve,
        { state: walletState.initialState(), revision: -1 },
        12,
      );
      expect(folded).toEqual({
        state: events.slice(0, 13).reduce(walletState.evolve, walletState.initialState()),
        revision: 12,
      });
    } finally {
      await store.close();
      dir.cleanup();
    }
  });
});
