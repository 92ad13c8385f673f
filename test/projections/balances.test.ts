import { describe, expect, it } from 'vitest';
import type { WalletRef } from '../../src/domain/events.ts';
import { balanceDocId, balancesProjection, toApi, type BalanceDoc } from '../../src/projections/balances.ts';
import { DISTRIBUTOR, MERCHANT, PHONE, approved, credited, debited, projectionSpec, request, stored } from '../support/projection-spec.ts';

const distributor: WalletRef = { kind: 'distributor', id: DISTRIBUTOR.id };
const merchant: WalletRef = { kind: 'merchant', id: MERCHANT.id };
const individual: WalletRef = { kind: 'individual', id: PHONE };
const fees: WalletRef = { kind: 'platform', id: 'fees' };
const issuance: WalletRef = { kind: 'platform', id: 'issuance' };

const spec = projectionSpec(balancesProjection());
const storedAt = (position: number) => stored([{ type: 'x', data: null }], position)[0]!.createdAt;
const doc = (wallet: WalletRef, balance: string, position: number): BalanceDoc => ({
  id: balanceDocId(wallet),
  wallet,
  balance,
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
    spec.given().when(credited(distributor, '5000')).then({ [balanceDocId(distributor)]: doc(distributor, '5000.00', 1) });
  });

  it('when a wallet is credited then debited, then the balance is the difference', () => {
    spec
      .given(credited(merchant, '100.00'))
      .when(debited(merchant, '30.25'))
      .then({ [balanceDocId(merchant)]: doc(merchant, '69.75', 2) });
  });

  it('when 0.10 and 0.20 are credited, then the balance is exactly 0.30', () => {
    spec.given(credited(individual, '0.10')).when(credited(individual, '0.20')).then({ [balanceDocId(individual)]: doc(individual, '0.30', 2) });
  });

  it('when a balance comes back to zero, then it reads 0.00 (never -0.00)', () => {
    spec.given(credited(fees, '0.10')).when(debited(fees, '0.10')).then({ [balanceDocId(fees)]: doc(fees, '0.00', 2) });
  });

  it('when e-money is issued, then the issuance account goes negative and the distributor is credited', () => {
    spec
      .given()
      .when(debited(issuance, '1000000.00', 'op_issue'), credited(distributor, '1000000.00', 'op_issue'))
      .then({
        [balanceDocId(issuance)]: doc(issuance, '-1000000.00', 1),
        [balanceDocId(distributor)]: doc(distributor, '1000000.00', 2),
      });
  });

  it('when one completion moves money between several wallets, then each has its own balance', () => {
    const { docs } = spec
      .given(credited(merchant, '200.00'))
      .when(debited(merchant, '101.50'), credited(distributor, '100.00'), credited(fees, '1.50'));
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
      .then({ [balanceDocId(merchant)]: doc(merchant, '1.0003', 2) });
  });

  it('when events of no interest arrive, then no balance changes', () => {
    spec
      .given(credited(merchant, '10.00'))
      .when(request.cashInToMerchant('op_1'), approved('op_1'), { type: 'FundsHeld', data: { wallet: merchant, operationID: 'op_1', amount: '5.00' } })
      .thenNothingChanged();
  });

  it('when an event a document has already seen is applied again, then nothing changes', () => {
    const history = stored([credited(merchant, '10.00'), debited(merchant, '2.50'), credited(distributor, '7.00'), credited(merchant, '0.01')]);
    const built = spec.fold(history);
    expect(built[balanceDocId(merchant)]!.balance).toBe('7.51');
    expect(spec.fold(history.flatMap((event) => [event, event]))).toEqual(built);
    expect(spec.fold(history, built)).toEqual(built);
  });

  it('when the balance is read, then the contract object is just { balance }, and zero for an unknown wallet', () => {
    expect(toApi(doc(distributor, '5000.00', 1))).toEqual({ balance: '5000.00' });
    expect(toApi(null)).toEqual({ balance: '0.00' });
    expect(toApi(null, 4)).toEqual({ balance: '0.0000' });
  });
});
