import { expectRefused } from '../support/decider-spec.ts';
import { describe, expect, it } from 'vitest';
import {
  decideCreateOperation,
  IDEMPOTENCY_WINDOW_MS,
  repeatOf,
  type CreateOperation,
  type CreateOperationOutcome,
  type CreateOperationStates,
} from '../../src/commands/create-operation.ts';
import type { Decision, StreamWrite } from '../../src/commands/pipeline.ts';
import {
  idempotencyState,
  keyVolumeState,
  walletState,
  type IdempotencyState,
} from '../../src/commands/wallet-state.ts';
import { type DomainErrorCode } from '../../src/domain/errors.ts';
import type {
  CashOutConsentEvent,
  IdempotentRequestRecorded,
  KeyVolumeEvent,
  OperationRequested,
  WalletEvent,
  WalletRef,
} from '../../src/domain/events.ts';
import { cashOutConsentDecider } from '../../src/commands/cash-out-consent.ts';
import { hashCashOutCode } from '../../src/domain/cash-out-codes.ts';
import { streams } from '../../src/domain/streams.ts';

/**
 * decideCreateOperation, pure: given the states folded from past events, when an operation is to be
 * created, then exactly these streams are written (or it is refused with this code).
 */

const NOW = '2026-03-10T09:00:00.000Z';
const DAY = '2026-03-10';
const KEY = 'key_AAAAAAAAAAAAAAAA';
const PAYER: WalletRef = { kind: 'distributor', id: 'd-acme' };
const IDEMPOTENCY_STREAM = streams.idempotency(KEY, 'a'.repeat(64));
const HASH = 'b'.repeat(64);
const OTHER_HASH = 'c'.repeat(64);
const INDIVIDUAL = '+2348123456781';
/** What the write API answers to the created operation (src/write-api/routes.ts createdResponse). */
const ANSWER = { status: 200, body: { operationID: 'op_new' } };
const minutesBefore = (minutes: number) => new Date(Date.parse(NOW) - minutes * 60_000).toISOString();

function operation(change: Partial<OperationRequested['data']> = {}): OperationRequested['data'] {
  return {
    operationID: 'op_new',
    party: { type: 'distributor', id: 'd-acme' },
    keyID: KEY,
    operationType: 'cash-in',
    amount: '100.00',
    fee: '0.00',
    payer: PAYER,
    payee: { kind: 'individual', id: '+2348123456781' },
    payerName: 'Acme',
    payerShortCode: '1234',
    counterparty: { kind: 'individual', id: '+2348123456781', name: 'Ada' },
    memo: null,
    cashOutFulfillmentType: null,
    cashOutFulfillmentID: null,
    volumeDay: DAY,
    createdAt: NOW,
    ...change,
  };
}

interface Given {
  wallet?: WalletEvent[];
  volume?: KeyVolumeEvent[];
  idempotency?: IdempotentRequestRecorded[];
  consent?: CashOutConsentEvent[];
}

interface When {
  operation?: Partial<OperationRequested['data']>;
  maxTransactionAmount?: string | null;
  maxDailyVolume?: string | null;
  idempotency?: { stream: string; requestHash: string } | null;
  /** The write API's answer to the create, recorded with an Idempotency-Key; ANSWER unless given. */
  answer?: { status: number; body: Record<string, unknown> };
  assetScale?: number;
  /** CASH_OUT_CONSENT=individual-code: the hash of the code the request carried (null: none). Absent: no consent required. */
  presentedHash?: string | null;
  /** VOLUME_TIME_ZONE; UTC unless given. */
  volumeTimeZone?: string;
}

// Past events of the payer's wallet, the key's volume and an idempotency record.
const credited = (amount: string, operationID = 'op_funding'): WalletEvent => ({
  type: 'WalletCredited',
  data: { wallet: PAYER, operationID, amount },
});
const held = (operationID: string, amount: string): WalletEvent => ({
  type: 'FundsHeld',
  data: { wallet: PAYER, operationID, amount },
});
const holdReleased = (operationID: string, amount: string): WalletEvent => ({
  type: 'HoldReleased',
  data: { wallet: PAYER, operationID, amount, reason: 'rejected' },
});
const reserved = (operationID: string, amount: string): KeyVolumeEvent => ({
  type: 'VolumeReserved',
  data: { keyID: KEY, day: DAY, operationID, amount },
});
const released = (operationID: string, amount: string): KeyVolumeEvent => ({
  type: 'VolumeReleased',
  data: { keyID: KEY, day: DAY, operationID, amount },
});
const recorded = (requestHash: string, recordedAt: string, operationID = 'op_first'): IdempotentRequestRecorded => ({
  type: 'IdempotentRequestRecorded',
  data: { keyID: KEY, requestHash, response: { status: 200, body: { operationID } }, recordedAt },
});

