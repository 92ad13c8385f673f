import { describe, expect, it } from 'vitest';
import {
  amountKey,
  consoleOperationsProjection,
  type ConsoleOperationDoc,
} from '../../src/projections/console-operations.ts';
import { allProjections } from '../../src/projections/index.ts';
import {
  approved,
  at,
  completed,
  DISTRIBUTOR,
  failed,
  MERCHANT,
  OTHER_MERCHANT,
  PHONE,
  projectionSpec,
  rejected,
  request,
  stored,
  submitted,
  T0,
} from '../support/projection-spec.ts';

/**
 * The console's operations read model: one document per (party, operation), with the fields the console's
 * filters need as indexed equalities and ranges.
 */
const spec = projectionSpec(consoleOperationsProjection({ assetScale: 2 }));
const ID = 'op_1';

const cashInToIndividual = (over: Partial<ConsoleOperationDoc> = {}): ConsoleOperationDoc => ({
  id: ID,
  party: `distributor:${DISTRIBUTOR.id}`,
  operationID: ID,
  operationType: 'cash-in',
  side: 'own',
  amount: '100.00',
  fee: '0.00',
  amountKey: '00000000000000000100.00',
  payerName: DISTRIBUTOR.name,
  payerShortCode: DISTRIBUTOR.shortCode,
  counterpartyKind: 'individual',
  counterpartyID: PHONE,
  counterpartyName: 'Ada Obi',
  counterpartyShortCode: null,
  counterparty: PHONE,
  memo: 'Rent March',
  keyID: 'key_1',
  status: 'pending',
  blockchainID: '',
  walletOperationID: '',
  sequenceNumber: null,
  lastError: null,
  createdAt: T0,
  updatedAt: T0,
  sortKey: `${T0}|${ID}`,
  text: `${ID}\n${PHONE}\nrent march`,
  position: 1,
  ...over,
});

describe('console-operations projection', () => {
  it('when a distributor requests a cash-in with a key, then its list holds it, pending, with the filter and search fields', () => {
    spec
      .given()
      .when(request.cashInToIndividual(ID, { memo: 'Rent March' }))
      .then({ [ID]: cashInToIndividual() });
  });

  it('when a distributor sends a cash-in to a merchant, then both lists hold it: the merchant sees the distributor as counterparty, no fee and no key', () => {
    const { docs } = spec.given().when(request.cashInToMerchant(ID, { fee: '1.00' }));
    expect(docs[ID]).toMatchObject({
      party: `distributor:${DISTRIBUTOR.id}`,
      side: 'own',
      counterpartyKind: 'merchant',
      counterparty: MERCHANT.shortCode,
      fee: '1.00',
      keyID: 'key_1',
    });
    expect(docs[`received:${ID}`]).toMatchObject({
      party: `merchant:${MERCHANT.id}`,
      side: 'received',
      counterpartyKind: 'distributor',
      counterpartyID: DISTRIBUTOR.id,
      counterpartyName: DISTRIBUTOR.name,
      counterparty: DISTRIBUTOR.shortCode,
      fee: '0.00',
      keyID: null,
    });
  });

  it('when a merchant pays another merchant or an individual, then its list holds them under the counterparty’s short code or phone', () => {
    const { docs } = spec
      .given()
      .when(request.payMerchant('op_a'), request.payIndividual('op_b'), request.cashOut('op_c'));
    expect(docs.op_a).toMatchObject({
      party: `merchant:${MERCHANT.id}`,
      counterparty: OTHER_MERCHANT.shortCode,
      fee: '0.50',
    });
    expect(docs.op_b).toMatchObject({ counterparty: PHONE, counterpartyKind: 'individual' });
    expect(docs.op_c).toMatchObject({ counterparty: DISTRIBUTOR.shortCode, counterpartyKind: 'distributor' });
    expect(Object.keys(docs)).toHaveLength(3);
  });

  it('when an operation has no party (treasury issuance, an individual’s payment), then no list holds it', () => {
    spec.given().when(request.issue(ID), approved(ID), request.individualPayment('op_2')).then({});
  });

  it('when it is approved, submitted and completed, then the status, sequence, blockchain and wallet operation follow', () => {
    spec
      .given(request.cashInToIndividual(ID, { memo: 'Rent March' }))
      .when(approved(ID), submitted(ID), completed(ID))
      .then({
        [ID]: cashInToIndividual({
          status: 'completed',
          sequenceNumber: 7001,
          blockchainID: `tx-${ID}`,
          walletOperationID: 'wo_1',
          updatedAt: at(3),
          position: 4,
        }),
      });
  });

  it('when it is rejected, then it is rejected at the rejection’s time, with its reason', () => {
    spec
      .given(request.cashInToIndividual(ID, { memo: 'Rent March' }))
      .when(rejected(ID))
      .then({
        [ID]: cashInToIndividual({ status: 'rejected', rejectionReason: 'not ours', updatedAt: at(1), position: 2 }),
      });
  });

  it('when it fails, then the last error is kept', () => {
    const { docs } = spec.given(request.cashInToIndividual(ID), approved(ID)).when(failed(ID));
    expect(docs[ID]).toMatchObject({
      status: 'failed',
      lastError: 'ledger refused: insufficient funds',
      updatedAt: at(3),
    });
  });

  it('when a received cash-in completes, then the merchant’s document follows too', () => {
    const { docs } = spec.given(request.cashInToMerchant(ID)).when(approved(ID), completed(ID));
    expect(docs[`received:${ID}`]).toMatchObject({ status: 'completed', blockchainID: `tx-${ID}` });
    expect(docs[ID]).toMatchObject({ status: 'completed' });
  });

  it('when a later event of an operation it does not hold arrives, then nothing is made', () => {
    spec.given().when(approved('op_unknown'), completed('op_unknown')).then({});
  });

  it('given amounts, when keyed, then the keys compare as the decimals do', () => {
    const amounts = ['9.99', '10.00', '100.00', '2.5', '1000000000000000000.00', '0.01'];
    const byKey = [...amounts].sort((a, b) => (amountKey(a, 2) < amountKey(b, 2) ? -1 : 1));
    expect(byKey).toEqual(['0.01', '2.5', '9.99', '10.00', '100.00', '1000000000000000000.00']);
    expect(amountKey('7', 0)).toBe('00000000000000000007');
  });

  it('when the history is applied twice, or replayed onto the built documents, then the documents are equal', () => {
    const history = stored([
      request.cashInToIndividual(ID),
      request.cashInToMerchant('op_2'),
      request.payMerchant('op_3'),
      approved(ID),
      rejected('op_2'),
      completed(ID),
      failed('op_3'),
    ]);
    const docs = spec.fold(history);
    expect(Object.keys(docs).sort()).toEqual([ID, 'op_2', 'op_3', 'received:op_2']);
    expect(spec.fold(history.flatMap((event) => [event, event]))).toEqual(docs);
    expect(spec.fold(history, docs)).toEqual(docs);
  });

  it('is registered among the read models, so that rebuilds include it', () => {
    expect(allProjections(2).map((p) => p.name)).toContain('console-operations');
  });
});
