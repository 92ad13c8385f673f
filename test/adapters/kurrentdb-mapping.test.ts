/**
 * The KurrentDB adapter's pure mapping, without a server: what goes to the client and how its answers and
 * errors come back as the port's. (The adapter against a real server is test/adapters/kurrentdb-event-store.int.test.ts.)
 */
import {
  ANY,
  AccessDeniedError as ClientAccessDeniedError,
  AppendRecordSizeExceededError as ClientAppendRecordSizeExceededError,
  InvalidArgumentError as ClientInvalidArgumentError,
  MaxAppendSizeExceededError as ClientMaxAppendSizeExceededError,
  NO_STREAM,
  NotLeaderError as ClientNotLeaderError,
  StreamDeletedError as ClientStreamDeletedError,
  StreamTombstonedError as ClientStreamTombstonedError,
  TransactionMaxSizeExceededError as ClientTransactionMaxSizeExceededError,
  convertToCommandError,
  START,
  STREAM_EXISTS,
  StreamNotFoundError as ClientStreamNotFoundError,
  UnavailableError as ClientUnavailableError,
  UnsupportedError as ClientUnsupportedError,
  WrongExpectedVersionError as ClientWrongExpectedVersionError,
  type ResolvedEvent,
} from '@kurrent/kurrentdb-client';
import { describe, expect, it } from 'vitest';
import {
  escapeRegex,
  fromActualState,
  isStreamNotFound,
  isSystemEvent,
  keep,
  matchesNothing,
  portMetadata,
  prepareAppends,
  readAllStart,
  subscriptionStart,
  toLogPosition,
  toMultiStreamRequests,
  toPortPosition,
  toRecordedEvent,
  toServerFilter,
  toStreamState,
  translateError,
  KurrentDbRefusedError,
} from '../../src/adapters/kurrentdb/kurrentdb-mapping.ts';
import { EventStoreUnavailableError, WrongExpectedVersionError } from '../../src/ports/event-store.ts';

const at = (log: number) => ({ commit: BigInt(log), prepare: BigInt(log) });

describe('KurrentDB mapping: positions', () => {
  it('given an event position, when mapped, then the port number is four times the log position and keeps the order', () => {
    expect(toPortPosition(at(0))).toBe(0);
    expect(toPortPosition(at(1234))).toBe(4936);
    const logs = [120, 245, 246, 9_000_000_001];
    const ports = logs.map((log) => toPortPosition(at(log)));
    expect([...ports].sort((a, b) => a - b)).toEqual(ports);
    expect(new Set(ports).size).toBe(ports.length);
    expect(ports.map(toLogPosition)).toEqual(logs.map(BigInt));
  });

  it('given a legacy explicit-transaction event (commit and prepare differ), when mapped, then it is refused rather than numbered ambiguously', () => {
    expect(() => toPortPosition({ commit: 500n, prepare: 420n })).toThrow(/explicit transaction/);
    expect(() => toPortPosition({ commit: 500n, prepare: 420n })).toThrow(EventStoreUnavailableError);
  });

  it('given no position (a server older than 22.6) or one beyond 2^51, when mapped, then it is refused', () => {
    expect(() => toPortPosition(undefined)).toThrow(/without a position/);
    expect(() => toPortPosition(at(2 ** 52))).toThrow(/out of the range/);
  });

  // Two events, at log positions 1234 and 1500: port numbers 4936 and 6000.
  const first = 4936;
  const second = 6000;

  it('given an inclusive read start at an event position, when mapped, then the server reads from that event', () => {
    expect(readAllStart(first)).toEqual({ from: at(1234), minimum: first });
  });

  it('given the "position + 1" of a caller reading after an event, when mapped, then the server reads from that event and it is dropped here', () => {
    const start = readAllStart(first + 1);
    expect(start).toEqual({ from: at(1234), minimum: first + 1 });
    expect(keep({ stream: 's', type: 'T', position: first }, undefined, start.minimum)).toBe(false);
    expect(keep({ stream: 's', type: 'T', position: second }, undefined, start.minimum)).toBe(true);
  });

  it('given the "position - 1" of a caller reading from an event on, when mapped, then the server reads from that very event', () => {
    // 5999 is just before the event at log 1500: reading from log 1499 would be an invalid position.
    expect(readAllStart(second - 1)).toEqual({ from: at(1500), minimum: second - 1 });
  });

  it('given a number below 4, when reading, then the read starts at the start of the log', () => {
    for (const n of [0, 1, 2, 3]) expect(readAllStart(n)).toEqual({ from: START, minimum: n });
  });

  it("given a subscription from an event's position or just after it, when mapped, then the server starts after that event and nothing at or before the number passes", () => {
    expect(subscriptionStart('start')).toEqual({ from: START, minimum: 0 });
    expect(subscriptionStart(0)).toEqual({ from: START, minimum: 1 });
    expect(subscriptionStart(3)).toEqual({ from: START, minimum: 4 });
    expect(subscriptionStart(first)).toEqual({ from: at(1234), minimum: first + 1 });
    expect(subscriptionStart(first + 1)).toEqual({ from: at(1234), minimum: first + 2 });
    expect(keep({ stream: 's', type: 'T', position: first }, undefined, subscriptionStart(first).minimum)).toBe(false);
  });

  it('given a subscription from just before an event (the executor keeps "oldest in flight - 1"), when mapped, then that event must be included: the server is asked for the event before it', () => {
    const start = subscriptionStart(second - 1);
    expect(start).toEqual({ includeFrom: 1500n, minimum: second });
    expect(keep({ stream: 's', type: 'T', position: second }, undefined, start.minimum)).toBe(true);
  });

  it('given a negative or fractional position, when mapped, then it is refused', () => {
    expect(() => readAllStart(-4)).toThrow(/integer >= 0/);
    expect(() => subscriptionStart(1.5)).toThrow(/integer >= 0/);
  });
});

