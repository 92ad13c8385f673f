import { describe, expect, it } from 'vitest';
import {
  CONTRACT_STATUSES,
  contractStatus,
  OPERATION_STATUSES,
  statusAfter,
  type ContractStatus,
  type OperationStatus,
} from '../../src/domain/operation-status.ts';
import type { OperationEvent } from '../../src/domain/events.ts';

/**
 * An operation goes through seven stages inside the service; the contract and every list, filter and page
 * show five. An executor's claim and the submission are the service's business: outside, the operation is
 * still approved until its outcome is known.
 */
describe('contractStatus', () => {
  const table: [OperationStatus, ContractStatus][] = [
    ['pending', 'pending'],
    ['approved', 'approved'],
    ['rejected', 'rejected'],
    ['executing', 'approved'],
    ['submitted', 'approved'],
    ['completed', 'completed'],
    ['failed', 'failed'],
  ];

  it.each(table)('when an operation is %s inside, then the contract shows it %s', (status, shown) => {
    expect(contractStatus(status)).toBe(shown);
  });

  it('when every internal status is mapped, then the table above names each once and the results are the contract statuses', () => {
    expect(table.map(([status]) => status).sort()).toEqual([...OPERATION_STATUSES].sort());
    expect([...new Set(OPERATION_STATUSES.map(contractStatus))].sort()).toEqual([...CONTRACT_STATUSES].sort());
  });
});

describe('statusAfter', () => {
  it.each<[OperationEvent['type'], OperationStatus]>([
    ['OperationRequested', 'pending'],
    ['OperationApproved', 'approved'],
    ['OperationRejected', 'rejected'],
    ['OperationExecutionStarted', 'executing'],
    ['OperationSubmitted', 'submitted'],
    ['OperationCompleted', 'completed'],
    ['OperationFailed', 'failed'],
    ['OperationSettlementRequested', 'failed'],
    ['OperationSettledFromLedger', 'completed'],
  ])('when an operation stream ends with %s, then the operation is %s', (type, status) => {
    expect(statusAfter(type)).toBe(status);
  });
});
