import type { PartyRef } from '../domain/parties.ts';
import type { ReadStore } from '../ports/read-store.ts';
import { WEBHOOK_ENDPOINTS_COLLECTION, type WebhookEndpointDoc } from './webhook-endpoints.ts';

/** A party's endpoints, newest registration first (a party has few). */
export function webhookEndpointsOfParty(readStore: ReadStore, party: PartyRef): Promise<WebhookEndpointDoc[]> {
  return readStore.find<WebhookEndpointDoc>(WEBHOOK_ENDPOINTS_COLLECTION.name, {
    where: { partyType: party.type, partyID: party.id },
    sort: [
      ['requestedAt', 'desc'],
      ['id', 'asc'],
    ],
  });
}
