import type { WalletRef } from './events.ts';
import type { PartyType } from './parties.ts';

/**
 * Stream names follow EventStoreDB's `category-id` convention, so that KurrentDB's by-category system
 * projections and stream-prefix filters work on them. Claim streams hold one event each and exist only to
 * make a unique value (a short code, an email) unique under concurrency: they are appended with `no_stream`.
 */
export const streams = {
  distributor: (distributorID: string) => `distributor-${distributorID}`,
  merchant: (merchantID: string) => `merchant-${merchantID}`,
  individual: (phone: string) => `individual-${phone}`,
  shortCode: (partyType: PartyType, shortCode: string) => `${partyType}ShortCode-${shortCode}`,
  user: (userID: string) => `user-${userID}`,
  userEmail: (email: string) => `userEmail-${email}`,
  /** One request to grant or widen a console user's access, approved or rejected by another administrator. */
  accessRequest: (requestID: string) => `accessRequest-${requestID}`,
  apiKey: (keyID: string) => `apikey-${keyID}`,
  webhookEndpoint: (endpointID: string) => `webhookEndpoint-${endpointID}`,
  operation: (operationID: string) => `operation-${operationID}`,
  wallet: (wallet: WalletRef) => `wallet-${wallet.kind}_${wallet.id}`,
  keyVolume: (keyID: string, day: string) => `keyVolume-${keyID}_${day}`,
  /** The idempotency key is hashed: clients choose it, and it must not shape our stream names. */
  idempotency: (keyID: string, idempotencyKeyHash: string) => `idempotency-${keyID}_${idempotencyKeyHash}`,
  /** An individual's one-time cash-out codes (CASH_OUT_CONSENT=individual-code): issued, then used once. */
  cashOutConsent: (phone: string) => `cashOutConsent-${phone}`,
  /** Summaries of a long stream's folded state (StateSnapshotted), so that a cold load reads a bounded amount. */
  snapshot: (stream: string) => `snapshot-${stream}`,
  /** The demo's mark on a store it seeded (src/demo-store.ts): the first event of a demo store, never of a real one. */
  demoStore: 'demoStore-marker',
} as const;

export const streamPrefixes = {
  apiKey: 'apikey-',
  webhookEndpoint: 'webhookEndpoint-',
  distributor: 'distributor-',
  merchant: 'merchant-',
  individual: 'individual-',
  user: 'user-',
  accessRequest: 'accessRequest-',
  operation: 'operation-',
  wallet: 'wallet-',
  keyVolume: 'keyVolume-',
  snapshot: 'snapshot-',
} as const;
