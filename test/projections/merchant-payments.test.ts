import { describe, expect, it } from 'vitest';
import {
  MERCHANT_PAYMENTS_COLLECTION,
  MERCHANT_PAYMENTS_SORT,
  merchantPaymentsProjection,
  merchantPaymentsWhere,
  paymentSearch,
  toApi,
  type MerchantPaymentDoc,
} from '../../src/projections/merchant-payments.ts';
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

const spec = projectionSpec(merchantPaymentsProjection());
const ID = 'op_00000000000000000000000000000003';
const built = (...events: Parameters<typeof stored>[0]) => spec.fold(stored(events));
const only = (docs: Record<string, MerchantPaymentDoc>) => {
  expect(Object.keys(docs)).toEqual([ID]);
  return docs[ID]!;
};
const done = { blockchainID: 'tx-77', walletOperationID: 'wo_77', completedAt: at(3) };

/** A document as stored: with its API object's JSON text (the stored text itself is tested below). */
const withText = (doc: MerchantPaymentDoc): MerchantPaymentDoc => ({ ...doc, apiText: JSON.stringify(toApi(doc)) });

const pendingIndividualPayment: MerchantPaymentDoc = {
  id: ID,
  merchantID: MERCHANT.id,
  visible: false,
  status: 'pending',
  operationID: '',
  type: 'payment',
  amount: '100.00',
  from: PHONE,
  fromType: 'individual',
  memo: null,
  blockchainID: '',
  createdAt: T0,
  requestedAt: T0,
  completedAt: null,
  listedPosition: null,
  searchPhone: '2348012345678',
  position: 1,
};

