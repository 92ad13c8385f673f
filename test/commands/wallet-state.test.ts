import { describe, expect, it } from 'vitest';
import {
  availableBalance,
  idempotencyState,
  keyVolumeState,
  walletState,
  type KeyVolumeState,
  type WalletState,
} from '../../src/commands/wallet-state.ts';
import type { IdempotentRequestRecorded, KeyVolumeEvent, WalletEvent, WalletRef } from '../../src/domain/events.ts';
import { Decimal } from '../../src/domain/money.ts';

/** The states a create-operation decision reads, folded from their events: given events, then this state. */

const W: WalletRef = { kind: 'merchant', id: 'm-acme' };
const KEY = 'key_AAAAAAAAAAAAAAAA';
const DAY = '2026-03-10';

const credited = (amount: string, operationID = 'op_fund'): WalletEvent => ({
  type: 'WalletCredited',
  data: { wallet: W, operationID, amount },
});
/** A completed debit; heldAmount is the hold it settles ("0" without one). */
const debited = (operationID: string, amount: string, heldAmount = '0'): WalletEvent => ({
  type: 'WalletDebited',
  data: { wallet: W, operationID, amount, heldAmount },
});
const held = (operationID: string, amount: string): WalletEvent => ({
  type: 'FundsHeld',
  data: { wallet: W, operationID, amount },
});
const released = (operationID: string, amount: string, reason: 'rejected' | 'failed' = 'rejected'): WalletEvent => ({
  type: 'HoldReleased',
  data: { wallet: W, operationID, amount, reason },
});
const reserved = (operationID: string, amount: string): KeyVolumeEvent => ({
  type: 'VolumeReserved',
  data: { keyID: KEY, day: DAY, operationID, amount },
});
const volumeReleased = (operationID: string, amount: string): KeyVolumeEvent => ({
  type: 'VolumeReleased',
  data: { keyID: KEY, day: DAY, operationID, amount },
});

const wallet = (...events: WalletEvent[]): WalletState => events.reduce(walletState.evolve, walletState.initialState());
const volume = (...events: KeyVolumeEvent[]): KeyVolumeState =>
  events.reduce(keyVolumeState.evolve, keyVolumeState.initialState());

/** Amounts are decimal strings whose formatting the states do not fix: compare them as numbers at 2 places. */
const at2 = (amount: string | Decimal) => new Decimal(amount).toFixed(2);
function expectWallet(state: WalletState, expected: { balance: string; held: string }) {
  expect(at2(state.balance), 'balance').toBe(expected.balance);
  expect(at2(state.held), 'held').toBe(expected.held);
}

/** Freezes a state and everything in it, so that a mutation throws (test files are ES modules: strict mode). */
function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

describe('wallet state', () => {
  it('when nothing happened, then the balance and the held amount are 0', () => {
    expectWallet(wallet(), { balance: '0.00', held: '0.00' });
  });

  it('when funds are held, then the held amount grows by the hold and the balance is unchanged', () => {
    expectWallet(wallet(credited('500.00'), held('op_a', '120.25')), { balance: '500.00', held: '120.25' });
  });

  it('when two operations hold funds, then the held amount is their sum', () => {
    expectWallet(wallet(credited('500.00'), held('op_a', '120.25'), held('op_b', '0.75')), {
      balance: '500.00',
      held: '121.00',
    });
  });

  it('when a hold is released, then the held amount falls by what it held', () => {
    expectWallet(wallet(credited('500.00'), held('op_a', '120.25'), held('op_b', '0.75'), released('op_a', '120.25')), {
      balance: '500.00',
      held: '0.75',
    });
  });

  it('when a hold is released because its operation failed, then it is released the same way', () => {
    expectWallet(wallet(held('op_a', '10.00'), released('op_a', '10.00', 'failed')), { balance: '0.00', held: '0.00' });
  });

  it("when a release carries its amount, then the held amount falls by exactly that (each hold is released once: the operation's state machine sees to it)", () => {
    expectWallet(wallet(held('op_a', '10.00'), held('op_b', '5.00'), released('op_a', '10.00')), {
      balance: '0.00',
      held: '5.00',
    });
  });

  it('when the wallet is credited, then the balance grows and the holds are unchanged', () => {
    expectWallet(wallet(credited('500.00'), held('op_a', '20.00'), credited('0.01', 'op_in')), {
      balance: '500.01',
      held: '20.00',
    });
  });

  it("when a debit settles an operation's hold, then the balance falls by the debit and the hold is gone", () => {
    expectWallet(
      wallet(credited('500.00'), held('op_a', '101.75'), held('op_b', '3.00'), debited('op_a', '101.75', '101.75')),
      {
        balance: '398.25',
        held: '3.00',
      },
    );
  });

  it('when a debit has no hold (money moved outside the API), then the balance falls and the holds are unchanged', () => {
    expectWallet(wallet(credited('500.00'), held('op_a', '20.00'), debited('op_external', '100.00')), {
      balance: '400.00',
      held: '20.00',
    });
  });

  it('when events are folded, then the state given to evolve is never mutated (cached states are shared)', () => {
    const events = [
      credited('100.00'),
      held('op_a', '10.00'),
      held('op_b', '5.00'),
      released('op_a', '10.00'),
      debited('op_b', '5.00', '5.00'),
      credited('1.00', 'op_c'),
    ];
    let state = deepFreeze(walletState.initialState());
    for (const event of events) state = deepFreeze(walletState.evolve(state, event));
    expectWallet(state, { balance: '96.00', held: '0.00' });
  });
});