function given(past: Given) {
  const states: CreateOperationStates = {
    wallet: (past.wallet ?? []).reduce(walletState.evolve, walletState.initialState()),
  };
  if (past.volume) states.volume = past.volume.reduce(keyVolumeState.evolve, keyVolumeState.initialState());
  if (past.idempotency)
    states.idempotency = past.idempotency.reduce<IdempotencyState>(
      idempotencyState.evolve,
      idempotencyState.initialState(),
    );
  if (past.consent)
    states.consent = past.consent.reduce(cashOutConsentDecider.evolve, cashOutConsentDecider.initialState());

  const command = (when: When): CreateOperation => ({
    operation: operation(when.operation),
    limits: { maxTransactionAmount: when.maxTransactionAmount ?? null, maxDailyVolume: when.maxDailyVolume ?? null },
    idempotency: when.idempotency ? { ...when.idempotency, response: when.answer ?? ANSWER } : null,
    assetScale: when.assetScale ?? 2,
    consent: when.presentedHash === undefined ? null : { phone: INDIVIDUAL, presentedHash: when.presentedHash },
    volumeTimeZone: when.volumeTimeZone ?? 'UTC',
  });
  return {
    when: (when: When = {}) => {
      const decide = () => decideCreateOperation(command(when), states);
      return {
        decide,
        /** The decision, when it is not refused. */
        then: (): Decision<CreateOperationOutcome> => decide(),
        thenRefused: (code: DomainErrorCode, message?: RegExp) => expectRefused(decide, code, message),
      };
    },
  };
}

/** The writes keyed by stream: a decision writes each stream at most once. */
function byStream(writes: StreamWrite[]): Record<string, StreamWrite> {
  const map: Record<string, StreamWrite> = {};
  for (const write of writes) {
    expect(map[write.stream], `${write.stream} is written twice`).toBeUndefined();
    map[write.stream] = write;
  }
  return map;
}

const funded = (amount = '1000.00') => ({ wallet: [credited(amount)] });
const OPERATION_STREAM = streams.operation('op_new');
const WALLET_STREAM = streams.wallet(PAYER);
const VOLUME_STREAM = streams.keyVolume(KEY, DAY);