describe('KurrentDB mapping: expected revisions', () => {
  it('given each expected revision of the port, when mapped, then the client gets its stream state', () => {
    expect(toStreamState('no_stream')).toBe(NO_STREAM);
    expect(toStreamState('stream_exists')).toBe(STREAM_EXISTS);
    expect(toStreamState('any')).toBe(ANY);
    expect(toStreamState(0)).toBe(0n);
    expect(toStreamState(41)).toBe(41n);
    expect(() => toStreamState(-1)).toThrow();
  });

  it('given the actual state of a conflict, when mapped, then a revision is a number and anything else is no_stream', () => {
    expect(fromActualState(7n)).toBe(7);
    expect(fromActualState('no_stream')).toBe('no_stream');
    expect(fromActualState(-1n)).toBe('no_stream');
    expect(fromActualState(undefined)).toBe('no_stream');
  });
});

describe('KurrentDB mapping: filters', () => {
  it('given event types, when sent to the server, then they are an anchored alternation of escaped names', () => {
    const filter = toServerFilter({ eventTypes: ['Opened', 'a.b+c'] });
    expect(filter).toMatchObject({ filterOn: 'eventType', regex: '^(?:Opened|a\\.b\\+c)$' });
  });

  it('given stream prefixes only, when sent to the server, then they are an anchored regex of escaped prefixes', () => {
    const filter = toServerFilter({ streamPrefixes: ['wallet-', 'a_b%(x)'] });
    expect(filter).toMatchObject({ filterOn: 'streamName', regex: '^(?:wallet\\-|a_b%\\(x\\))' });
    const regex = new RegExp((filter as { regex: string }).regex);
    expect(regex.test('wallet-1')).toBe(true);
    expect(regex.test('a_b%(x)-1')).toBe(true);
    expect(regex.test('axb%(x)-1')).toBe(false);
    expect(regex.test('xwallet-1')).toBe(false);
  });

  it('given both prefixes and types, when sent to the server, then the types go (KurrentDB filters on one) and both are checked here', () => {
    const filter = { streamPrefixes: ['wallet-'], eventTypes: ['Opened'] };
    expect(toServerFilter(filter)).toMatchObject({ filterOn: 'eventType' });
    expect(keep({ stream: 'wallet-1', type: 'Opened', position: 2 }, filter, 0)).toBe(true);
    expect(keep({ stream: 'payment-1', type: 'Opened', position: 2 }, filter, 0)).toBe(false);
  });

  it('given no filter, when sent to the server, then system events are left out there, and here too', () => {
    expect(toServerFilter(undefined)).toMatchObject({ filterOn: 'eventType', regex: '^[^$].*' });
    expect(keep({ stream: '$stats-1', type: 'X', position: 2 }, undefined, 0)).toBe(false);
    expect(keep({ stream: 'x', type: '$metadata', position: 2 }, undefined, 0)).toBe(false);
    expect(isSystemEvent('wallet-1', 'Opened')).toBe(false);
  });

  it('given an empty list in a filter, when checked, then it matches nothing', () => {
    expect(matchesNothing({ eventTypes: [] })).toBe(true);
    expect(matchesNothing({ streamPrefixes: [] })).toBe(true);
    expect(matchesNothing({ eventTypes: ['A'] })).toBe(false);
    expect(matchesNothing(undefined)).toBe(false);
  });

  it('given every regex metacharacter, when escaped, then the pattern matches the text literally (checked with the JavaScript engine)', () => {
    for (const text of ['.*+?^${}()|[]\\', 'a-b#c d', 'é😀', '(x+y).*', 'tab\there']) {
      const regex = new RegExp(`^${escapeRegex(text)}$`);
      expect(regex.test(text), text).toBe(true);
      expect(regex.test(`${text}x`), text).toBe(false);
    }
  });
});

