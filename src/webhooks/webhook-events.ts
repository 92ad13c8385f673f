import { createHash } from 'node:crypto';
import type { ApiKeyRequested, ApiKeyRevoked, OperationRequested, WebhookEventType } from '../domain/events.ts';
import type { PartyRef } from '../domain/parties.ts';
import type { RecordedEvent } from '../ports/event-store.ts';
import * as distributorOperations from '../projections/distributor-operations.ts';
import * as merchantOperations from '../projections/merchant-operations.ts';
import * as merchantPayments from '../projections/merchant-payments.ts';
import { foldInMemory } from '../projections/fold.ts';

/**
 * Which webhook events a stored event is, for whom, and what they carry: pure functions of the event and the
 * history of its operation (or API key) up to it. The object in a webhook is the one the GET endpoints return,
 * as it was right after the event: it is folded by the read model's own projection over the operation's
 * stream and shaped by the same `toApi`, so a webhook and a GET never disagree on a field.
 */

/** The store events that may become webhook events. */
export const TRIGGER_EVENT_TYPES = [
  'OperationApproved',
  'OperationRejected',
  'OperationCompleted',
  'OperationFailed',
  'OperationSettledFromLedger',
  'ApiKeyRevoked',
] as const;

const OPERATION_WEBHOOK_TYPES: Record<string, WebhookEventType> = {
  OperationApproved: 'operation.approved',
  OperationRejected: 'operation.rejected',
  OperationCompleted: 'operation.completed',
  OperationFailed: 'operation.failed',
  // A failed operation whose money moved, settled by two operators: the party learns it completed after all.
  OperationSettledFromLedger: 'operation.completed',
};
const COMPLETIONS = new Set(['OperationCompleted', 'OperationSettledFromLedger']);

export interface WebhookMessage {
  /** `evt_…`: derived from the store event's id and the webhook type, so it never changes for one event. */
  eventID: string;
  type: WebhookEventType;
  /** The party whose endpoints receive it. */
  party: PartyRef;
  /** When it happened: the store event's commit time. */
  createdAt: string;
  /** The JSON body every attempt sends. */
  body: string;
}

export function webhookEventID(storeEventID: string, type: WebhookEventType): string {
  return `evt_${createHash('sha256').update(`${storeEventID}\n${type}`).digest('base64url').slice(0, 24)}`;
}

function message(
  trigger: RecordedEvent,
  type: WebhookEventType,
  party: PartyRef,
  data: Record<string, unknown>,
): WebhookMessage {
  const eventID = webhookEventID(trigger.id, type);
  // The envelope: id to de-duplicate on, type, time, the party it concerns, and the object.
  const body = JSON.stringify({
    id: eventID,
    type,
    createdAt: trigger.createdAt,
    party: { type: party.type, id: party.id },
    data,
  });
  return { eventID, type, party, createdAt: trigger.createdAt, body };
}

/**
 * The webhook events of an operation's event `trigger`, given its stream from the start up to and including
 * it: operation.* for the party that created it (operations of other channels have none), and
 * payment.received for a merchant paid by it once it completes.
 */
export function operationWebhookMessages(
  trigger: RecordedEvent,
  history: readonly RecordedEvent[],
  assetScale: number,
): WebhookMessage[] {
  const type = OPERATION_WEBHOOK_TYPES[trigger.type];
  const requested = history.find((event) => event.type === 'OperationRequested') as
    RecordedEvent<'OperationRequested', OperationRequested['data']> | undefined;
  if (type === undefined || requested === undefined) return [];
  const operationID = requested.data.operationID;
  const messages: WebhookMessage[] = [];
  const party = requested.data.party;
  if (party?.type === 'distributor') {
    const doc = foldInMemory(distributorOperations.distributorOperationsProjection({ assetScale }), history).get(
      operationID,
    );
    if (doc) messages.push(message(trigger, type, party, { operation: distributorOperations.toApi(doc) }));
  } else if (party?.type === 'merchant') {
    const doc = foldInMemory(merchantOperations.merchantOperationsProjection({ assetScale }), history).get(operationID);
    if (doc && doc.merchantID === party.id)
      messages.push(message(trigger, type, party, { operation: merchantOperations.toApi(doc) }));
  }
  if (COMPLETIONS.has(trigger.type)) {
    const payment = foldInMemory(merchantPayments.merchantPaymentsProjection({ assetScale }), history).get(operationID);
    if (payment?.visible)
      messages.push(
        message(
          trigger,
          'payment.received',
          { type: 'merchant', id: payment.merchantID },
          { payment: merchantPayments.toApi(payment) },
        ),
      );
  }
  return messages;
}

/** api_key.revoked for the key's party, given the key's stream up to the revocation. */
export function apiKeyWebhookMessages(trigger: RecordedEvent, history: readonly RecordedEvent[]): WebhookMessage[] {
  if (trigger.type !== 'ApiKeyRevoked') return [];
  const requested = history.find((event) => event.type === 'ApiKeyRequested') as
    RecordedEvent<'ApiKeyRequested', ApiKeyRequested['data']> | undefined;
  if (requested === undefined) return [];
  const { keyID, label, permissions, party } = requested.data;
  const revoked = trigger.data as ApiKeyRevoked['data'];
  return [
    message(trigger, 'api_key.revoked', party, {
      apiKey: { keyID, label, permissions, status: 'revoked', revokedAt: revoked.revokedAt },
    }),
  ];
}