describe('available balance', () => {
  it('when funds are held, then the available balance is the balance less what is held', () => {
    expect(at2(availableBalance(wallet(credited('1000.00'), held('op_a', '250.50'), held('op_b', '49.50'))))).toBe(
      '700.00',
    );
  });

  it('when nothing is held, then the available balance is the balance', () => {
    expect(at2(availableBalance(wallet(credited('12.34'))))).toBe('12.34');
  });

  it('when holds are released or settled, then the available balance follows', () => {
    const state = wallet(
      credited('1000.00'),
      held('op_a', '250.00'),
      held('op_b', '100.00'),
      released('op_a', '250.00'),
      debited('op_b', '100.00', '100.00'),
    );
    expect(at2(availableBalance(state))).toBe('900.00');
  });

  it('when the wallet is new, then the available balance is 0', () => {
    expect(availableBalance(wallet()).isZero()).toBe(true);
  });

  it('when amounts have many decimal places, then the arithmetic is exact (no floating point)', () => {
    const state = wallet(credited('0.30'), held('op_a', '0.10'), held('op_b', '0.20'));
    expect(availableBalance(state).isZero()).toBe(true);
  });
});

describe('key volume state', () => {
  it('when nothing was reserved, then the total is 0', () => {
    expect(volume()).toEqual({ total: '0' });
  });

  it('when amounts are reserved, then the total is their sum', () => {
    expect(at2(volume(reserved('op_a', '100.00'), reserved('op_b', '0.50')).total)).toBe('100.50');
  });

  it('when a reservation is released, then the total falls by the amount the release carries', () => {
    expect(
      at2(volume(reserved('op_a', '100.00'), reserved('op_b', '0.50'), volumeReleased('op_a', '100.00')).total),
    ).toBe('0.50');
  });

  it('when a day has thousands of reservations, then the state is still one running total (a create costs the same whatever the day)', () => {
    const events = Array.from({ length: 5000 }, (_, i) =>
      i % 5 === 4 ? volumeReleased(`op_${i - 1}`, '1.00') : reserved(`op_${i}`, '1.00'),
    );
    const state = volume(...events);
    expect(Object.keys(state)).toEqual(['total']);
    expect(at2(state.total)).toBe('3000.00');
  });

  it('when events are folded, then the state given to evolve is never mutated', () => {
    let state = deepFreeze(keyVolumeState.initialState());
    for (const event of [reserved('op_a', '1.00'), reserved('op_b', '2.00'), volumeReleased('op_a', '1.00')])
      state = deepFreeze(keyVolumeState.evolve(state, event));
    expect(at2(state.total)).toBe('2.00');
  });
});

