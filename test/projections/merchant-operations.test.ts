import { describe, expect, it } from 'vitest';
import {
  MERCHANT_OPERATIONS_COLLECTION,
  MERCHANT_OPERATIONS_SORT,
  merchantOperationsProjection,
  merchantOperationsWhere,
  toApi,
  type MerchantOperationDoc,
} from '../../src/projections/merchant-operations.ts';
import {
  DISTRIBUTOR,
  MERCHANT,
  OTHER_MERCHANT,
  PHONE,
  T0,
  approved,
  at,
  completed,
  credited,
  failed,
  projectionSpec,
  rejected,
  request,
  stored,
  submitted,
} from '../support/projection-spec.ts';
import * as merchantPayments from '../../src/projections/merchant-payments.ts';
import { foldInMemory } from '../../src/projections/fold.ts';

const spec = projectionSpec(merchantOperationsProjection());
const ID = 'op_00000000000000000000000000000002';
const built = (...events: Parameters<typeof stored>[0]) => spec.fold(stored(events));
const only = (docs: Record<string, MerchantOperationDoc>) => {
  expect(Object.keys(docs)).toEqual([ID]);
  return docs[ID]!;
};
const common = {
  operationID: ID,
  merchantID: MERCHANT.id,
  amount: '100.00',
  blockchainID: '',
  sequenceNumber: null,
  lastError: null,
  status: 'pending',
  createdAt: T0,
  updatedAt: T0,
};
/** The object the API returns of a document with `common`: the extension rejectionReason is null unless rejected. */
const commonApi = { ...common, walletOperationID: '', rejectionReason: null };

/** A document as stored: with its API object's JSON text (the stored text itself is tested below). */
const withText = (doc: MerchantOperationDoc): MerchantOperationDoc => ({ ...doc, apiText: JSON.stringify(toApi(doc)) });

const pendingCashOut: MerchantOperationDoc = {
  id: ID,
  ...common,
  operationType: 'cash-out',
  fee: '1.50',
  distributorTo: DISTRIBUTOR.id,
  distributorName: DISTRIBUTOR.name,
  status: 'pending',
  visible: true,
  listedPosition: 1,
  position: 1,
};

