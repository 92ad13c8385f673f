import { describe, expect, it } from 'vitest';
import type { OperationRequested } from '../../src/domain/events.ts';
import type { RecordedEvent } from '../../src/ports/event-store.ts';
import { apiKeyWebhookMessages, operationWebhookMessages, webhookEventID } from '../../src/webhooks/webhook-events.ts';

/** Which webhooks a stored event becomes, for whom, with which object: pure, from the operation's own stream. */
let position = 100;
function recorded<T extends string>(type: T, data: unknown, stream = 'operation-op_1'): RecordedEvent {
  position += 1;
  return {
    id: `00000000-0000-4000-8000-${String(position).padStart(12, '0')}`,
    type,
    data,
    metadata: {},
    stream,
    revision: position - 101,
    position,
    createdAt: `2026-11-23T10:00:${String(position % 60).padStart(2, '0')}.000Z`,
  };
}

const payMerchant: OperationRequested['data'] = {
  operationID: 'op_1',
  party: { type: 'merchant', id: 'm-payer' },
  keyID: 'key_1',
  operationType: 'pay-merchant',
  amount: '25.00',
  fee: '1.00',
  payer: { kind: 'merchant', id: 'm-payer' },
  payee: { kind: 'merchant', id: 'm-payee' },
  payerName: 'Payer Shop',
  payerShortCode: '5001',
  counterparty: { kind: 'merchant', id: 'm-payee', name: 'Payee Shop', shortCode: '5002' },
  memo: 'invoice 7',
  cashOutFulfillmentType: null,
  cashOutFulfillmentID: null,
  volumeDay: null,
  createdAt: '2026-11-23T09:59:00.000Z',
};

describe('webhook events of an operation', () => {
  const requested = recorded('OperationRequested', payMerchant);
  const approved = recorded('OperationApproved', {
    operationID: 'op_1',
    approvedBy: 'u1',
    approvedAt: '2026-11-23T10:00:01.000Z',
  });
  const completed = recorded('OperationCompleted', {
    operationID: 'op_1',
    blockchainID: 'ab'.repeat(32),
    walletOperationID: 'wo_9',
    sequenceNumber: 9,
    completedAt: '2026-11-23T10:00:02.000Z',
  });

  it('given an approval, then the creating party gets operation.approved with the operation as its list shows it', () => {
    const [message, ...others] = operationWebhookMessages(approved, [requested, approved], 2);
    expect(others).toEqual([]);
    expect(message).toMatchObject({
      type: 'operation.approved',
      party: { type: 'merchant', id: 'm-payer' },
      eventID: webhookEventID(approved.id, 'operation.approved'),
    });
    const body = JSON.parse(message!.body);
    expect(body).toMatchObject({
      id: message!.eventID,
      type: 'operation.approved',
      createdAt: approved.createdAt,
      party: { type: 'merchant', id: 'm-payer' },
    });
    expect(body.data.operation).toMatchObject({
      operationID: 'op_1',
      merchantID: 'm-payer',
      amount: '25.00',
      fee: '1.00',
      status: 'approved',
      memo: 'invoice 7',
    });
    expect(body.data.operation).not.toHaveProperty('position');
  });

  it('given a completion, then the payer gets operation.completed and the merchant paid gets payment.received, with different ids', () => {
    const messages = operationWebhookMessages(completed, [requested, approved, completed], 2);
    expect(messages.map((m) => [m.type, m.party.id])).toEqual([
      ['operation.completed', 'm-payer'],
      ['payment.received', 'm-payee'],
    ]);
    expect(new Set(messages.map((m) => m.eventID)).size).toBe(2);
    expect(JSON.parse(messages[1]!.body).data.payment).toMatchObject({
      operationID: 'wo_9',
      type: 'payment',
      amount: '25.00',
      from: 'Payer Shop',
      fromType: 'merchant',
      fromShortCode: 5001,
      completedAt: '2026-11-23T10:00:02.000Z',
    });
  });

  it('given a failure that operators later settled from the ledger (the money had moved), then the settlement is told as operation.completed and payment.received, as a completion is', () => {
    const failed = recorded('OperationFailed', {
      operationID: 'op_1',
      lastError: 'ledger busy',
      failedAt: '2026-11-23T10:00:02.000Z',
    });
    const settled = recorded('OperationSettledFromLedger', {
      operationID: 'op_1',
      sequenceNumber: 9,
      blockchainID: 'ab'.repeat(32),
      walletOperationID: 'wo_9',
      legs: [],
      requestedBy: 'u-a',
      approvedBy: 'u-b',
      reason: 'moved after the failure',
      settledAt: '2026-11-23T11:00:00.000Z',
    });
    const history = [requested, approved, failed, settled];
    const messages = operationWebhookMessages(settled, history, 2);
    expect(messages.map((m) => [m.type, m.party.id])).toEqual([
      ['operation.completed', 'm-payer'],
      ['payment.received', 'm-payee'],
    ]);
    expect(JSON.parse(messages[0]!.body).data.operation).toMatchObject({
      status: 'completed',
      blockchainID: 'ab'.repeat(32),
      lastError: null,
    });
    expect(JSON.parse(messages[1]!.body).data.payment).toMatchObject({
      operationID: 'wo_9',
      blockchainID: 'ab'.repeat(32),
      completedAt: '2026-11-23T11:00:00.000Z',
    });
    expect(messages[0]!.eventID).not.toBe(webhookEventID(failed.id, 'operation.completed'));
  });

  it('given the same event twice, then the ids and bodies are the same (receivers de-duplicate on them)', () => {
    const once = operationWebhookMessages(completed, [requested, approved, completed], 2);
    const again = operationWebhookMessages(completed, [requested, approved, completed], 2);
    expect(again).toEqual(once);
  });

  it("given a rejection, then the creating party gets operation.rejected whose operation carries the checker's rejectionReason", () => {
    const rejected = recorded('OperationRejected', {
      operationID: 'op_1',
      rejectedBy: 'u2',
      reason: 'wrong amount',
      rejectedAt: '2026-11-23T10:00:03.000Z',
    });
    const [message, ...others] = operationWebhookMessages(rejected, [requested, rejected], 2);
    expect(others).toEqual([]);
    expect(message!.type).toBe('operation.rejected');
    expect(JSON.parse(message!.body).data.operation).toMatchObject({
      operationID: 'op_1',
      status: 'rejected',
      rejectionReason: 'wrong amount',
      lastError: null,
    });
  });

  it('given an operation of another channel (no creating party), then only the merchant paid hears of it', () => {
    const individual = recorded('OperationRequested', {
      ...payMerchant,
      operationType: 'individual-payment',
      party: null,
      keyID: null,
      payer: { kind: 'individual', id: '+2348120000001' },
      payerName: '+2348120000001',
      payerShortCode: null,
    });
    expect(operationWebhookMessages(approved, [individual, approved], 2)).toEqual([]);
    expect(operationWebhookMessages(completed, [individual, approved, completed], 2).map((m) => m.type)).toEqual([
      'payment.received',
    ]);
  });

  it('given an event that is not one of a webhook, then none', () => {
    const started = recorded('OperationExecutionStarted', { operationID: 'op_1' });
    expect(operationWebhookMessages(started, [requested, approved, started], 2)).toEqual([]);
  });
});

