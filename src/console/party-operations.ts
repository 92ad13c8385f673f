import type { PartyRef } from '../domain/parties.ts';
import { countPendingOfParty, pendingOperationsOfParty } from '../projections/console-operation-queries.ts';
import {
  CONSOLE_OPERATIONS_PROJECTION,
  partyKey,
  type ConsoleOperationDoc,
} from '../projections/console-operations.ts';
import { untilReadable, type ConsoleServices } from './context.ts';

/**
 * The viewer's party's operations waiting for its checker, from the console_operations read model: the
 * Pending approval page lists them, its tab and the waiting counts count them. Its own module so that the
 * counts (waiting.ts, under every page) do not import the pages.
 */
export async function pendingOperations(
  services: ConsoleServices,
  party: PartyRef,
  limit: number,
): Promise<ConsoleOperationDoc[]> {
  await untilReadable(services, party, CONSOLE_OPERATIONS_PROJECTION);
  return pendingOperationsOfParty(
    { readStore: services.deps.readStore, eventStore: services.deps.store },
    partyKey(party),
    limit,
  );
}

export async function countPending(services: ConsoleServices, party: PartyRef): Promise<number> {
  await untilReadable(services, party, CONSOLE_OPERATIONS_PROJECTION);
  return countPendingOfParty(services.deps.readStore, partyKey(party));
}