describe('merchant operations projection', () => {
  it('when a merchant requests a cash-out, then a visible pending document is made at once', () => {
    spec
      .given()
      .when(request.cashOut(ID))
      .then({ [ID]: withText(pendingCashOut) });
  });

  it('when a cash-out is read, then it has the fee and the destination distributor', () => {
    expect(toApi(only(built(request.cashOut(ID, { memo: 'weekly sweep' }))))).toEqual({
      ...commonApi,
      operationType: 'cash-out',
      fee: '1.50',
      distributorTo: DISTRIBUTOR.id,
      distributorName: DISTRIBUTOR.name,
      memo: 'weekly sweep',
    });
  });

  it('when a pay-merchant is read, then it has merchantTo and merchantName and no distributor or phone', () => {
    expect(toApi(only(built(request.payMerchant(ID))))).toEqual({
      ...commonApi,
      operationType: 'pay-merchant',
      fee: '0.50',
      merchantTo: OTHER_MERCHANT.id,
      merchantName: OTHER_MERCHANT.name,
    });
  });

  it('when a pay-individual is read, then it has phoneTo only', () => {
    expect(toApi(only(built(request.payIndividual(ID))))).toEqual({
      ...commonApi,
      operationType: 'pay-individual',
      fee: '0.25',
      phoneTo: PHONE,
    });
  });

  it('when a distributor requests a cash-in to the merchant, then the merchant paid lists it at once, pending, at its request', () => {
    const doc = only(built(request.cashInToMerchant(ID)));
    expect(doc).toMatchObject({
      merchantID: MERCHANT.id,
      operationType: 'cash-in',
      visible: true,
      status: 'pending',
      listedPosition: 1,
      createdAt: T0,
    });
    expect(toApi(doc)).toMatchObject({ status: 'pending', createdAt: T0, blockchainID: '' });
  });

  it('when a received cash-in completes, then it is visible, from the source distributor (payerName), with a zero fee', () => {
    const doc = only(
      built(
        request.cashInToMerchant(ID, { memo: 'float' }),
        approved(ID),
        submitted(ID),
        completed(ID, { blockchainID: 'tx-9', completedAt: at(3) }),
      ),
    );
    expect(doc.visible).toBe(true);
    expect(toApi(doc)).toEqual({
      ...commonApi,
      operationType: 'cash-in',
      fee: '0.00',
      distributorTo: DISTRIBUTOR.id,
      distributorName: DISTRIBUTOR.name,
      memo: 'float',
      blockchainID: 'tx-9',
      walletOperationID: `wo_${ID.slice(3)}`,
      sequenceNumber: 7001,
      status: 'completed',
      updatedAt: at(3),
    });
  });

  it("when a pay-merchant completes, then its walletOperationID is the operationID of the payment in the payee's payments list", () => {
    const history = [request.payMerchant(ID), approved(ID), completed(ID, { walletOperationID: 'wo_55' })];
    expect(toApi(only(built(...history)))).toMatchObject({ status: 'completed', walletOperationID: 'wo_55' });
    const payment = merchantPayments.toApi(
      foldInMemory(merchantPayments.merchantPaymentsProjection(), stored(history)).get(ID)!,
    );
    expect(payment).toMatchObject({ operationID: 'wo_55', sourceOperationID: ID });
  });

  it('when a cash-in stored before payerName existed is read, then distributorName is empty', () => {
    const legacy = request.cashInToMerchant(ID);
    const { payerName: _omitted, ...data } = legacy.data;
    expect(toApi(only(built({ type: legacy.type, data })))).toMatchObject({
      distributorTo: DISTRIBUTOR.id,
      distributorName: '',
    });
  });

  it('when the asset scale is 3, then a cash-in fee is 0.000', () => {
    const docs = projectionSpec(merchantOperationsProjection({ assetScale: 3 })).fold(
      stored([request.cashInToMerchant(ID)]),
    );
    expect(docs[ID]!.fee).toBe('0.000');
  });

  it('when a received cash-in is approved, submitted or completed, then it stays listed where it was, its createdAt the request time', () => {
    expect(only(built(request.cashInToMerchant(ID), approved(ID), submitted(ID)))).toMatchObject({
      status: 'approved',
      visible: true,
      listedPosition: 1,
      createdAt: T0,
    });
    expect(
      only(built(request.cashInToMerchant(ID), approved(ID), submitted(ID), completed(ID, { completedAt: at(3) }))),
    ).toMatchObject({
      status: 'completed',
      visible: true,
      listedPosition: 1,
      createdAt: T0,
      updatedAt: at(3),
      position: 4,
    });
  });

  it('when a received cash-in is rejected or fails, then it stays listed with its status', () => {
    expect(only(built(request.cashInToMerchant(ID), rejected(ID)))).toMatchObject({
      status: 'rejected',
      visible: true,
      listedPosition: 1,
    });
    expect(only(built(request.cashInToMerchant(ID), approved(ID), submitted(ID), failed(ID)))).toMatchObject({
      status: 'failed',
      visible: true,
      listedPosition: 1,
    });
  });

  it('when its own operation goes through approval, submission and completion, then status and fields follow', () => {
    spec
      .given(request.cashOut(ID))
      .when(approved(ID, at(1)))
      .then({ [ID]: withText({ ...pendingCashOut, status: 'approved', updatedAt: at(1), position: 2 }) });
    spec
      .given(request.cashOut(ID), approved(ID))
      .when(submitted(ID, 42, at(2)))
      .then({
        [ID]: withText({ ...pendingCashOut, status: 'approved', sequenceNumber: 42, updatedAt: at(2), position: 3 }),
      });
    spec
      .given(request.cashOut(ID), approved(ID), submitted(ID, 42))
      .when(completed(ID, { blockchainID: 'tx-1', sequenceNumber: 42, completedAt: at(3) }))
      .then({
        [ID]: withText({
          ...pendingCashOut,
          status: 'completed',
          blockchainID: 'tx-1',
          walletOperationID: `wo_${ID.slice(3)}`,
          sequenceNumber: 42,
          updatedAt: at(3),
          position: 4,
        }),
      });
  });

  it('when its own operation is rejected or fails, then it stays listed with its status and rejectionReason or lastError', () => {
    spec
      .given(request.cashOut(ID))
      .when(rejected(ID, at(1)))
      .then({
        [ID]: withText({
          ...pendingCashOut,
          status: 'rejected',
          rejectionReason: 'not ours',
          updatedAt: at(1),
          position: 2,
        }),
      });
    expect(toApi(only(built(request.cashOut(ID), rejected(ID))))).toMatchObject({
      status: 'rejected',
      rejectionReason: 'not ours',
      lastError: null,
    });
    expect(toApi(only(built(request.cashOut(ID))))).toHaveProperty('rejectionReason', null);
    spec
      .given(request.cashOut(ID), approved(ID))
      .when(failed(ID, 'no route', at(5)))
      .then({
        [ID]: withText({ ...pendingCashOut, status: 'failed', lastError: 'no route', updatedAt: at(5), position: 3 }),
      });
  });

  it("when a pending cash-out is stored, then its text is the API object's JSON, field for field in the contract's order", () => {
    expect(only(built(request.cashOut(ID))).apiText).toBe(
      `{"operationID":"${ID}","merchantID":"${MERCHANT.id}","operationType":"cash-out","amount":"100.00","fee":"1.50","distributorTo":"${DISTRIBUTOR.id}",` +
        `"distributorName":"${DISTRIBUTOR.name}","blockchainID":"","walletOperationID":"","sequenceNumber":null,"lastError":null,"rejectionReason":null,` +
        `"status":"pending","createdAt":"${T0}","updatedAt":"${T0}"}`,
    );
  });

  it('when each kind of event is applied, to each kind of operation, then the stored text is JSON.stringify(toApi(doc)) of the document it is stored with', () => {
    const settled = {
      type: 'OperationSettledFromLedger' as const,
      data: {
        operationID: ID,
        sequenceNumber: 7003,
        blockchainID: 'tx-late',
        walletOperationID: 'wo_late',
        legs: [],
        requestedBy: 'u-a',
        approvedBy: 'u-b',
        reason: 'audit',
        settledAt: at(6),
      },
    };
    const requests = [
      request.cashOut(ID, { memo: 'Zoë 😀' }),
      request.payMerchant(ID),
      request.payIndividual(ID),
      request.cashInToMerchant(ID),
    ];
    const laters = [
      [],
      [approved(ID)],
      [rejected(ID)],
      [approved(ID), submitted(ID)],
      [approved(ID), submitted(ID), completed(ID)],
      [approved(ID), failed(ID)],
      [approved(ID), failed(ID), settled],
    ];
    for (const requested of requests) {
      for (const later of laters) {
        const doc = only(built(requested, ...later));
        expect(doc.apiText, `${requested.data.operationType} then ${later.map((e) => e.type).join(', ')}`).toBe(
          JSON.stringify(toApi(doc)),
        );
      }
    }
  });

  it('when a document is read, then it carries its status, and visible, id, listedPosition and position never leave', () => {
    const api = toApi(only(built(request.cashOut(ID))));
    expect(api).toHaveProperty('status', 'pending');
    for (const field of ['visible', 'id', 'listedPosition', 'position']) expect(api).not.toHaveProperty(field);
  });

  it('when operations concern no merchant list, then no document is made', () => {
    spec
      .given()
      .when(
        request.cashInToIndividual('op_a'),
        approved('op_a'),
        completed('op_a'),
        request.cashOutFulfillment('op_b'),
        rejected('op_b'),
        request.issue('op_c'),
        completed('op_c'),
        request.individualPayment('op_d'),
        completed('op_d'),
        credited({ kind: 'merchant', id: MERCHANT.id }, '5.00'),
      )
      .then({});
  });

  it('when the history is applied twice, or replayed onto the built documents, then the documents are equal', () => {
    const history = stored([
      request.cashOut(ID),
      request.cashInToMerchant('op_2'),
      request.payMerchant('op_3'),
      request.payIndividual('op_4'),
      request.cashInToMerchant('op_5'),
      approved(ID),
      approved('op_2'),
      rejected('op_3'),
      approved('op_4'),
      approved('op_5'),
      submitted(ID),
      submitted('op_2'),
      submitted('op_5'),
      completed(ID),
      completed('op_2'),
      failed('op_4'),
      failed('op_5'),
    ]);
    const docs = spec.fold(history);
    expect(Object.values(docs).map((doc) => [doc.status, doc.visible])).toEqual([
      ['completed', true],
      ['completed', true],
      ['rejected', true],
      ['failed', true],
      ['failed', true],
    ]);
    expect(spec.fold(history.flatMap((event) => [event, event]))).toEqual(docs);
    expect(spec.fold(history, docs)).toEqual(docs);
  });

  it("when the list is queried, then it shows one merchant's operations, newest creation (request position) first", () => {
    expect(MERCHANT_OPERATIONS_COLLECTION).toEqual({
      name: 'merchant_operations',
      indexes: [['merchantID', 'visible', 'listedPosition', 'id']],
      textField: 'apiText',
    });
    expect(merchantOperationsWhere(MERCHANT.id)).toEqual({ merchantID: MERCHANT.id, visible: true });
    expect(MERCHANT_OPERATIONS_SORT).toEqual([
      ['listedPosition', 'desc'],
      ['id', 'desc'],
    ]);
  });

  it("when operations are requested, then each one's listedPosition is its request's and never moves, so a later one always sorts above", () => {
    const docs = built(
      request.cashOut('op_a'),
      request.cashInToMerchant('op_b'),
      completed('op_b', { completedAt: at(9) }),
      request.payMerchant('op_c'),
      completed('op_a'),
    );
    expect(Object.fromEntries(Object.values(docs).map((doc) => [doc.id, doc.listedPosition]))).toEqual({
      op_a: 1,
      op_b: 2,
      op_c: 4,
    });
  });
});
