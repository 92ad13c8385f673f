import { describe, expect, it } from 'vitest';
import { availableBalance, walletState } from '../../src/commands/wallet-state.ts';
import type { WalletEvent, WalletRef } from '../../src/domain/events.ts';
import { Decimal } from '../../src/domain/money.ts';
import { balanceDocId, balancesProjection, toApi, type BalanceDoc } from '../../src/projections/balances.ts';
import {
  DISTRIBUTOR,
  MERCHANT,
  PHONE,
  approved,
  credited,
  debited,
  projectionSpec,
  request,
  stored,
} from '../support/projection-spec.ts';

const distributor: WalletRef = { kind: 'distributor', id: DISTRIBUTOR.id };
const merchant: WalletRef = { kind: 'merchant', id: MERCHANT.id };
const individual: WalletRef = { kind: 'individual', id: PHONE };
const fees: WalletRef = { kind: 'platform', id: 'fees' };
const issuance: WalletRef = { kind: 'platform', id: 'issuance' };

const spec = projectionSpec(balancesProjection());
const fundsHeld = (wallet: WalletRef, amount: string, operationID: string): WalletEvent => ({
  type: 'FundsHeld',
  data: { wallet, operationID, amount },
});
const holdReleased = (
  wallet: WalletRef,
  amount: string,
  operationID: string,
  reason: 'rejected' | 'failed' = 'rejected',
): WalletEvent => ({
  type: 'HoldReleased',
  data: { wallet, operationID, amount, reason },
});
const storedAt = (position: number) => stored([{ type: 'x', data: null }], position)[0]!.createdAt;
const doc = (wallet: WalletRef, balance: string, position: number, held = '0.00'): BalanceDoc => ({
  id: balanceDocId(wallet),
  wallet,
  balance,
  held,
  updatedAt: storedAt(position),
  position,
});

describe('balances projection', () => {
  it('when a wallet is named, then its document id is <kind>:<id>', () => {
    expect(balanceDocId(distributor)).toBe(`distributor:${DISTRIBUTOR.id}`);
    expect(balanceDocId(merchant)).toBe(`merchant:${MERCHANT.id}`);
    expect(balanceDocId(individual)).toBe('individual:+2348012345678');
    expect(balanceDocId(fees)).toBe('platform:fees');
  });

  it('when a wallet is first credited, then its balance is the amount at the scale', () => {
    spec
      .given()
      .when(credited(distributor, '5000'))
      .then({ [balanceDocId(distributor)]: doc(distributor, '5000.00', 1) });
  });

  it('when a wallet is credited then debited, then the balance is the difference', () => {
    spec
      .given(credited(merchant, '100.00'))
      .when(debited(merchant, '30.25', 'op_x', '0'))
      .then({ [balanceDocId(merchant)]: doc(merchant, '69.75', 2) });
  });

  it('when 0.10 and 0.20 are credited, then the balance is exactly 0.30', () => {
    spec
      .given(credited(individual, '0.10'))
      .when(credited(individual, '0.20'))
      .then({ [balanceDocId(individual)]: doc(individual, '0.30', 2) });
  });

  it('when a balance comes back to zero, then it reads 0.00 (never -0.00)', () => {
    spec
      .given(credited(fees, '0.10'))
      .when(debited(fees, '0.10', 'op_x', '0'))
      .then({ [balanceDocId(fees)]: doc(fees, '0.00', 2) });
  });

  it('when e-money is issued, then the issuance account goes negative and the distributor is credited', () => {
    spec
      .given()
      .when(debited(issuance, '1000000.00', 'op_issue', '0'), credited(distributor, '1000000.00', 'op_issue'))
      .then({
        [balanceDocId(issuance)]: doc(issuance, '-1000000.00', 1),
        [balanceDocId(distributor)]: doc(distributor, '1000000.00', 2),
      });
  });

  it('when one completion moves money between several wallets, then each has its own balance', () => {
    const { docs } = spec
      .given(credited(merchant, '200.00'))
      .when(debited(merchant, '101.50', 'op_x', '0'), credited(distributor, '100.00'), credited(fees, '1.50'));
    expect(Object.fromEntries(Object.entries(docs).map(([id, d]) => [id, d.balance]))).toEqual({
      [balanceDocId(merchant)]: '98.50',
      [balanceDocId(distributor)]: '100.00',
      [balanceDocId(fees)]: '1.50',
    });
  });

  it('when the asset scale is 4, then balances are formatted with 4 decimals', () => {
    projectionSpec(balancesProjection({ assetScale: 4 }))
      .given(credited(merchant, '1.0001'))
      .when(credited(merchant, '0.0002'))
      .then({ [balanceDocId(merchant)]: doc(merchant, '1.0003', 2, '0.0000') });
  });

  it('when events of no interest arrive, then no balance changes', () => {
    spec
      .given(credited(merchant, '10.00'))
      .when(request.cashInToMerchant('op_1'), approved('op_1'))
      .thenNothingChanged();
  });

  it('when an event a document has already seen is applied again, then nothing changes', () => {
    const history = stored([
      credited(merchant, '10.00'),
      fundsHeld(merchant, '2.50', 'op_x'),
      debited(merchant, '2.50'),
      credited(distributor, '7.00'),
      credited(merchant, '0.01'),
    ]);
    const built = spec.fold(history);
    expect(built[balanceDocId(merchant)]!.balance).toBe('7.51');
    expect(spec.fold(history.flatMap((event) => [event, event]))).toEqual(built);
    expect(spec.fold(history, built)).toEqual(built);
  });

  it('when the balance is read, then it is the contract object { balance } with the extensions available and held, and zero for an unknown wallet', () => {
    expect(toApi(doc(distributor, '5000.00', 1))).toEqual({ balance: '5000.00', available: '5000.00', held: '0.00' });
    expect(toApi(doc(distributor, '235.00', 1, '225.00'))).toEqual({
      balance: '235.00',
      available: '10.00',
      held: '225.00',
    });
    expect(toApi(null)).toEqual({ balance: '0.00', available: '0.00', held: '0.00' });
    expect(toApi(null, 4)).toEqual({ balance: '0.0000', available: '0.0000', held: '0.0000' });
  });

  it('when a document was built before holds were projected (no held), then it reads as holding nothing', () => {
    const { held: _held, ...old } = doc(merchant, '12.50', 1);
    expect(toApi(old)).toEqual({ balance: '12.50', available: '12.50', held: '0.00' });
  });
});

