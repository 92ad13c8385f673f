import { describe, expect, it } from 'vitest';
import {
  PENDING_OPERATIONS_COLLECTION,
  PENDING_OPERATIONS_PROJECTION,
  pendingOperationsProjection,
  type PendingOperationDoc,
} from '../../src/projections/pending-operations.ts';
import {
  approved,
  completed,
  failed,
  projectionSpec,
  rejected,
  request,
  stored,
  submitted,
  T0,
} from '../support/projection-spec.ts';

/**
 * The pending-operations read model: one document per operation created with a key and not decided yet,
 * what the key-revocation consumer reads to find a revoked key's pending operations.
 */
const spec = projectionSpec(pendingOperationsProjection());
const ID = 'op_1';
const pending = (id: string, position: number, keyID = 'key_1'): PendingOperationDoc => ({
  id,
  keyID,
  createdAt: T0,
  requestPosition: position,
  position,
});
const revoked = (keyID = 'key_1') => ({
  type: 'ApiKeyRevoked',
  data: { keyID, approvedBy: 'user-checker', revokedAt: T0 },
});

describe('pending-operations projection', () => {
  it('when an operation is requested with a key, then it is pending under that key with the request’s position', () => {
    spec
      .given()
      .when(request.cashInToIndividual(ID))
      .then({ [ID]: pending(ID, 1) });
  });

  it('when operations of every kind are requested with keys, then each is pending under its key', () => {
    spec
      .given()
      .when(
        request.cashOut('op_a', { keyID: 'key_m' }),
        request.payMerchant('op_b', { keyID: 'key_m' }),
        request.cashOutFulfillment('op_c'),
      )
      .then({ op_a: pending('op_a', 1, 'key_m'), op_b: pending('op_b', 2, 'key_m'), op_c: pending('op_c', 3) });
  });

  it('when an operation of another channel is requested (no key), then there is no document', () => {
    spec.given().when(request.issue(ID), approved(ID)).then({});
    spec.given().when(request.individualPayment('op_2')).then({});
  });

  it('when a checker approves it, then it is no longer pending', () => {
    spec.given(request.cashInToIndividual(ID)).when(approved(ID)).then({});
  });

  it('when it is rejected, then it is no longer pending', () => {
    spec.given(request.cashInToIndividual(ID)).when(rejected(ID)).then({});
  });

  it('when the key is revoked, then no document changes (the event only moves the checkpoint past the revocation)', () => {
    spec.given(request.cashInToIndividual(ID)).when(revoked()).thenNothingChanged();
    expect(pendingOperationsProjection().eventTypes).toContain('ApiKeyRevoked');
    expect(pendingOperationsProjection().documentIds(stored([revoked()])[0]!)).toEqual([]);
  });

  it("when a departure ends a key's previous secret, then no document changes (the checkpoint passes it, as a revocation)", () => {
    const ended = {
      type: 'ApiKeyPreviousSecretEnded',
      data: { keyID: 'key_1', endedAt: T0, departedUserID: 'user-maker' },
    };
    spec.given(request.cashInToIndividual(ID)).when(ended).thenNothingChanged();
    expect(pendingOperationsProjection().eventTypes).toContain('ApiKeyPreviousSecretEnded');
  });

  it('when an operation is executed or fails after its approval, then nothing comes back', () => {
    spec.given(request.cashInToIndividual(ID), approved(ID)).when(submitted(ID), completed(ID)).then({});
    spec.given(request.cashInToIndividual(ID), approved(ID)).when(failed(ID)).then({});
  });

  it('when the history is applied twice, or replayed onto the built documents, then the documents are equal', () => {
    const history = stored([
      request.cashInToIndividual(ID),
      request.cashOut('op_2'),
      request.payIndividual('op_3'),
      request.issue('op_4'),
      approved(ID),
      revoked(),
      rejected('op_2'),
      approved('op_4'),
      request.cashInToMerchant('op_5'),
    ]);
    const docs = spec.fold(history);
    expect(Object.keys(docs).sort()).toEqual(['op_3', 'op_5']);
    expect(spec.fold(history.flatMap((event) => [event, event]))).toEqual(docs);
    expect(spec.fold(history, docs)).toEqual(docs);
  });

  it('when it is declared, then its name is pending-operations and the collection is indexed by key and request position', () => {
    expect(PENDING_OPERATIONS_PROJECTION).toBe('pending-operations');
    expect(PENDING_OPERATIONS_COLLECTION).toEqual({
      name: 'pending_operations',
      indexes: [['keyID', 'requestPosition']],
    });
  });
});