describe('deciding to create an operation', () => {
  describe('when it is created', () => {
    it("when the key has no limits and no Idempotency-Key is given, then exactly the operation and the payer's wallet are written", () => {
      const { writes, result } = given(funded()).when().then();
      expect(Object.keys(byStream(writes)).sort()).toEqual([OPERATION_STREAM, WALLET_STREAM].sort());
      expect(result).toEqual({ kind: 'created', operation: operation() });
    });

    it('when it is created, then the operation stream gets OperationRequested with the whole operation and must not exist yet', () => {
      const { writes } = given(funded()).when().then();
      expect(byStream(writes)[OPERATION_STREAM]).toEqual({
        stream: OPERATION_STREAM,
        events: [{ type: 'OperationRequested', data: operation() }],
        expectedRevision: 'no_stream',
      });
    });

    it('when it is created, then the wallet gets FundsHeld of amount plus fee at the revision read (no explicit revision)', () => {
      const { writes } = given(funded())
        .when({ operation: { amount: '100.50', fee: '0.25' } })
        .then();
      const wallet = byStream(writes)[WALLET_STREAM]!;
      expect(wallet.events).toEqual([
        { type: 'FundsHeld', data: { wallet: PAYER, operationID: 'op_new', amount: '100.75' } },
      ]);
      expect(wallet.expectedRevision).toBeUndefined();
    });

    it.each([
      [0, '7', '0', '7'],
      [2, '7', '0', '7.00'],
      [2, '7.5', '0.25', '7.75'],
      [4, '1', '0.0001', '1.0001'],
      [8, '12.3', '0', '12.30000000'],
    ])(
      'when the asset scale is %i and amount %s with fee %s, then FundsHeld is formatted as %s',
      (assetScale, amount, fee, expected) => {
        const { writes } = given(funded()).when({ operation: { amount, fee }, assetScale }).then();
        expect(byStream(writes)[WALLET_STREAM]!.events[0]!.data).toMatchObject({ amount: expected });
      },
    );

    it("when the key has a max daily volume and the operation has a volume day, then the key's volume of the day reserves the amount (without the fee)", () => {
      const { writes } = given({ ...funded(), volume: [] })
        .when({ maxDailyVolume: '5000.00', operation: { fee: '1.50' } })
        .then();
      expect(Object.keys(byStream(writes)).sort()).toEqual([OPERATION_STREAM, WALLET_STREAM, VOLUME_STREAM].sort());
      const volume = byStream(writes)[VOLUME_STREAM]!;
      expect(volume.events).toEqual([
        { type: 'VolumeReserved', data: { keyID: KEY, day: DAY, operationID: 'op_new', amount: '100.00' } },
      ]);
      expect(volume.expectedRevision).toBeUndefined();
    });

    it('when the key has no max daily volume, then no volume is written even though the operation has a volume day', () => {
      const { writes } = given(funded())
        .when({ maxDailyVolume: null, operation: { volumeDay: DAY } })
        .then();
      expect(byStream(writes)[VOLUME_STREAM]).toBeUndefined();
      expect(writes).toHaveLength(2);
    });

    it('when the operation has no volume day, then no volume is written even though the key has a max daily volume', () => {
      const { writes } = given(funded())
        .when({ maxDailyVolume: '5000.00', operation: { volumeDay: null } })
        .then();
      expect(writes.map((w) => w.stream).some((s) => s.startsWith('keyVolume-'))).toBe(false);
      expect(writes).toHaveLength(2);
    });

    it('when an Idempotency-Key is given, then its stream records the request hash, the response and the time', () => {
      const { writes, result } = given({ ...funded(), idempotency: [] })
        .when({ idempotency: { stream: IDEMPOTENCY_STREAM, requestHash: HASH } })
        .then();
      expect(Object.keys(byStream(writes)).sort()).toEqual(
        [OPERATION_STREAM, WALLET_STREAM, IDEMPOTENCY_STREAM].sort(),
      );
      expect(byStream(writes)[IDEMPOTENCY_STREAM]!.events).toEqual([
        {
          type: 'IdempotentRequestRecorded',
          data: {
            keyID: KEY,
            requestHash: HASH,
            response: { status: 200, body: { operationID: 'op_new' } },
            recordedAt: NOW,
          },
        },
      ]);
      expect(result).toEqual({ kind: 'created', operation: operation() });
    });

    it('when an Idempotency-Key is given, then the answer is recorded as the command carries it (the write API shapes it, not the decision)', () => {
      const answer = { status: 200, body: { operationID: 'op_new', shapedBy: 'the write API' } };
      const { writes } = given({ ...funded(), idempotency: [] })
        .when({ idempotency: { stream: IDEMPOTENCY_STREAM, requestHash: HASH }, answer })
        .then();
      expect(byStream(writes)[IDEMPOTENCY_STREAM]!.events[0]!.data).toMatchObject({ response: answer });
    });

    it('when no Idempotency-Key is given, then no idempotency stream is written', () => {
      const { writes } = given(funded()).when({ idempotency: null }).then();
      expect(writes.some((w) => w.stream.startsWith('idempotency-'))).toBe(false);
    });

    it('when every option applies, then the four streams are written, each once', () => {
      const { writes } = given({ ...funded(), volume: [], idempotency: [] })
        .when({
          maxDailyVolume: '5000.00',
          maxTransactionAmount: '500.00',
          idempotency: { stream: IDEMPOTENCY_STREAM, requestHash: HASH },
        })
        .then();
      expect(Object.keys(byStream(writes)).sort()).toEqual(
        [OPERATION_STREAM, WALLET_STREAM, VOLUME_STREAM, IDEMPOTENCY_STREAM].sort(),
      );
      for (const write of writes) expect(write.events).toHaveLength(1);
    });
  });

  describe("the key's max transaction amount", () => {
    it('when the amount is above it, then the operation is refused', () =>
      given(funded())
        .when({ maxTransactionAmount: '100.00', operation: { amount: '100.01' } })
        .thenRefused('TRANSACTION_LIMIT_EXCEEDED', /100\.00/));

    it('when the amount equals it, then the operation is created', () =>
      expect(
        given(funded())
          .when({ maxTransactionAmount: '100', operation: { amount: '100.00' } })
          .then().result.kind,
      ).toBe('created'));

    it('when the amount is below it but amount plus fee is above, then it is created (the limit is on the amount)', () =>
      expect(
        given(funded())
          .when({ maxTransactionAmount: '100.00', operation: { amount: '100.00', fee: '5.00' } })
          .then().result.kind,
      ).toBe('created'));

    it('when none is set, then any amount the balance covers is created', () =>
      expect(
        given(funded('999999999999.00'))
          .when({ maxTransactionAmount: null, operation: { amount: '999999999999.00' } })
          .then().result.kind,
      ).toBe('created'));

    it('when the amount is above it and the balance is short too, then the transaction limit is reported first (rule 2 before rule 4)', () =>
      given({ wallet: [] })
        .when({ maxTransactionAmount: '10.00', operation: { amount: '20.00' } })
        .thenRefused('TRANSACTION_LIMIT_EXCEEDED'));
  });

  describe("the key's max daily volume", () => {
    it("when the day's reservations plus the amount exactly reach it, then the operation is created", () => {
      const { writes } = given({ ...funded(), volume: [reserved('op_a', '600.00'), reserved('op_b', '300.00')] })
        .when({ maxDailyVolume: '1000.00', operation: { amount: '100.00' } })
        .then();
      expect(byStream(writes)[VOLUME_STREAM]).toBeDefined();
    });

    it("when the day's reservations plus the amount pass it by a cent, then the operation is refused", () =>
      given({ ...funded(), volume: [reserved('op_a', '900.01')] })
        .when({ maxDailyVolume: '1000.00', operation: { amount: '100.00' } })
        .thenRefused('DAILY_VOLUME_EXCEEDED', /1000\.00/));

    it('when the amount alone passes it on a fresh day, then the operation is refused', () =>
      given({ ...funded('5000.00'), volume: [] })
        .when({ maxDailyVolume: '1000.00', operation: { amount: '1000.01' } })
        .thenRefused('DAILY_VOLUME_EXCEEDED'));

    it('when a reservation was released (its operation rejected), then it no longer counts', () => {
      const volume = [reserved('op_a', '500.00'), reserved('op_b', '450.00'), released('op_b', '450.00')];
      expect(
        given({ ...funded(), volume })
          .when({ maxDailyVolume: '1000.00', operation: { amount: '500.00' } })
          .then().result.kind,
      ).toBe('created');
    });

    it('when the same reservations were not released, then the same operation is refused', () =>
      given({ ...funded(), volume: [reserved('op_a', '500.00'), reserved('op_b', '450.00')] })
        .when({ maxDailyVolume: '1000.00', operation: { amount: '500.00' } })
        .thenRefused('DAILY_VOLUME_EXCEEDED'));

    it('when the operation has a fee, then only the amount counts against the volume', () =>
      expect(
        given({ ...funded(), volume: [reserved('op_a', '900.00')] })
          .when({ maxDailyVolume: '1000.00', operation: { amount: '100.00', fee: '10.00' } })
          .then().result.kind,
      ).toBe('created'));
  });

  describe("the payer's balance", () => {
    it('when the balance covers the amount but pending holds leave too little available, then the operation is refused', () =>
      given({ wallet: [credited('1000.00'), held('op_pending', '950.00')] })
        .when({ operation: { amount: '100.00' } })
        .thenRefused('INSUFFICIENT_BALANCE'));

    it('when the available balance (balance less holds) exactly covers the amount, then it is created', () =>
      expect(
        given({ wallet: [credited('1000.00'), held('op_pending', '900.00')] })
          .when({ operation: { amount: '100.00' } })
          .then().result.kind,
      ).toBe('created'));

    it('when the available balance covers the amount but not amount plus fee, then the operation is refused', () =>
      given({ wallet: [credited('100.00')] })
        .when({ operation: { amount: '100.00', fee: '0.01' } })
        .thenRefused('INSUFFICIENT_BALANCE'));

    it('when amount plus fee exactly equals the available balance, then it is created', () => {
      const { writes } = given({ wallet: [credited('100.00')] })
        .when({ operation: { amount: '99.50', fee: '0.50' } })
        .then();
      expect(byStream(writes)[WALLET_STREAM]!.events[0]!.data).toMatchObject({ amount: '100.00' });
    });

    it('when a hold was released, then its funds are available again', () =>
      expect(
        given({ wallet: [credited('1000.00'), held('op_x', '950.00'), holdReleased('op_x', '950.00')] })
          .when({ operation: { amount: '1000.00' } })
          .then().result.kind,
      ).toBe('created'));

    it('when a settled debit took the funds, then they are not available', () =>
      given({
        wallet: [
          credited('1000.00'),
          held('op_x', '950.00'),
          {
            type: 'WalletDebited',
            data: { wallet: PAYER, operationID: 'op_x', amount: '950.00', heldAmount: '950.00' },
          },
        ],
      })
        .when({ operation: { amount: '100.00' } })
        .thenRefused('INSUFFICIENT_BALANCE'));

    it('when the wallet has never been credited, then the operation is refused', () =>
      given({ wallet: [] })
        .when({ operation: { amount: '0.01' } })
        .thenRefused('INSUFFICIENT_BALANCE'));
  });

  describe("amounts in a refusal's detail, at the asset scale", () => {
    it('when the daily volume refuses, then the limit and what is left are printed at the scale (4289.50 left, never 4289.5)', () =>
      given({ ...funded('9000.00'), volume: [reserved('op_a', '710.5')] })
        .when({ maxDailyVolume: '5000', operation: { amount: '4300.00' } })
        .thenRefused(
          'DAILY_VOLUME_EXCEEDED',
          /^this operation would exceed the key's max daily volume of 5000\.00 \(4289\.50 left for 2026-03-10; the day runs 00:00-24:00 UTC\)$/,
        ));

    it('when the daily volume refuses in a time zone other than UTC, then the detail says when the day runs, as an offset from UTC and the zone', () => {
      given({ ...funded('9000.00'), volume: [reserved('op_a', '1000')] })
        .when({ maxDailyVolume: '1000', volumeTimeZone: 'Africa/Lagos', operation: { amount: '1.00' } })
        .thenRefused(
          'DAILY_VOLUME_EXCEEDED',
          /left for 2026-03-10; the day runs 00:00-24:00 UTC\+01:00 \(Africa\/Lagos\)\)$/,
        );
      given({ ...funded('9000.00'), volume: [reserved('op_a', '1000')] })
        .when({ maxDailyVolume: '1000', volumeTimeZone: 'America/Caracas', operation: { amount: '1.00' } })
        .thenRefused('DAILY_VOLUME_EXCEEDED', /the day runs 00:00-24:00 UTC-04:00 \(America\/Caracas\)\)$/);
    });

    it("when nothing is left of the day's volume, then it says 0.00 left", () =>
      given({ ...funded(), volume: [reserved('op_a', '1000')] })
        .when({ maxDailyVolume: '1000', operation: { amount: '1.00' } })
        .thenRefused('DAILY_VOLUME_EXCEEDED', /\(0\.00 left for /));

    it('when the transaction limit refuses, then the amount and the limit are printed at the scale', () =>
      given(funded())
        .when({ maxTransactionAmount: '100', operation: { amount: '100.5' } })
        .thenRefused(
          'TRANSACTION_LIMIT_EXCEEDED',
          /^amount 100\.50 exceeds this key's max transaction amount of 100\.00$/,
        ));

    it('when the balance refuses, then the detail names the available amount (balance less holds) and what was needed (amount + fee)', () =>
      given({ wallet: [credited('235.00'), held('op_pending', '225')] })
        .when({ operation: { amount: '14.5', fee: '0.5' } })
        .thenRefused(
          'INSUFFICIENT_BALANCE',
          /^the payer’s available balance of 10\.00 does not cover the amount and its fee \(15\.00\)$/,
        ));

    it('when the asset scale is 4, then the amounts have 4 decimals', () =>
      given({ wallet: [credited('1')] })
        .when({ operation: { amount: '2', fee: '0' }, assetScale: 4 })
        .thenRefused(
          'INSUFFICIENT_BALANCE',
          /available balance of 1\.0000 does not cover the amount and its fee \(2\.0000\)/,
        ));
  });

  describe('idempotency', () => {
    const withKey = (requestHash = HASH) => ({ idempotency: { stream: IDEMPOTENCY_STREAM, requestHash } });
    const hoursBefore = (hours: number, extraMs = 0) =>
      new Date(Date.parse(NOW) - hours * 3600_000 - extraMs).toISOString();

    it('when the same request was recorded within 24 hours, then its response is replayed and nothing is written', () => {
      const decision = given({ ...funded(), idempotency: [recorded(HASH, hoursBefore(1))] })
        .when(withKey())
        .then();
      expect(decision).toEqual({
        writes: [],
        result: { kind: 'replayed', response: { status: 200, body: { operationID: 'op_first' } } },
      });
    });

    it('when the same request was recorded 1 ms less than 24 hours ago, then it is still replayed', () => {
      const recordedAt = new Date(Date.parse(NOW) - IDEMPOTENCY_WINDOW_MS + 1).toISOString();
      expect(
        given({ ...funded(), idempotency: [recorded(HASH, recordedAt)] })
          .when(withKey())
          .then().result.kind,
      ).toBe('replayed');
    });

    it('when the same request is replayed, then no limit or balance is checked again (the first answer stands)', () => {
      const decision = given({
        wallet: [],
        volume: [reserved('op_first', '1000.00')],
        idempotency: [recorded(HASH, hoursBefore(2))],
      })
        .when({ ...withKey(), maxTransactionAmount: '1.00', maxDailyVolume: '1000.00' })
        .then();
      expect(decision.writes).toEqual([]);
      expect(decision.result.kind).toBe('replayed');
    });

    it('when the key was used with a different request within 24 hours, then it is refused as reused', () =>
      given({ ...funded(), idempotency: [recorded(HASH, hoursBefore(23))] })
        .when(withKey(OTHER_HASH))
        .thenRefused('IDEMPOTENCY_KEY_REUSED'));

    it('when the record looks a day older by this clock (this process runs a day ahead, or a retry came late), then its response is still replayed and nothing is written', () => {
      const decision = given({ ...funded(), idempotency: [recorded(HASH, hoursBefore(24, 60_000))] })
        .when(withKey())
        .then();
      expect(decision).toEqual({
        writes: [],
        result: { kind: 'replayed', response: { status: 200, body: { operationID: 'op_first' } } },
      });
    });

    it('when a record that looks two days old had a different request, then the key is still refused as reused', () =>
      given({ ...funded(), idempotency: [recorded(OTHER_HASH, hoursBefore(48))] })
        .when(withKey(HASH))
        .thenRefused('IDEMPOTENCY_KEY_REUSED', /^this Idempotency-Key was already used with a different request$/));

    it('when the key has no record yet, then the operation is created and recorded', () => {
      const { writes } = given({ ...funded(), idempotency: [] })
        .when(withKey())
        .then();
      expect(byStream(writes)[IDEMPOTENCY_STREAM]).toBeDefined();
    });

    describe('the one decision the handler and the decider share (repeatOf)', () => {
      const response = { status: 200, body: { operationID: 'op_first' } };
      const record: IdempotencyState = {
        status: 'recorded',
        keyID: 'key_1',
        requestHash: HASH,
        response,
        recordedAt: NOW,
      };
      it.each([
        ['no record of the key', { status: 'none' } as IdempotencyState, null],
        ['no state read (no Idempotency-Key stream)', undefined, null],
        ['a record of the same request', record, { kind: 'replayed', response }],
      ] as const)('given %s, then the answer is as shown', (_, state, then) => {
        expect(repeatOf(state, HASH)).toEqual(then);
      });

      it('given a record of another request, then the key is refused as reused', () => {
        expect(() => repeatOf(record, OTHER_HASH)).toThrow(expect.objectContaining({ code: 'IDEMPOTENCY_KEY_REUSED' }));
      });
    });

    it('when a record exists but the request carries no Idempotency-Key, then the record is ignored and a new operation is created', () => {
      const { writes, result } = given({ ...funded(), idempotency: [recorded(HASH, hoursBefore(1))] })
        .when({ idempotency: null })
        .then();
      expect(result.kind).toBe('created');
      expect(writes).toHaveLength(2);
    });
  });

  describe("the individual's consent to a cash-out (CASH_OUT_CONSENT=individual-code)", () => {
    const SECRETS_KEY = Buffer.alloc(32, 1);
    const CODE_HASH = hashCashOutCode(SECRETS_KEY, INDIVIDUAL, '12345678');
    const CONSENT_STREAM = streams.cashOutConsent(INDIVIDUAL);
    const codeIssued = (maxAmount: string | null = null): CashOutConsentEvent => ({
      type: 'CashOutCodeIssued',
      data: {
        phone: INDIVIDUAL,
        codeID: 'coc_1',
        codeHash: CODE_HASH,
        maxAmount,
        issuedAt: minutesBefore(1),
        expiresAt: minutesBefore(-9),
      },
    });
    const cashOut = {
      operationType: 'cash-out-fulfillment' as const,
      payer: { kind: 'individual' as const, id: INDIVIDUAL },
      payee: PAYER,
      cashOutFulfillmentType: 'cash' as const,
      cashOutFulfillmentID: 'RCPT-1',
    };
    const individualFunded = (amount = '1000.00') => ({ wallet: [credited(amount)], consent: [codeIssued()] });

    it("when the cash-out carries the individual's live code, then the code is used in the same append, at the revision read", () => {
      const { writes, result } = given(individualFunded())
        .when({ operation: cashOut, presentedHash: CODE_HASH })
        .then();
      expect(result.kind).toBe('created');
      expect(byStream(writes)[CONSENT_STREAM]).toEqual({
        stream: CONSENT_STREAM,
        events: [
          { type: 'CashOutCodeUsed', data: { phone: INDIVIDUAL, codeID: 'coc_1', operationID: 'op_new', usedAt: NOW } },
        ],
      });
      expect(byStream(writes)[OPERATION_STREAM]).toBeDefined();
    });

    it('when the cash-out carries no code, then it is refused CASH_OUT_NOT_AUTHORIZED and nothing is written', () =>
      given(individualFunded())
        .when({ operation: cashOut, presentedHash: null })
        .thenRefused('CASH_OUT_NOT_AUTHORIZED', /authorizationCode/));

    it("when the cash-out carries a wrong code and the balance is short too, then consent is reported first (a refusal tells nothing of the individual's balance): only the wrong code is written, counted", () => {
      const { writes, result } = given(individualFunded('1.00'))
        .when({ operation: cashOut, presentedHash: hashCashOutCode(SECRETS_KEY, INDIVIDUAL, '00000000') })
        .then();
      expect(result).toMatchObject({ kind: 'refused', error: { code: 'CASH_OUT_NOT_AUTHORIZED' } });
      expect(writes).toEqual([
        {
          stream: CONSENT_STREAM,
          events: [
            {
              type: 'WrongCashOutCodePresented',
              data: { phone: INDIVIDUAL, operationID: 'op_new', wrongCount: 1, presentedAt: NOW },
            },
          ],
        },
      ]);
    });

    it('when the code is right but the balance is short, then it is refused INSUFFICIENT_BALANCE and the code is not used (nothing is written)', () =>
      given(individualFunded('1.00'))
        .when({ operation: cashOut, presentedHash: CODE_HASH })
        .thenRefused('INSUFFICIENT_BALANCE'));

    it('when no consent is required, then no consent stream is read or written, whatever the request carries', () => {
      const { writes } = given(funded()).when({ operation: cashOut }).then();
      expect(byStream(writes)[CONSENT_STREAM]).toBeUndefined();
    });

    it('when the same request is replayed with its Idempotency-Key, then the first answer stands (the code it used is not asked for again)', () => {
      const consent: CashOutConsentEvent[] = [
        codeIssued(),
        {
          type: 'CashOutCodeUsed',
          data: { phone: INDIVIDUAL, codeID: 'coc_1', operationID: 'op_first', usedAt: minutesBefore(0) },
        },
      ];
      const { writes, result } = given({
        ...individualFunded(),
        consent,
        idempotency: [recorded(HASH, minutesBefore(0))],
      })
        .when({
          operation: cashOut,
          presentedHash: CODE_HASH,
          idempotency: { stream: IDEMPOTENCY_STREAM, requestHash: HASH },
        })
        .then();
      expect(result.kind).toBe('replayed');
      expect(writes).toEqual([]);
    });
  });
});