describe('balances projection: what pending and approved operations hold', () => {
  it('when funds are held, then held grows and the balance does not move', () => {
    spec
      .given(credited(distributor, '235.00'))
      .when(fundsHeld(distributor, '225.00', 'op_a'))
      .then({ [balanceDocId(distributor)]: doc(distributor, '235.00', 2, '225.00') });
  });

  it('when a hold is released (rejected or failed), then held falls back and the balance does not move', () => {
    spec
      .given(
        credited(distributor, '235.00'),
        fundsHeld(distributor, '225.00', 'op_a'),
        fundsHeld(distributor, '5.00', 'op_b'),
      )
      .when(holdReleased(distributor, '225.00', 'op_a'), holdReleased(distributor, '5.00', 'op_b', 'failed'))
      .then({ [balanceDocId(distributor)]: doc(distributor, '235.00', 5, '0.00') });
  });

  it('when a held operation completes, then its debit settles the hold: the balance falls and held falls by the hold', () => {
    spec
      .given(credited(merchant, '200.00'), fundsHeld(merchant, '101.50', 'op_a'), fundsHeld(merchant, '20.00', 'op_b'))
      .when(debited(merchant, '101.50', 'op_a'))
      .then({ [balanceDocId(merchant)]: doc(merchant, '98.50', 4, '20.00') });
  });

  it('when a wallet is first seen through a hold, then its document starts at a zero balance', () => {
    spec
      .given()
      .when(fundsHeld(individual, '7.5', 'op_a'))
      .then({ [balanceDocId(individual)]: doc(individual, '0.00', 1, '7.50') });
  });

  it('when the read side folds a wallet history, then balance, held and available are those the write side checks a create against', () => {
    const histories: WalletEvent[][] = [
      [],
      [credited(distributor, '5000')],
      [
        credited(distributor, '235.00'),
        fundsHeld(distributor, '200.00', 'op_a'),
        fundsHeld(distributor, '25.00', 'op_b'),
      ],
      [
        credited(distributor, '235.00'),
        fundsHeld(distributor, '200.00', 'op_a'),
        holdReleased(distributor, '200.00', 'op_a'),
        fundsHeld(distributor, '0.01', 'op_b'),
      ],
      [
        credited(distributor, '1000.00'),
        fundsHeld(distributor, '101.50', 'op_a'),
        debited(distributor, '101.50', 'op_a'),
        fundsHeld(distributor, '899.00', 'op_b'),
      ],
      [
        credited(distributor, '0.10'),
        credited(distributor, '0.20'),
        fundsHeld(distributor, '0.30', 'op_a'),
        debited(distributor, '0.30', 'op_a'),
      ],
      [debited(distributor, '50.00', 'op_issue', '0'), fundsHeld(distributor, '1.00', 'op_a')],
    ];
    for (const history of histories) {
      const written = history.reduce(walletState.evolve, walletState.initialState());
      const read = toApi(spec.fold(stored(history))[balanceDocId(distributor)] ?? null);
      const label = JSON.stringify(history.map((event) => [event.type, event.data.amount]));
      expect(read.balance, label).toBe(new Decimal(written.balance).toFixed(2).replace(/^-0\.00$/, '0.00'));
      expect(read.held, label).toBe(new Decimal(written.held).toFixed(2).replace(/^-0\.00$/, '0.00'));
      expect(read.available, label).toBe(
        availableBalance(written)
          .toFixed(2)
          .replace(/^-0\.00$/, '0.00'),
      );
    }
  });
});
