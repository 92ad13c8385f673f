import { apiKeyDecider, effectiveStatus, type ApiKeyRecord } from '../commands/api-keys.ts';
import type { ApiKeyEvent } from '../domain/events.ts';
import { formatPartyRef, type PartyRef } from '../domain/parties.ts';
import { streamPrefixes } from '../domain/streams.ts';
import type { EventStore } from '../ports/event-store.ts';
import { checkpointIn, Follower, type ConsumerLogger, type Supervision } from '../shared/follower.ts';

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

/**
 * Every API key by id, in memory: the O(1) lookup that authentication needs on each request, and the
 * listing that makers and operators see. Fed in order from the event store (readAll, or a live
 * subscription so that a revocation approved elsewhere takes effect at once). Applying an event the
 * directory has already seen (by position) changes nothing.
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

  /** Every event up to `position` has been read and each key event among them applied: later reads start after it. */
  passed(position: number): void {
    if (position > this.lastPosition) this.lastPosition = position;
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

/** Reads every API-key event from the store into the directory, page by page, up to the head. */
export async function catchUpApiKeyDirectory(
  store: EventStore,
  directory: ApiKeyDirectory,
  pageSize = 1000,
): Promise<void> {
  // Read before the pages: every key event at or below it is committed, so the pages find it. The directory
  // then stands at the head, not at its last key event, so that neither its subscription nor its lag on /ready
  // scans the whole history after it again (key events are few; a prefix filter reads every event it passes).
  const head = await store.headPosition();
  for (;;) {
    const page = await store.readAll({
      fromPosition: directory.position + 1,
      maxCount: pageSize,
      filter: { streamPrefixes: [streamPrefixes.apiKey] },
    });
    for (const event of page) directory.apply(event);
    if (page.length < pageSize) break;
  }
  directory.passed(head);
}

/**
 * Keeps the directory current, so that a key approved or revoked by another process (the CLI, the console)
 * takes effect within the store's polling interval: a supervised consumer that catches up by reading pages
 * and then follows a live subscription, both from the directory's own position. After a failed read it
 * resubscribes from that position (applying an event twice changes nothing), so a revocation is never missed.
 */
export function followApiKeys(
  store: EventStore,
  directory: ApiKeyDirectory,
  logger: ConsumerLogger,
  supervision?: Supervision,
): Follower {
  const follower = new Follower({
    name: 'api-key-directory',
    eventStore: store,
    filter: { streamPrefixes: [streamPrefixes.apiKey] },
    // The directory is the checkpoint: each session first catches up by pages, then follows from where it is.
    checkpoint: checkpointIn(() => directory.position),
    prepare: () => catchUpApiKeyDirectory(store, directory),
    handle: async (batch) => batch.forEach((event) => directory.apply(event)),
    logger,
    ...(supervision ? { supervision } : {}),
  });
  follower.start();
  return follower;
}
