import type { PartyRef } from '../domain/parties.ts';
import * as distributorOps from '../projections/distributor-operations.ts';
import * as merchantOps from '../projections/merchant-operations.ts';
import type { ConsoleServices } from './context.ts';

/**
 * The read model of the viewer's party's operations: the operations pages list it, the waiting counts count
 * its pending ones. Its own module so that the counts (waiting.ts, under every page) do not import the pages.
 */
export type PartyOperationDoc = distributorOps.DistributorOperationDoc | merchantOps.MerchantOperationDoc;

export function listQuery(party: PartyRef) {
  return party.type === 'distributor'
    ? { collection: distributorOps.DISTRIBUTOR_OPERATIONS_COLLECTION.name, where: distributorOps.distributorOperationsWhere(party.id), sort: distributorOps.DISTRIBUTOR_OPERATIONS_SORT }
    : { collection: merchantOps.MERCHANT_OPERATIONS_COLLECTION.name, where: merchantOps.merchantOperationsWhere(party.id), sort: merchantOps.MERCHANT_OPERATIONS_SORT };
}

export async function countPending(services: ConsoleServices, party: PartyRef): Promise<number> {
  const { collection, where } = listQuery(party);
  return services.deps.readStore.count(collection, { where: { ...where, status: 'pending' } });
}