describe('KurrentDB mapping: appends', () => {
  const uuid = '3f0e6e55-2f4e-4bb4-9a43-6c1f3a1f0c11';

  it('given events, when prepared, then the client gets JSON events with their id, type, data and metadata', () => {
    const [prepared] = prepareAppends([
      {
        stream: 'wallet-1',
        expectedRevision: 'no_stream',
        events: [
          { id: uuid, type: 'Opened', data: { a: 1 }, metadata: { actor: 'operator:x', causationId: undefined } },
        ],
      },
    ]);
    expect(prepared!.stream).toBe('wallet-1');
    expect(prepared!.events[0]).toMatchObject({
      id: uuid,
      type: 'Opened',
      contentType: 'application/json',
      data: { a: 1 },
      metadata: { actor: 'operator:x' },
    });
    expect(prepared!.events[0]!.metadata).not.toHaveProperty('causationId');
  });

  it('given an event without id or metadata, when prepared, then it gets a uuid and empty metadata', () => {
    const [prepared] = prepareAppends([{ stream: 's', expectedRevision: 'any', events: [{ type: 'X', data: 7 }] }]);
    expect(prepared!.events[0]!.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(prepared!.events[0]!.metadata).toEqual({});
  });

  it("given bad requests, when prepared, then each is refused with the embedded store's message before anything is sent", () => {
    expect(() => prepareAppends([])).toThrow(/at least one stream/);
    expect(() => prepareAppends([{ stream: 's', expectedRevision: 'any', events: [] }])).toThrow(/zero events/);
    expect(() =>
      prepareAppends([
        { stream: 's', expectedRevision: 'any', events: [{ type: 'X', data: 1 }] },
        { stream: 's', expectedRevision: 'any', events: [{ type: 'Y', data: 1 }] },
      ]),
    ).toThrow(/more than once/);
    expect(() =>
      prepareAppends([{ stream: 's', expectedRevision: 'any', events: [{ id: 'evt-1', type: 'X', data: 1 }] }]),
    ).toThrow(/not a uuid/);
    expect(() =>
      prepareAppends([{ stream: 's', expectedRevision: 'any', events: [{ type: 'X', data: undefined }] }]),
    ).toThrow(/not JSON-serializable/);
    expect(() =>
      prepareAppends([{ stream: '$stats', expectedRevision: 'any', events: [{ type: 'X', data: 1 }] }]),
    ).toThrow(/KurrentDB's own/);
    expect(() => prepareAppends([{ stream: 's', expectedRevision: 'any', events: [{ type: '$X', data: 1 }] }])).toThrow(
      /KurrentDB's own/,
    );
    expect(() =>
      prepareAppends([
        { stream: 's', expectedRevision: 'any', events: [{ type: 'X', data: 1, metadata: { $correlationId: 'c' } }] },
      ]),
    ).toThrow(/metadata key \$correlationId/);
    expect(() => prepareAppends([{ stream: 's', expectedRevision: -3, events: [{ type: 'X', data: 1 }] }])).toThrow(
      /integer >= 0/,
    );
  });

  it('given several streams, when made multi-stream requests, then each keeps its events and its expected state', () => {
    const prepared = prepareAppends([
      {
        stream: 'a',
        expectedRevision: 'no_stream',
        events: [{ type: 'A', data: {}, metadata: { actor: 'user:1', correlationId: 'c' } }],
      },
      { stream: 'b', expectedRevision: 4, events: [{ type: 'B', data: {} }] },
    ]);
    const requests = toMultiStreamRequests(prepared);
    expect(requests.map((r) => [r.streamName, r.expectedState, r.events.length])).toEqual([
      ['a', NO_STREAM, 1],
      ['b', 4n, 1],
    ]);
  });

  it('given a non-string metadata value, when made a multi-stream request, then it is refused: that API keeps only strings', () => {
    const prepared = prepareAppends([
      { stream: 'a', expectedRevision: 'any', events: [{ type: 'A', data: {}, metadata: { attempt: 2 } }] },
      { stream: 'b', expectedRevision: 'any', events: [{ type: 'B', data: {} }] },
    ]);
    expect(() => toMultiStreamRequests(prepared)).toThrow(/metadata attempt .* not a string/);
  });
});

describe('KurrentDB mapping: recorded events', () => {
  const created = new Date('2025-01-02T03:04:05.678Z');
  const resolved = (event: Record<string, unknown>): ResolvedEvent => ({ event: event as never });

  it("given a client event, when mapped, then every field is the port's", () => {
    const mapped = toRecordedEvent(
      resolved({
        id: 'i',
        type: 'Credited',
        data: { amount: '1.50' },
        metadata: { actor: 'a', correlationId: 'c' },
        streamId: 'wallet-1',
        revision: 3n,
        created,
        position: at(800),
        isJson: true,
      }),
    );
    expect(mapped).toEqual({
      id: 'i',
      type: 'Credited',
      data: { amount: '1.50' },
      metadata: { actor: 'a', correlationId: 'c' },
      stream: 'wallet-1',
      revision: 3,
      position: 3200,
      createdAt: '2025-01-02T03:04:05.678Z',
    });
  });

  it('given metadata written by a multi-stream append, when mapped, then the keys KurrentDB added are left out', () => {
    expect(portMetadata({ '$schema.data-format': 'Json', '$schema.name': 'X', $traceId: 't', actor: 'a' })).toEqual({
      actor: 'a',
    });
    expect(portMetadata(undefined)).toEqual({});
    expect(portMetadata(new Uint8Array([1]))).toEqual({});
    expect(portMetadata(['x'])).toEqual({});
  });

  it('given a link to nothing, when mapped, then there is no event', () => {
    expect(toRecordedEvent({})).toBeNull();
  });
});

describe('KurrentDB mapping: errors', () => {
  it("given a wrong expected version, when translated, then it is the port's with the expected revision the caller gave and the actual one", () => {
    const clientError = new ClientWrongExpectedVersionError(undefined, {
      streamName: 'wallet-1',
      expected: 2n,
      current: 5n,
    });
    const error = translateError(clientError, new Map([['wallet-1', 2]]));
    expect(error).toBeInstanceOf(WrongExpectedVersionError);
    expect(error).toMatchObject({ stream: 'wallet-1', expected: 2, actual: 5 });
  });

  it('given a wrong expected version on a missing stream, when translated, then the actual revision is no_stream', () => {
    const clientError = new ClientWrongExpectedVersionError(undefined, {
      streamName: 's',
      expected: STREAM_EXISTS,
      current: NO_STREAM,
    });
    expect(translateError(clientError, new Map([['s', 'stream_exists' as const]]))).toMatchObject({
      stream: 's',
      expected: 'stream_exists',
      actual: 'no_stream',
    });
  });

  it('given an unreachable server, when translated, then reads (UnavailableError) and appends (a plain error with code 14) are both unavailability', () => {
    const read = translateError(new ClientUnavailableError());
    const append = translateError(Object.assign(new Error('14 UNAVAILABLE: No connection established'), { code: 14 }));
    for (const error of [read, append]) expect(error).toBeInstanceOf(EventStoreUnavailableError);
    expect(append.message).toMatch(/unreachable/);
  });

  it('given a server without multi-stream append, when translated, then the error says which version is needed and is permanent (retrying will not upgrade the server)', () => {
    const error = translateError(new ClientUnsupportedError('multiStreamAppend', '25.1'));
    expect(error).toBeInstanceOf(KurrentDbRefusedError);
    expect(error.message).toMatch(/multiStreamAppend .*25\.1/);
  });

  // K2: these used to be EventStoreUnavailableError, so a consumer resubscribed for ever and the API answered 503
  // (retry later) to something no retry can fix. The client's own error classes are built as the client builds
  // them (from the bridge's error names, or from a gRPC status through convertToCommandError).
  // A gRPC status as grpc-js hands it to the client (no status details, no metadata entries).
  const grpc = (code: number, details: string) =>
    Object.assign(new Error(`${code} ${details}`), { code, details, metadata: { get: () => [], getMap: () => ({}) } });
  const permanent: Array<[string, unknown]> = [
    [
      'access denied (a read of $all without the right)',
      new ClientAccessDeniedError(Object.assign(new Error('Access denied'), { name: 'AccessDeniedError' }) as never),
    ],
    ['permission denied as a bare gRPC status', convertToCommandError(grpc(7, 'PERMISSION_DENIED: Access denied'))],
    ['unauthenticated', convertToCommandError(grpc(16, 'UNAUTHENTICATED: bad credentials'))],
    ['a deleted stream', ClientStreamDeletedError.fromStreamName('wallet-1')],
    [
      'a tombstoned stream',
      new ClientStreamTombstonedError(grpc(9, 'FAILED_PRECONDITION') as never, { stream: 'wallet-1' } as never),
    ],
    ['an append over the size limit', new ClientMaxAppendSizeExceededError(undefined, 1_048_576)],
    [
      'a record over the size limit',
      new ClientAppendRecordSizeExceededError(
        grpc(3, 'INVALID_ARGUMENT') as never,
        { stream: 's', recordId: 'r', size: 2_000_000, maxSize: 1_048_576 } as never,
      ),
    ],
    [
      'a multi-stream append over the transaction size limit',
      new ClientTransactionMaxSizeExceededError(grpc(10, 'ABORTED') as never, { maxSize: 1_048_576 } as never),
    ],
    ['an invalid argument', new ClientInvalidArgumentError('fromRevision value must be a non-negative integer')],
    ['an invalid argument as a bare gRPC status', convertToCommandError(grpc(3, 'INVALID_ARGUMENT: bad position'))],
  ];
  for (const [what, clientError] of permanent) {
    it(`given ${what}, when translated, then it is a permanent refusal, not unavailability`, () => {
      const error = translateError(clientError);
      expect(error).toBeInstanceOf(KurrentDbRefusedError);
      expect(error).not.toBeInstanceOf(EventStoreUnavailableError);
      expect(error.cause).toBe(clientError);
    });
  }

  it('given a leader change, a deadline or an unknown transport failure, when translated, then each stays unavailability (worth retrying)', () => {
    const transient = [
      new ClientNotLeaderError(
        Object.assign(new Error('not leader'), {
          metadata: { 'leader-endpoint-host': 'node2', 'leader-endpoint-port': '2113' },
        }) as never,
      ),
      convertToCommandError(grpc(4, 'DEADLINE_EXCEEDED')),
      convertToCommandError(grpc(13, 'INTERNAL')),
      convertToCommandError(grpc(2, 'UNKNOWN: stream reset')),
      new Error('something the client did not classify'),
    ];
    for (const clientError of transient) expect(translateError(clientError)).toBeInstanceOf(EventStoreUnavailableError);
  });

  it('given a missing stream on read, when checked, then it is recognised (the adapter answers [])', () => {
    expect(isStreamNotFound(new ClientStreamNotFoundError(undefined, 'x'))).toBe(true);
    expect(isStreamNotFound(new Error('x'))).toBe(false);
  });
});
