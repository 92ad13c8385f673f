import { describe, it } from 'vitest';
import { settlementDecider, type SettlingUser } from '../../src/commands/failed-settlement.ts';
import type { OperationEvent, OperationRequested } from '../../src/domain/events.ts';
import type { LedgerFate, LedgerTransaction } from '../../src/ports/ledger.ts';
import { deciderSpec } from '../support/decider-spec.ts';

/**
 * Settling a failed operation whose money moved, pure: given the operation's stream, when a platform
 * administrator asks or another approves, with the ledger's fate of the operation, then these events (or this
 * refusal).
 */

const OP = 'op_0123456789abcdef0123456789abcdef';
const T0 = '2026-03-10T09:00:00.000Z';
const T1 = '2026-03-10T10:00:00.000Z';
const alice: SettlingUser = { userID: 'u-alice', platformAdmin: true };
const bob: SettlingUser = { userID: 'u-bob', platformAdmin: true };
const checker: SettlingUser = { userID: 'u-checker', platformAdmin: false };

const requested: OperationRequested['data'] = {
  operationID: OP,
  party: { type: 'distributor', id: 'd1' },
  keyID: null,
  operationType: 'cash-in',
  amount: '40.00',
  fee: '0.50',
  payer: { kind: 'distributor', id: 'd1' },
  payee: { kind: 'individual', id: '+2348000000001' },
  payerName: 'p',
  payerShortCode: null,
  counterparty: { kind: 'individual', id: '+2348000000001', name: 'n' },
  memo: null,
  cashOutFulfillmentType: null,
  cashOutFulfillmentID: null,
  volumeDay: null,
  createdAt: T0,
};
const tx: LedgerTransaction = {
  blockchainID: 'ab'.repeat(32),
  sequenceNumber: 7,
  operationID: OP,
  createdAt: T0,
  legs: [
    { from: 'distributor:d1', to: 'individual:+2348000000001', amount: '40.00' },
    { from: 'distributor:d1', to: 'platform:fees', amount: '0.50' },
  ],
};
const executed: LedgerFate = { kind: 'executed', tx };

const failed: OperationEvent[] = [
  { type: 'OperationRequested', data: requested },
  { type: 'OperationApproved', data: { operationID: OP, approvedBy: 'u-checker', approvedAt: T0 } },
  {
    type: 'OperationExecutionStarted',
    data: { operationID: OP, executorID: 'e', attempt: 1, leaseUntil: T0, startedAt: T0 },
  },
  { type: 'OperationFailed', data: { operationID: OP, lastError: 'ledger busy', failedAt: T0 } },
];
const asked = {
  type: 'OperationSettlementRequested' as const,
  data: {
    operationID: OP,
    requestedBy: 'u-alice',
    reason: 'audit 2026-03-10',
    sequenceNumber: 7,
    blockchainID: tx.blockchainID,
    requestedAt: T1,
  },
};

const spec = deciderSpec(settlementDecider);
const request = (by: SettlingUser, fate: LedgerFate = executed, reason = 'audit 2026-03-10') => ({
  type: 'RequestFailedSettlement' as const,
  data: { operationID: OP, by, reason, fate, now: T1 },
});
const approve = (by: SettlingUser, fate: LedgerFate = executed) => ({
  type: 'ApproveFailedSettlement' as const,
  data: { operationID: OP, by, fate, now: T1 },
});

describe('settling a failed operation whose money moved', () => {
  describe('the request', () => {
    it('when a platform administrator asks for a failed operation the ledger executed, then the request names the transaction and the reason', () =>
      spec(failed).when(request(alice)).then([asked]));

    it('when the ledger has no transaction for it (voided), then it is refused: the failure stands', () =>
      spec(failed)
        .when(request(alice, { kind: 'voided', operationID: OP, voidedAt: T0 }))
        .thenRefused('WRONG_STATE', /no transaction.*voided/));

    it('when the ledger has nothing for it, then it is refused', () =>
      spec(failed)
        .when(request(alice, { kind: 'none' }))
        .thenRefused('WRONG_STATE', /no transaction/));

    it("when the ledger's transaction moves other legs than the operation asked for, then it is refused", () =>
      spec(failed)
        .when(request(alice, { kind: 'executed', tx: { ...tx, legs: [tx.legs[0]!] } }))
        .thenRefused('WRONG_STATE', /by hand/));

    it('when the operation is not failed (completed), then it is refused', () =>
      spec([
        ...failed.slice(0, 3),
        {
          type: 'OperationCompleted',
          data: {
            operationID: OP,
            blockchainID: tx.blockchainID,
            walletOperationID: 'wo_x',
            sequenceNumber: 7,
            completedAt: T0,
          },
        },
      ])
        .when(request(alice))
        .thenRefused('WRONG_STATE', /completed, not failed/));

    it('when the operation does not exist, then it is refused with not found', () =>
      spec([]).when(request(alice)).thenRefused('NOT_FOUND'));

    it('when the user is not a platform administrator, then it is refused', () =>
      spec(failed).when(request(checker)).thenRefused('ROLE_REQUIRED'));

    it('when the reason is empty, then it is refused as invalid input', () =>
      spec(failed)
        .when(request(alice, executed, '  '))
        .thenRefused('INVALID_INPUT', /reason/));

    it('when a request already waits, then another is refused', () =>
      spec([...failed, asked])
        .when(request(bob))
        .thenRefused('WRONG_STATE', /already waiting.*u-alice/));
  });

  describe('the approval', () => {
    it('when another platform administrator approves, then the operation is settled as the ledger has it, naming both', () =>
      spec([...failed, asked])
        .when(approve(bob))
        .then([
          {
            type: 'OperationSettledFromLedger',
            data: {
              operationID: OP,
              sequenceNumber: 7,
              blockchainID: tx.blockchainID,
              walletOperationID: `wo_${'ab'.repeat(16)}`,
              legs: tx.legs,
              requestedBy: 'u-alice',
              approvedBy: 'u-bob',
              reason: 'audit 2026-03-10',
              settledAt: T1,
            },
          },
        ]));

    it('when the requester approves their own request, then it is refused (maker and checker differ)', () =>
      spec([...failed, asked])
        .when(approve(alice))
        .thenRefused('SAME_USER', /another platform administrator/));

    it('when no request waits, then it is refused', () =>
      spec(failed)
        .when(approve(bob))
        .thenRefused('WRONG_STATE', /settle-failed request/));

    it('when the ledger now has another transaction than the one asked about, then it is refused', () =>
      spec([...failed, asked])
        .when(approve(bob, { kind: 'executed', tx: { ...tx, sequenceNumber: 8 } }))
        .thenRefused('WRONG_STATE', /not the one/));

    it('when it was settled already, then a second approval is refused (the operation is completed)', () =>
      spec([...failed, asked, ...settledBy(bob)])
        .when(approve(bob))
        .thenRefused('WRONG_STATE', /completed, not failed/));

    it('when the approver is not a platform administrator, then it is refused', () =>
      spec([...failed, asked])
        .when(approve(checker))
        .thenRefused('ROLE_REQUIRED'));
  });
});

function settledBy(by: SettlingUser): OperationEvent[] {
  return settlementDecider.decide(
    approve(by),
    [...failed, asked].reduce(settlementDecider.evolve, settlementDecider.initialState()),
  ) as OperationEvent[];
}