describe('merchant payments projection', () => {
  it('when an individual pays the merchant from the wallet app, then a hidden document is made with the phone digits for search', () => {
    spec
      .given()
      .when(request.individualPayment(ID))
      .then({ [ID]: withText(pendingIndividualPayment) });
  });

  it("when the payment completes, then it is listed under its wallet operation at the completion's position, createdAt staying the request time", () => {
    spec
      .given(request.individualPayment(ID), approved(ID), submitted(ID))
      .when(completed(ID, done))
      .then({
        [ID]: withText({
          ...pendingIndividualPayment,
          visible: true,
          status: 'completed',
          operationID: 'wo_77',
          blockchainID: 'tx-77',
          createdAt: T0,
          completedAt: at(3),
          listedPosition: 4,
          position: 4,
        }),
      });
  });

  it('when an individual payment is read, then from is the phone, with no fromShortCode and a null memo', () => {
    expect(toApi(only(built(request.individualPayment(ID), completed(ID, done))))).toEqual({
      operationID: 'wo_77',
      type: 'payment',
      amount: '100.00',
      from: PHONE,
      fromType: 'individual',
      memo: null,
      blockchainID: 'tx-77',
      createdAt: T0,
      completedAt: at(3),
      sourceOperationID: ID,
    });
  });

  it("when another merchant's pay-merchant to this merchant completes, then from is the payer's name and fromShortCode its integer code", () => {
    const paid = request.payMerchant(ID, {
      party: { type: 'merchant', id: OTHER_MERCHANT.id },
      payer: { kind: 'merchant', id: OTHER_MERCHANT.id },
      payee: { kind: 'merchant', id: MERCHANT.id },
      payerName: OTHER_MERCHANT.name,
      payerShortCode: OTHER_MERCHANT.shortCode,
      counterparty: { kind: 'merchant', ...MERCHANT },
      memo: 'Invoice 12',
    });
    const doc = only(built(paid, approved(ID), completed(ID, done)));
    expect(doc).toMatchObject({ merchantID: MERCHANT.id, searchPhone: null, visible: true });
    expect(toApi(doc)).toEqual({
      operationID: 'wo_77',
      type: 'payment',
      amount: '100.00',
      from: OTHER_MERCHANT.name,
      fromType: 'merchant',
      fromShortCode: 5002,
      memo: 'Invoice 12',
      blockchainID: 'tx-77',
      createdAt: T0,
      completedAt: at(3),
      sourceOperationID: ID,
    });
  });

  it("when a payment is read, then sourceOperationID names the operation (op_…) it came from, as the payer's or distributor's list shows it", () => {
    const doc = only(built(request.cashInToMerchant(ID), approved(ID), completed(ID, done)));
    expect(toApi(doc)).toMatchObject({ operationID: 'wo_77', sourceOperationID: ID });
  });

  it("when a paying merchant's short code is unknown (null), then fromShortCode is omitted", () => {
    const paid = request.payMerchant(ID, { payee: { kind: 'merchant', id: MERCHANT.id }, payerShortCode: null });
    expect(toApi(only(built(paid, completed(ID, done))))).not.toHaveProperty('fromShortCode');
  });

  it("when a distributor's cash-in to the merchant completes, then it is a cash-in from the distributor's name", () => {
    expect(
      toApi(only(built(request.cashInToMerchant(ID, { memo: 'float' }), approved(ID), completed(ID, done)))),
    ).toEqual({
      operationID: 'wo_77',
      type: 'cash-in',
      amount: '100.00',
      from: DISTRIBUTOR.name,
      fromType: 'distributor',
      memo: 'float',
      blockchainID: 'tx-77',
      createdAt: T0,
      completedAt: at(3),
      sourceOperationID: ID,
    });
  });

  it('when a received payment is approved or submitted, then it stays hidden and unchanged', () => {
    spec.given(request.individualPayment(ID)).when(approved(ID), submitted(ID)).thenNothingChanged();
  });

  it('when a received payment is rejected or fails, then it never shows', () => {
    expect(only(built(request.cashInToMerchant(ID), rejected(ID)))).toEqual({
      ...only(built(request.cashInToMerchant(ID))),
      status: 'rejected',
      position: 2,
    });
    expect(only(built(request.individualPayment(ID), approved(ID), failed(ID)))).toMatchObject({
      status: 'failed',
      visible: false,
      operationID: '',
      blockchainID: '',
    });
  });

  it('when a received payment failed but two operators settled it from the ledger (its money had moved), then it is listed as received, at the settlement', () => {
    const settled = {
      type: 'OperationSettledFromLedger' as const,
      data: {
        operationID: ID,
        sequenceNumber: 7,
        blockchainID: 'tx-77',
        walletOperationID: 'wo_77',
        legs: [],
        requestedBy: 'u-a',
        approvedBy: 'u-b',
        reason: 'moved after the failure',
        settledAt: at(60),
      },
    };
    expect(only(built(request.individualPayment(ID), approved(ID), failed(ID), settled))).toMatchObject({
      status: 'completed',
      visible: true,
      operationID: 'wo_77',
      blockchainID: 'tx-77',
      completedAt: at(60),
      listedPosition: 4,
      createdAt: T0,
    });
  });

  it("when a pay-merchant completes, then its text is the API object's JSON, field for field in the contract's order", () => {
    expect(only(built(request.payMerchant(ID), completed(ID, done))).apiText).toBe(
      `{"operationID":"wo_77","type":"payment","amount":"100.00","from":"${MERCHANT.name}","fromType":"merchant","fromShortCode":5001,"memo":null,` +
        `"blockchainID":"tx-77","createdAt":"${T0}","completedAt":"${at(3)}","sourceOperationID":"${ID}"}`,
    );
  });

  it('when each kind of event is applied, to each kind of payment, then the stored text is JSON.stringify(toApi(doc)) of the document it is stored with', () => {
    const settled = {
      type: 'OperationSettledFromLedger' as const,
      data: {
        operationID: ID,
        sequenceNumber: 7,
        blockchainID: 'tx-9',
        walletOperationID: 'wo_9',
        legs: [],
        requestedBy: 'u-a',
        approvedBy: 'u-b',
        reason: 'moved',
        settledAt: at(60),
      },
    };
    const requests = [
      request.individualPayment(ID, { memo: 'Zoë 😀' }),
      request.payMerchant(ID),
      request.cashInToMerchant(ID),
    ];
    const laters = [
      [],
      [approved(ID)],
      [rejected(ID)],
      [approved(ID), submitted(ID)],
      [approved(ID), submitted(ID), completed(ID, done)],
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

  it("when operations pay no merchant, or are the merchant's own payments out, then no document is made", () => {
    spec
      .given()
      .when(
        request.cashInToIndividual('op_a'),
        completed('op_a'),
        request.cashOutFulfillment('op_b'),
        completed('op_b'),
        request.cashOut('op_c'),
        completed('op_c'),
        request.payIndividual('op_d'),
        completed('op_d'),
        request.issue('op_e'),
        completed('op_e'),
        credited({ kind: 'merchant', id: MERCHANT.id }, '5.00'),
      )
      .then({});
  });

  it('when a merchant pays another, then only the merchant paid gets the payment', () => {
    const docs = built(request.payMerchant(ID), completed(ID, done));
    expect(only(docs).merchantID).toBe(OTHER_MERCHANT.id);
  });

  it('when the history is applied twice, or replayed onto the built documents, then the documents are equal', () => {
    const history = stored([
      request.individualPayment(ID),
      request.cashInToMerchant('op_2'),
      request.payMerchant('op_3'),
      request.individualPayment('op_4'),
      approved(ID),
      approved('op_2'),
      rejected('op_3'),
      completed(ID),
      failed('op_2'),
      completed('op_4', { completedAt: at(9) }),
    ]);
    const docs = spec.fold(history);
    expect(Object.values(docs).map((doc) => [doc.status, doc.visible])).toEqual([
      ['completed', true],
      ['failed', false],
      ['rejected', false],
      ['completed', true],
    ]);
    expect(spec.fold(history.flatMap((event) => [event, event]))).toEqual(docs);
    expect(spec.fold(history, docs)).toEqual(docs);
  });

  it("when the list is queried, then it shows one merchant's completed payments, newest first, searchable by phone and memo", () => {
    expect(MERCHANT_PAYMENTS_COLLECTION).toEqual({
      name: 'merchant_payments',
      indexes: [['merchantID', 'visible', 'listedPosition', 'id']],
      searchFields: ['searchPhone', 'memo'],
      textField: 'apiText',
    });
    expect(merchantPaymentsWhere(MERCHANT.id)).toEqual({ merchantID: MERCHANT.id, visible: true });
    expect(MERCHANT_PAYMENTS_SORT).toEqual([
      ['listedPosition', 'desc'],
      ['id', 'desc'],
    ]);
  });

  it('when a payment requested earlier completes later, then it is listed above the ones completed before it (ordered by listing, not request)', () => {
    const docs = built(
      request.individualPayment('op_a'),
      request.cashInToMerchant('op_b'),
      completed('op_b', { completedAt: at(3) }),
      completed('op_a', { completedAt: at(4) }),
    );
    expect(docs.op_a).toMatchObject({ createdAt: T0, completedAt: at(4), listedPosition: 4 });
    expect(docs.op_b).toMatchObject({ createdAt: T0, completedAt: at(3), listedPosition: 3 });
  });

  it('when the search is a phone with + and spaces, then the phone digits are matched and the memo with the text as given', () => {
    expect(paymentSearch('+234 801 234')).toEqual([
      { text: '234801234', fields: ['searchPhone'] },
      { text: '+234 801 234', fields: ['memo'] },
    ]);
    expect(paymentSearch('0801')).toEqual([
      { text: '0801', fields: ['searchPhone'] },
      { text: '0801', fields: ['memo'] },
    ]);
  });

  it('when the search is words, then only the memo is matched; and an empty search matches nothing in particular', () => {
    expect(paymentSearch('Invoice 12')).toEqual([{ text: 'Invoice 12', fields: ['memo'] }]);
    expect(paymentSearch('+')).toEqual([{ text: '+', fields: ['memo'] }]);
    expect(paymentSearch('+ ')).toEqual([{ text: '+ ', fields: ['memo'] }]);
    expect(paymentSearch('')).toEqual([]);
    expect(paymentSearch('   ')).toEqual([]);
  });
});
