import { apiKeyDecider, effectiveStatus, type ApiKeyRecord } from '../commands/api-keys.ts';
import type { ApiKeyEvent } from '../domain/events.ts';
import { formatPartyRef, type PartyRef } from '../domain/parties.ts';
import type { EventFilter, EventStore } from '../ports/event-store.ts';
import type { ConsumerLogger, Follower, Supervision } from '../shared/follower.ts';
import { followDirectory } from './directory-reads.ts';

// The type lives with the state it narrows, so that commands need no projection for it.
export type { ApiKeyRecord };

export const API_KEY_EVENT_TYPES: ReadonlyArray<ApiKeyEvent['type']> = [
  'ApiKeyRequested',
  'ApiKeyApproved',
  'ApiKeyRejected',
  'ApiKeyRequestWithdrawn',
  'ApiKeyRevocationRequested',
  'ApiKeyRevocationRejected',
  'ApiKeyRevoked',
  'ApiKeyRotationRequested',
  'ApiKeyRotationRejected',
  'ApiKeyRotationWithdrawn',
  'ApiKeyRotated',
  'ApiKeyPreviousSecretEnded',
];

/** What the directory follows: by type, which the stores index (a stream prefix is a scan of every later event). */
export const API_KEY_FILTER: EventFilter = { eventTypes: [...API_KEY_EVENT_TYPES] };

/**
 * Every API key by id, in memory: the O(1) lookup that authentication needs on each request, and the
 * listing that makers and operators see. Fed in order by its follower (`followApiKeys`), live, so that a
 * revocation approved elsewhere takes effect at once. Applying an event the directory has already seen (by
 * position) changes nothing.
 */
export class ApiKeyDirectory {
  private readonly keys = new Map<string, ApiKeyRecord>();
  private lastPosition = 0;

  get position(): number {
    return this.lastPosition;
  }

  apply(event: { type: string; data: unknown; position: number }): void {
    if (event.position <= this.lastPosition) return;
    this.lastPosition = event.position;
    if (!(API_KEY_EVENT_TYPES as string[]).includes(event.type)) return;
    const keyEvent = event as unknown as ApiKeyEvent;
    const current = this.keys.get(keyEvent.data.keyID) ?? apiKeyDecider.initialState();
    const next = apiKeyDecider.evolve(current, keyEvent);
    if (next.status !== 'none') this.keys.set(next.keyID, next);
  }

  get(keyID: string): ApiKeyRecord | undefined {
    return this.keys.get(keyID);
  }

  /** Keys of one party, oldest request first, as listings show them: no secret and no hash. */
  listByParty(party: PartyRef, now: string): PublicApiKey[] {
    const ref = formatPartyRef(party);
    return [...this.keys.values()]
      .filter((key) => formatPartyRef(key.party) === ref)
      .map((key) => toPublicApiKey(key, now));
  }
}

export interface PublicApiKey {
  keyID: string;
  party: string;
  label: string;
  permissions: string[];
  state: string;
  maxTransactionAmount: string | null;
  maxDailyVolume: string | null;
  allowedIPs: string[];
  expiresInDays: number;
  expiresAt: string | null;
  requestedBy: string;
  requestedAt: string;
  approvedBy: string | null;
  revocationReason: string | null;
}

/** The only shape in which a key leaves the system: built field by field so a secret hash cannot slip out. */
export function toPublicApiKey(key: ApiKeyRecord, now: string): PublicApiKey {
  return {
    keyID: key.keyID,
    party: formatPartyRef(key.party),
    label: key.label,
    permissions: key.permissions,
    state: effectiveStatus(key, now),
    maxTransactionAmount: key.maxTransactionAmount,
    maxDailyVolume: key.maxDailyVolume,
    allowedIPs: key.allowedIPs,
    expiresInDays: key.expiresInDays,
    expiresAt: key.expiresAt,
    requestedBy: key.requestedBy,
    requestedAt: key.requestedAt,
    approvedBy: key.approvedBy,
    revocationReason: key.revocationReason,
  };
}

/**
 * Keeps the directory current, so that a key approved or revoked by another process (the CLI, the console)
 * takes effect within the store's polling interval: a supervised consumer whose subscription reads the history
 * from the directory's own position and then follows it live. After a failed read it resubscribes from that
 * position (applying an event twice changes nothing), so a revocation is never missed. A reader that must see a
 * write waits on it (src/projections/directory-reads.ts).
 */
export function followApiKeys(
  store: EventStore,
  directory: ApiKeyDirectory,
  logger: ConsumerLogger,
  supervision?: Supervision,
): Follower {
  return followDirectory('api-key-directory', store, API_KEY_FILTER, directory, logger, supervision);
}