describe('snapshots of the states', () => {
  it('when a wallet state is kept as a snapshot and restored, then it is the same state', () => {
    const state = wallet(credited('500.00'), held('op_a', '120.25'));
    expect(walletState.snapshot.restore(JSON.parse(JSON.stringify(state)))).toEqual(state);
  });

  it('when a key volume state is kept as a snapshot and restored, then it is the same state', () => {
    const state = volume(reserved('op_a', '100.00'));
    expect(keyVolumeState.snapshot.restore(JSON.parse(JSON.stringify(state)))).toEqual(state);
  });

  it('when a stored summary lacks a field or holds something other than a decimal, then it is not restored', () => {
    expect(walletState.snapshot.restore({ balance: '1.00' })).toBeNull();
    expect(walletState.snapshot.restore({ balance: '1.00', held: 'lots' })).toBeNull();
    expect(keyVolumeState.snapshot.restore({ total: 3 })).toBeNull();
    expect(keyVolumeState.snapshot.restore(null)).toBeNull();
  });
});

describe('idempotency state', () => {
  const record = (requestHash: string, recordedAt: string): IdempotentRequestRecorded => ({
    type: 'IdempotentRequestRecorded',
    data: { keyID: KEY, requestHash, response: { status: 200, body: { operationID: 'op_a' } }, recordedAt },
  });

  it('when nothing was recorded, then there is no record', () => {
    expect(idempotencyState.initialState()).toEqual({ status: 'none' });
  });

  it('when a request is recorded, then the state is the record', () => {
    expect(idempotencyState.evolve(idempotencyState.initialState(), record('h1', '2026-03-10T09:00:00.000Z'))).toEqual({
      status: 'recorded',
      keyID: KEY,
      requestHash: 'h1',
      response: { status: 200, body: { operationID: 'op_a' } },
      recordedAt: '2026-03-10T09:00:00.000Z',
    });
  });

  it('when a later request is recorded after the window, then the latest record wins', () => {
    const state = [record('h1', '2026-03-10T09:00:00.000Z'), record('h2', '2026-03-12T09:00:00.000Z')].reduce(
      idempotencyState.evolve,
      idempotencyState.initialState(),
    );
    expect(state).toMatchObject({ status: 'recorded', requestHash: 'h2', recordedAt: '2026-03-12T09:00:00.000Z' });
  });
});

describe('replay', () => {
  const walletEvents: WalletEvent[] = [
    credited('1000.00'),
    held('op_a', '250.50'),
    held('op_b', '10.00'),
    credited('0.01', 'op_in'),
    released('op_a', '250.50'),
    held('op_c', '99.99'),
    debited('op_b', '10.00', '10.00'),
    debited('op_out', '5.00'),
  ];
  const volumeEvents: KeyVolumeEvent[] = [
    reserved('op_a', '250.50'),
    reserved('op_b', '10.00'),
    volumeReleased('op_a', '250.50'),
    reserved('op_c', '99.99'),
  ];

  it('when the same wallet events are folded twice from the initial state, then the states are equal', () => {
    const first = walletEvents.reduce(walletState.evolve, walletState.initialState());
    const second = walletEvents.reduce(walletState.evolve, walletState.initialState());
    expect(second).toEqual(first);
    expectWallet(first, { balance: '985.01', held: '99.99' });
  });

  it('when the same volume events are folded twice from the initial state, then the states are equal', () => {
    const first = volumeEvents.reduce(keyVolumeState.evolve, keyVolumeState.initialState());
    const second = volumeEvents.reduce(keyVolumeState.evolve, keyVolumeState.initialState());
    expect(second).toEqual(first);
    expect(at2(first.total)).toBe('109.99');
  });

  it('when the events are folded in two parts (a cached state, then the newer events), then the state is the same as one fold', () => {
    for (let split = 0; split <= walletEvents.length; split++) {
      const cached = walletEvents.slice(0, split).reduce(walletState.evolve, walletState.initialState());
      expect(walletEvents.slice(split).reduce(walletState.evolve, cached)).toEqual(
        walletEvents.reduce(walletState.evolve, walletState.initialState()),
      );
    }
  });

  it('when initialState is called twice, then the states are equal', () => {
    expect(walletState.initialState()).toEqual(walletState.initialState());
    expect(keyVolumeState.initialState()).toEqual(keyVolumeState.initialState());
  });
});