describe('webhook events of an API key', () => {
  it('given a revocation, then the key’s party gets api_key.revoked without any secret', () => {
    const keyRequested = recorded(
      'ApiKeyRequested',
      {
        keyID: 'key_7',
        party: { type: 'distributor', id: 'd1' },
        label: 'till 3',
        permissions: ['Perform Operations'],
        maxTransactionAmount: null,
        maxDailyVolume: null,
        allowedIPs: [],
        expiresInDays: 90,
        requestedBy: 'u1',
        requestedAt: '2026-11-01T00:00:00.000Z',
      },
      'apiKey-key_7',
    );
    const keyApproved = recorded(
      'ApiKeyApproved',
      {
        keyID: 'key_7',
        approvedBy: 'u2',
        approvedAt: '2026-11-01T00:01:00.000Z',
        expiresAt: '2027-01-30T00:00:00.000Z',
        secretHash: 'f'.repeat(64),
      },
      'apiKey-key_7',
    );
    const revoked = recorded(
      'ApiKeyRevoked',
      { keyID: 'key_7', approvedBy: 'u2', revokedAt: '2026-11-23T10:00:00.000Z' },
      'apiKey-key_7',
    );
    const [message] = apiKeyWebhookMessages(revoked, [keyRequested, keyApproved, revoked]);
    expect(message).toMatchObject({ type: 'api_key.revoked', party: { type: 'distributor', id: 'd1' } });
    expect(JSON.parse(message!.body).data).toEqual({
      apiKey: {
        keyID: 'key_7',
        label: 'till 3',
        permissions: ['Perform Operations'],
        status: 'revoked',
        revokedAt: '2026-11-23T10:00:00.000Z',
      },
    });
    expect(message!.body).not.toContain('f'.repeat(64));
  });
});
