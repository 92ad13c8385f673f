import { describe, expect, it } from 'vitest';
import {
  DISTRIBUTOR_OPERATIONS_COLLECTION,
  DISTRIBUTOR_OPERATIONS_SORT,
  distributorOperationsProjection,
  distributorOperationsWhere,
  toApi,
  type DistributorOperationDoc,
} from '../../src/projections/distributor-operations.ts';
import {
  DISTRIBUTOR,
  MERCHANT,
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

const spec = projectionSpec(distributorOperationsProjection());
const ID = 'op_00000000000000000000000000000001';
const built = (...events: Parameters<typeof stored>[0]) => spec.fold(stored(events));
const only = (docs: Record<string, DistributorOperationDoc>) => {
  expect(Object.keys(docs)).toEqual([ID]);
  return docs[ID]!;
};

/** A document as stored: with its API object's JSON text (the stored text itself is tested below). */
const withText = (doc: DistributorOperationDoc): DistributorOperationDoc => ({
  ...doc,
  apiText: JSON.stringify(toApi(doc)),
});

const pendingCashInToIndividual: DistributorOperationDoc = {
  id: ID,
  operationID: ID,
  distributorID: DISTRIBUTOR.id,
  operationType: 'cash-in',
  amount: '100.00',
  phoneTo: PHONE,
  walletOperationID: '',
  sequenceNumber: null,
  blockchainID: '',
  lastError: null,
  status: 'pending',
  createdAt: T0,
  updatedAt: T0,
  position: 1,
};

describe('distributor operations projection', () => {
  it('when a distributor requests a cash-in to an individual, then a pending document with phoneTo is made', () => {
    spec
      .given()
      .when(request.cashInToIndividual(ID))
      .then({ [ID]: withText(pendingCashInToIndividual) });
  });

  it('when a cash-in to an individual is read, then the contract object has phoneTo and no merchant or cash-out fields', () => {
    expect(toApi(only(built(request.cashInToIndividual(ID, { memo: 'float top-up' }))))).toEqual({
      operationID: ID,
      distributorID: DISTRIBUTOR.id,
      operationType: 'cash-in',
      amount: '100.00',
      phoneTo: PHONE,
      memo: 'float top-up',
      walletOperationID: '',
      sequenceNumber: null,
      blockchainID: '',
      lastError: null,
      rejectionReason: null,
      status: 'pending',
      createdAt: T0,
      updatedAt: T0,
    });
  });

  it('when a cash-in to a merchant is read, then it has merchantTo, merchantName and an integer merchantShortCode, and no memo when none', () => {
    expect(toApi(only(built(request.cashInToMerchant(ID))))).toEqual({
      operationID: ID,
      distributorID: DISTRIBUTOR.id,
      operationType: 'cash-in',
      amount: '100.00',
      merchantTo: MERCHANT.id,
      merchantName: MERCHANT.name,
      merchantShortCode: 5001,
      walletOperationID: '',
      sequenceNumber: null,
      blockchainID: '',
      lastError: null,
      rejectionReason: null,
      status: 'pending',
      createdAt: T0,
      updatedAt: T0,
    });
  });

  it('when a cash-out-fulfillment is read, then it has phoneFrom and the fulfillment type and id', () => {
    expect(toApi(only(built(request.cashOutFulfillment(ID, { amount: '20.00' }))))).toEqual({
      operationID: ID,
      distributorID: DISTRIBUTOR.id,
      operationType: 'cash-out-fulfillment',
      amount: '20.00',
      phoneFrom: PHONE,
      walletOperationID: '',
      cashOutFulfillmentType: 'cash',
      cashOutFulfillmentID: 'rcpt-42',
      sequenceNumber: null,
      blockchainID: '',
      lastError: null,
      rejectionReason: null,
      status: 'pending',
      createdAt: T0,
      updatedAt: T0,
    });
  });

  it('when a checker approves, then the status is approved and updatedAt is the approval time', () => {
    spec
      .given(request.cashInToIndividual(ID))
      .when(approved(ID, at(1)))
      .then({
        [ID]: withText({ ...pendingCashInToIndividual, status: 'approved', updatedAt: at(1), position: 2 }),
      });
  });

  it("when a checker rejects, then the status is rejected with the checker's reason as rejectionReason and no lastError", () => {
    spec
      .given(request.cashInToIndividual(ID))
      .when(rejected(ID, at(1)))
      .then({
        [ID]: withText({
          ...pendingCashInToIndividual,
          status: 'rejected',
          rejectionReason: 'not ours',
          updatedAt: at(1),
          position: 2,
        }),
      });
    expect(toApi(only(built(request.cashInToIndividual(ID), rejected(ID))))).toMatchObject({
      status: 'rejected',
      rejectionReason: 'not ours',
      lastError: null,
    });
  });

  it('when an operation is not rejected, or its document was stored before rejectionReason existed, then the object reads rejectionReason null', () => {
    expect(toApi(only(built(request.cashInToIndividual(ID))))).toHaveProperty('rejectionReason', null);
    const { rejectionReason: _absent, ...older } = only(built(request.cashInToIndividual(ID), rejected(ID)));
    expect(toApi(older)).toHaveProperty('rejectionReason', null);
  });

  it('when the ledger accepts the transaction, then the sequence number is known and the status stays approved', () => {
    spec
      .given(request.cashInToIndividual(ID), approved(ID))
      .when(submitted(ID, 7001, at(2)))
      .then({
        [ID]: withText({
          ...pendingCashInToIndividual,
          status: 'approved',
          sequenceNumber: 7001,
          updatedAt: at(2),
          position: 3,
        }),
      });
  });

  it('when the operation completes, then blockchainID, walletOperationID and the sequence number are set', () => {
    const doc = only(
      built(
        request.cashInToIndividual(ID),
        approved(ID),
        submitted(ID),
        completed(ID, {
          blockchainID: 'tx-abc',
          walletOperationID: 'wo_123',
          sequenceNumber: 7002,
          completedAt: at(3),
        }),
      ),
    );
    expect(doc).toEqual(
      withText({
        ...pendingCashInToIndividual,
        status: 'completed',
        blockchainID: 'tx-abc',
        walletOperationID: 'wo_123',
        sequenceNumber: 7002,
        updatedAt: at(3),
        position: 4,
      }),
    );
    expect(toApi(doc)).toMatchObject({
      blockchainID: 'tx-abc',
      walletOperationID: 'wo_123',
      sequenceNumber: 7002,
      lastError: null,
      updatedAt: at(3),
    });
  });

  it('when the operation fails, then the status is failed with lastError and nothing from a completion', () => {
    spec
      .given(request.cashInToIndividual(ID), approved(ID), submitted(ID))
      .when(failed(ID, 'ledger down', at(4)))
      .then({
        [ID]: withText({
          ...pendingCashInToIndividual,
          status: 'failed',
          sequenceNumber: 7001,
          lastError: 'ledger down',
          updatedAt: at(4),
          position: 4,
        }),
      });
  });

  it("when a failed operation whose money moved is settled from the ledger, then it is completed with the ledger's transaction and no lastError", () => {
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
    spec
      .given(request.cashInToIndividual(ID), approved(ID), failed(ID, 'ledger busy', at(4)))
      .when(settled)
      .then({
        [ID]: withText({
          ...pendingCashInToIndividual,
          status: 'completed',
          blockchainID: 'tx-late',
          walletOperationID: 'wo_late',
          sequenceNumber: 7003,
          lastError: null,
          updatedAt: at(6),
          position: 4,
        }),
      });
  });

  it("when a completed cash-in to a merchant with a memo is stored, then its text is the API object's JSON, field for field in the contract's order", () => {
    const doc = only(
      built(
        request.cashInToMerchant(ID, { memo: 'float "top-up"' }),
        approved(ID),
        submitted(ID),
        completed(ID, {
          blockchainID: 'tx-abc',
          walletOperationID: 'wo_123',
          sequenceNumber: 7002,
          completedAt: at(3),
        }),
      ),
    );
    expect(doc.apiText).toBe(
      `{"operationID":"${ID}","distributorID":"${DISTRIBUTOR.id}","operationType":"cash-in","amount":"100.00","merchantTo":"${MERCHANT.id}","merchantName":"${MERCHANT.name}",` +
        `"merchantShortCode":5001,"memo":"float \\"top-up\\"","walletOperationID":"wo_123","sequenceNumber":7002,"blockchainID":"tx-abc","lastError":null,"rejectionReason":null,` +
        `"status":"completed","createdAt":"${T0}","updatedAt":"${at(3)}"}`,
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
      request.cashInToIndividual(ID, { memo: 'Zoë 😀' }),
      request.cashInToMerchant(ID),
      request.cashOutFulfillment(ID),
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

  it('when a document is read, then it carries its status, and id and position never leave', () => {
    const api = toApi(only(built(request.cashInToIndividual(ID))));
    expect(api).toHaveProperty('status', 'pending');
    expect(api).not.toHaveProperty('id');
    expect(api).not.toHaveProperty('position');
  });

  it('when operations of merchants or other channels happen, then no document is made', () => {
    spec
      .given()
      .when(
        request.cashOut('op_a'),
        approved('op_a'),
        completed('op_a'),
        request.payMerchant('op_b'),
        request.payIndividual('op_c'),
        failed('op_c'),
        request.issue('op_d'),
        approved('op_d'),
        completed('op_d'),
        request.individualPayment('op_e'),
        rejected('op_e'),
        credited({ kind: 'distributor', id: DISTRIBUTOR.id }, '5.00'),
      )
      .then({});
  });

  it('when a later event names an operation without a document, then no document is made', () => {
    expect(distributorOperationsProjection().evolve(null, stored([completed(ID)])[0]!, ID)).toBeNull();
  });

  it('when the history is applied twice, or replayed onto the built documents, then the documents are equal', () => {
    const history = stored([
      request.cashInToIndividual(ID),
      request.cashOutFulfillment('op_2'),
      request.cashInToMerchant('op_3', { memo: 'm' }),
      approved(ID),
      rejected('op_2'),
      approved('op_3'),
      submitted(ID),
      submitted('op_3'),
      completed(ID),
      failed('op_3'),
    ]);
    const docs = spec.fold(history);
    expect(Object.values(docs).map((doc) => doc.status)).toEqual(['completed', 'rejected', 'failed']);
    expect(spec.fold(history.flatMap((event) => [event, event]))).toEqual(docs);
    expect(spec.fold(history, docs)).toEqual(docs);
  });

  it('when the list is queried, then it filters by distributor and sorts newest creation first with the id as tie-break', () => {
    expect(DISTRIBUTOR_OPERATIONS_COLLECTION).toEqual({
      name: 'distributor_operations',
      indexes: [['distributorID', 'createdAt', 'id']],
      textField: 'apiText',
    });
    expect(distributorOperationsWhere(DISTRIBUTOR.id)).toEqual({ distributorID: DISTRIBUTOR.id });
    expect(DISTRIBUTOR_OPERATIONS_SORT).toEqual([
      ['createdAt', 'desc'],
      ['id', 'desc'],
    ]);
  });
});
