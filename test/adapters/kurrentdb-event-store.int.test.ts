/**
 * The EventStore contract suite, unchanged, against a real KurrentDB (25.1 or newer: appendMulti needs its
 * multi-stream append). It runs when KURRENTDB_URL is set, e.g.
 *   KURRENTDB_URL='kurrentdb://localhost:2113?tls=false' npx vitest run test/adapters/kurrentdb-event-store.int.test.ts
 * and is reported as skipped otherwise (test/adapters/server-contracts.test.ts prints why). No fake of the
 * server stands in for it. Every test writes under its own random stream prefix, so a shared server is fine.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { openKurrentDbEventStore } from '../../src/adapters/kurrentdb/kurrentdb-event-store.ts';
import { withHashChain } from '../../src/audit/hash-chain.ts';
import { operationHistory } from '../../src/audit/queries.ts';
import { findSealedEvent, type HistorySealedData } from '../../src/audit/seals.ts';
import { EventStoreUnavailableError } from '../../src/ports/event-store.ts';
import { describeEventStoreContract } from '../contracts/event-store.contract.ts';

const url = process.env.KURRENTDB_URL;

if (url) {
  describeEventStoreContract('KurrentDB', async () => {
    const store = openKurrentDbEventStore({ connectionString: url });
    return {
      store,
      cleanup: () => store.close(),
      openSecondHandle: async () => openKurrentDbEventStore({ connectionString: url }),
    };
  });
  // Again with reads of $all paged two events at a time: every readAll and headPosition of the contract then
  // crosses page boundaries, which proves on the server what the mocked client cannot: a page may start at the
  // previous page's last event (a real event boundary, no InvalidPosition), forward reads include it, backward
  // reads exclude it, and the server's maxCount bounds a filtered read.
  describeEventStoreContract('KurrentDB, $all read in pages of 2', async () => {
    const store = openKurrentDbEventStore({ connectionString: url, readPageSize: 2 });
    return {
      store,
      cleanup: () => store.close(),
      openSecondHandle: async () => openKurrentDbEventStore({ connectionString: url, readPageSize: 2 }),
    };
  });
  // The audit's lookups, which on the embedded store never meet a refused position: only a server proves them.
  describe('audit lookups on KurrentDB', () => {
    it('given a seal from another store (embedded positions), when its last event is looked up, then it is found by stream and revision; a position lookup that the server refuses means "not here"', async () => {
      const store = openKurrentDbEventStore({ connectionString: url });
      try {
        const stream = `auditSeal-${randomUUID().replaceAll('-', '')}`;
        await store.append(
          stream,
          [
            { type: 'Probed', data: { n: 1 } },
            { type: 'Probed', data: { n: 2 } },
          ],
          'no_stream',
        );
        const [, second] = await store.readStream(stream);
        const seal = {
          lastEventID: second!.id,
          lastEventStream: stream,
          lastEventRevision: 1,
          toPosition: 57,
        } as HistorySealedData;
        expect((await findSealedEvent(store, seal))?.id).toBe(second!.id);
        // A seal without a stream, at a number that is not the start of a record: the server refuses the read.
        const legacy = { lastEventID: second!.id, toPosition: second!.position - 8 } as unknown as HistorySealedData;
        expect(await findSealedEvent(store, legacy)).toBeNull();
      } finally {
        await store.close();
      }
    });

    it('given an operation with its hold written in one append, when its history is told, then the hold is found beside it (no read from a position next to an event)', async () => {
      const store = withHashChain(openKurrentDbEventStore({ connectionString: url }));
      try {
        const operationID = `op_${randomUUID().replaceAll('-', '')}`;
        const payer = { kind: 'distributor', id: `d${randomUUID().slice(0, 8)}` };
        const data = {
          operationID,
          party: null,
          keyID: null,
          operationType: 'cash-in',
          amount: '1.00',
          fee: '0.00',
          payer,
          payee: { kind: 'individual', id: '+2348000000001' },
          payerName: 'p',
          payerShortCode: null,
          counterparty: { kind: 'individual', id: '+2348000000001', name: 'n' },
          memo: null,
          cashOutFulfillmentType: null,
          cashOutFulfillmentID: null,
          volumeDay: null,
          createdAt: new Date().toISOString(),
        };
        const metadata = { correlationId: randomUUID(), actor: 'operator:test' };
        await store.appendMulti([
          {
            stream: `operation-${operationID}`,
            events: [{ type: 'OperationRequested', data, metadata }],
            expectedRevision: 'no_stream',
          },
          {
            stream: `wallet-${payer.kind}_${payer.id}`,
            events: [{ type: 'FundsHeld', data: { wallet: payer, operationID, amount: '1.00' }, metadata }],
            expectedRevision: 'any',
          },
        ]);
        const history = await operationHistory(store, operationID);
        expect(history.events.map((event) => event.type)).toEqual(['OperationRequested', 'FundsHeld']);
      } finally {
        await store.close();
      }
    });
  });
} else {
  describe.skip('EventStore contract: KurrentDB (skipped: KURRENTDB_URL is not set)', () => {
    it('runs against the KurrentDB named by KURRENTDB_URL', () => {});
  });
}

/** Needs no server: nothing listens on port 1, and the client fails fast there. */
describe('KurrentDB event store, no server at the address', () => {
  const closed = 'kurrentdb://127.0.0.1:1?tls=false';

  it('when appending, reading or asking the head, then each call fails with EventStoreUnavailableError', async () => {
    const store = openKurrentDbEventStore({ connectionString: closed });
    try {
      await expect(store.append('s', [{ type: 'X', data: {} }], 'any')).rejects.toBeInstanceOf(
        EventStoreUnavailableError,
      );
      await expect(
        store.appendMulti([
          { stream: 'a', events: [{ type: 'X', data: {} }], expectedRevision: 'any' },
          { stream: 'b', events: [{ type: 'X', data: {} }], expectedRevision: 'any' },
        ]),
      ).rejects.toBeInstanceOf(EventStoreUnavailableError);
      await expect(store.readStream('s')).rejects.toBeInstanceOf(EventStoreUnavailableError);
      await expect(store.readAll({ maxCount: 1 })).rejects.toBeInstanceOf(EventStoreUnavailableError);
      await expect(store.headPosition()).rejects.toBeInstanceOf(EventStoreUnavailableError);
    } finally {
      await store.close();
    }
  });

  it('when subscribed, then next() fails with EventStoreUnavailableError and the subscription is over', async () => {
    const store = openKurrentDbEventStore({ connectionString: closed });
    try {
      // From the start, and from just before an event (which first reads the event before it).
      for (const from of ['start', 5999] as const) {
        const iterator = store.subscribeToAll({ from })[Symbol.asyncIterator]();
        await expect(iterator.next()).rejects.toBeInstanceOf(EventStoreUnavailableError);
        await expect(iterator.next()).rejects.toBeInstanceOf(EventStoreUnavailableError);
      }
    } finally {
      await store.close();
    }
  });

  it("when an append is invalid, then it is refused before any call: the message is the embedded store's", async () => {
    const store = openKurrentDbEventStore({ connectionString: closed });
    try {
      await expect(store.append('s', [], 'any')).rejects.toThrow(/zero events/);
      await expect(store.appendMulti([])).rejects.toThrow(/at least one stream/);
    } finally {
      await store.close();
    }
    await expect(store.readAll()).rejects.toThrow(/closed/);
  });

  it('given a filter that matches nothing, when subscribed and stopped, then a waiting next() ends at once without a server', async () => {
    const store = openKurrentDbEventStore({ connectionString: closed });
    const subscription = store.subscribeToAll({ from: 'start', filter: { eventTypes: [] } });
    const pending = subscription[Symbol.asyncIterator]().next();
    await subscription.stop();
    expect(await pending).toEqual({ done: true, value: undefined });
    await store.close();
  });
});
