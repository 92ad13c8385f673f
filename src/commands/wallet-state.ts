import type { IdempotentRequestRecorded, KeyVolumeEvent, WalletEvent } from '../domain/events.ts';
import { addAmounts, Decimal } from '../domain/money.ts';
import { assertNever } from './decider.ts';

/**
 * The states that a create-operation decision reads besides the operation itself: the payer's wallet (what
 * it holds for pending operations), the key's volume of the day, and an idempotency record. Amounts are
 * kept as decimal strings so that states stay plain, immutable, cacheable values.
 */

export interface WalletState {
  /** Executed balance: credits minus debits that really happened on the ledger. */
  balance: string;
  /** What pending and approved operations hold. */
  held: string;
}

// Sums only, no per-operation map: each hold is released or settled exactly once (the operation's own
// state machine guarantees it), and the releasing event carries the amount. A payer with thousands of
// pending operations thus costs O(1) per event, not a copy of all its holds.
export const walletState = {
  initialState: (): WalletState => ({ balance: '0', held: '0' }),
  evolve(state: WalletState, event: WalletEvent): WalletState {
    switch (event.type) {
      case 'FundsHeld':
        return { ...state, held: addAmounts(state.held, event.data.amount) };
      case 'HoldReleased':
        return { ...state, held: addAmounts(state.held, event.data.amount, -1) };
      case 'WalletCredited':
        return { ...state, balance: addAmounts(state.balance, event.data.amount) };
      case 'WalletDebited':
        return {
          balance: addAmounts(state.balance, event.data.amount, -1),
          held: addAmounts(state.held, event.data.heldAmount ?? '0', -1),
        };
      default:
        return assertNever(event);
    }
  },
};

/** What the payer can still commit: the executed balance less what pending and approved operations hold. */
export const availableBalance = (wallet: WalletState) => new Decimal(wallet.balance).minus(wallet.held);

export interface KeyVolumeState {
  total: string;
  reservations: Readonly<Record<string, string>>;
}

export const keyVolumeState = {
  initialState: (): KeyVolumeState => ({ total: '0', reservations: {} }),
  evolve(state: KeyVolumeState, event: KeyVolumeEvent): KeyVolumeState {
    const { operationID, amount } = event.data;
    switch (event.type) {
      case 'VolumeReserved':
        return { total: new Decimal(state.total).plus(amount).toString(), reservations: { ...state.reservations, [operationID]: amount } };
      case 'VolumeReleased': {
        const reserved = state.reservations[operationID];
        if (reserved === undefined) return state;
        const { [operationID]: _released, ...reservations } = state.reservations;
        return { total: new Decimal(state.total).minus(reserved).toString(), reservations };
      }
      default:
        return assertNever(event);
    }
  },
};

export type IdempotencyState = { status: 'none' } | ({ status: 'recorded' } & IdempotentRequestRecorded['data']);

export const idempotencyState = {
  initialState: (): IdempotencyState => ({ status: 'none' }),
  evolve: (_state: IdempotencyState, event: IdempotentRequestRecorded): IdempotencyState => ({ status: 'recorded', ...event.data }),
};
