import type { ActiveUser } from '../commands/back-office.ts';
import { DomainError, invalidInput } from '../domain/errors.ts';
import { samePartyRef } from '../domain/parties.ts';
import { isEndpointID } from '../domain/webhook-endpoints.ts';
import type { ReadStore } from '../ports/read-store.ts';
import { getRoute, redeliverEvent, redeliverSince } from './deliveries.ts';

/**
 * A maker's redelivery, for the console and the CLI: one event again, or every event since a time. It moves no
 * money and grants no access, so it needs no checker; it is recorded on each delivery it queues (who, when).
 */
export type RedeliveryTarget = { eventID: string } | { since: Date };

const EVENT_ID_PATTERN = /^evt_[A-Za-z0-9_-]{24}$/;

/** `--event` or `--since` (ISO 8601), exactly one. */
export function parseRedeliveryTarget(input: { eventID?: unknown; since?: unknown }): RedeliveryTarget {
  const hasEvent = typeof input.eventID === 'string' && input.eventID.trim() !== '';
  const hasSince = typeof input.since === 'string' && input.since.trim() !== '';
  if (hasEvent === hasSince)
    throw invalidInput('eventID', 'name one event id, or a time since which every event is sent again');
  if (hasEvent) {
    const eventID = (input.eventID as string).trim();
    if (!EVENT_ID_PATTERN.test(eventID))
      throw invalidInput('eventID', 'an event id looks like evt_ and 24 letters, digits, - or _');
    return { eventID };
  }
  const since = new Date((input.since as string).trim());
  if (Number.isNaN(since.getTime()))
    throw invalidInput('since', 'since must be a date and time, e.g. 2026-11-23T09:00:00Z');
  return { since };
}

export async function requestRedelivery(
  readStore: ReadStore,
  user: ActiveUser,
  endpointID: string,
  target: RedeliveryTarget,
  now: Date,
): Promise<{ endpointID: string; queued: number }> {
  if (!user.roles.includes('maker'))
    throw new DomainError('ROLE_REQUIRED', 'redelivering webhook events needs the maker role');
  const route = isEndpointID(endpointID) ? await getRoute(readStore, endpointID) : null;
  if (route === null)
    throw new DomainError('NOT_FOUND', `webhook endpoint ${endpointID.slice(0, 40)} has no deliveries`);
  if (!samePartyRef(user.party, { type: route.partyType, id: route.partyID }))
    throw new DomainError('OTHER_PARTY', `webhook endpoint ${endpointID} belongs to another party`);
  const by = user.userID;
  if ('eventID' in target) {
    await redeliverEvent(readStore, route, target.eventID, by, now);
    return { endpointID, queued: 1 };
  }
  return { endpointID, queued: await redeliverSince(readStore, route, target.since, by, now) };
}
