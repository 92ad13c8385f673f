import type { AppendResult, EventStore, NewEvent, StreamAppend } from '../ports/event-store.ts';

/**
 * Every event the operator CLI appends says which operator ran it: `metadata.operator` is `operator:<os user>`,
 * beside `actor`, whose authority the event was taken under. An operator acting `--as EMAIL` appends events
 * with actor `user:<id>` and operator `operator:<os user>`; the operator acting on their own (break-glass
 * `user add`, `treasury issue`) has the operator in both. Events from the console and the API carry no
 * `operator`. A decorator of the store, not a field of each command: no CLI command can forget it.
 *
 * It sits outside the hash chain, so that the chain hashes the metadata as stored.
 */
const INNER = Symbol.for('wallet-ops.cli.operatorAttribution.inner');

export function attributeToOperator(store: EventStore, operator: string): EventStore {
  const stamp = (events: NewEvent[]): NewEvent[] =>
    events.map((event) => ({ ...event, metadata: { ...event.metadata, operator } }));
  return {
    [INNER]: store,
    append: (stream: string, events: NewEvent[], expectedRevision): Promise<AppendResult> =>
      store.append(stream, stamp(events), expectedRevision),
    appendMulti: (requests: StreamAppend[]) =>
      store.appendMulti(requests.map((request) => ({ ...request, events: stamp(request.events) }))),
    readStream: (stream, options) => store.readStream(stream, options),
    readAll: (options) => store.readAll(options),
    headPosition: () => store.headPosition(),
    subscribeToAll: (options) => store.subscribeToAll(options),
    close: () => store.close(),
  } as EventStore;
}

/** The store without the attribution: what `events import` writes through, keeping imported metadata as it was. */
export function withoutOperatorAttribution(store: EventStore): EventStore {
  return (store as Partial<Record<typeof INNER, EventStore>>)[INNER] ?? store;
}
