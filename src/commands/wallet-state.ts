import type { IdempotentRequestRecorded, KeyVolumeEvent, WalletEvent } from '../domain/events.ts';
import { addAmounts, Decimal } from '../domain/money.ts';
import { assertNever } from './decider.ts';
import { decimalFields, type SnapshotSpec } from './stream-fold.ts';

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
// pending operations thus costs O(1) per event, not a copy of all its holds. The same sums are its snapshot.
export const walletState = {
  initialState: (): WalletState => ({ balance: '0', held: '0' }),
  snapshot: {
    fold: 'wallet/1',
    restore: (state: unknown) => decimalFields(state, ['balance', 'held'] as const),
  } satisfies SnapshotSpec<WalletState>,
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
  /** Reserved less released, for the key's day. */
  total: string;
}

// A running total, no per-operation map, for the reason the wallet's holds have none: each reservation is
// released at most once, by its operation's rejection or failure, whose event carries the amount reserved
// (both come from the operation's own OperationRequested, and the operation stream's expected revision lets
// one outcome happen). A day of 20,000 creates on a key thus costs O(1) per create, not a copy of the day.
export const keyVolumeState = {
  initialState: (): KeyVolumeState => ({ total: '0' }),
  snapshot: {
    fold: 'keyVolume/1',
    restore: (state: unknown) => decimalFields(state, ['total'] as const),
  } satisfies SnapshotSpec<KeyVolumeState>,
  evolve(state: KeyVolumeState, event: KeyVolumeEvent): KeyVolumeState {
    switch (event.type) {
      case 'VolumeReserved':
        return { total: addAmounts(state.total, event.data.amount) };
      case 'VolumeReleased':
        return { total: addAmounts(state.total, event.data.amount, -1) };
      default:
        return assertNever(event);
    }
  },
};

export type IdempotencyState = { status: 'none' } | ({ status: 'recorded' } & IdempotentRequestRecorded['data']);

export const idempotencyState = {
  initialState: (): IdempotencyState => ({ status: 'none' }),
  evolve: (_state: IdempotencyState, event: IdempotentRequestRecorded): IdempotencyState => ({
    status: 'recorded',
    ...event.data,
  }),
};
