import type { WalletRef } from '../domain/events.ts';
import type { ReadStore } from '../ports/read-store.ts';
import { BALANCES_COLLECTION, balanceDocId, toApi, type Balance, type BalanceDoc } from './balances.ts';
import { plausibleID } from './list-queries.ts';

const COLLECTION = BALANCES_COLLECTION.name;

/** A wallet's balance as the API shows it (zero everywhere for a wallet nothing has moved in yet). */
export async function getBalance(
  readStore: ReadStore,
  wallet: { kind: 'distributor' | 'merchant'; id: string },
  assetScale: number,
): Promise<Balance> {
  const doc = plausibleID(wallet.id) ? await readStore.get<BalanceDoc>(COLLECTION, balanceDocId(wallet)) : null;
  return toApi(doc, assetScale);
}

/**
 * Every balance document of one kind of wallet, by id, a page at a time (the balances view's seed). Pages by id,
 * not by offset: a document made meanwhile cannot shift the pages.
 */
export async function* balancesOfKind(
  readStore: ReadStore,
  kind: WalletRef['kind'],
  pageSize: number,
): AsyncGenerator<BalanceDoc> {
  for (let after: string | undefined; ;) {
    const page = await readStore.find<BalanceDoc>(COLLECTION, {
      where: { 'wallet.kind': kind },
      ...(after === undefined ? {} : { range: { id: { gt: after } } }),
      sort: [['id', 'asc']],
      limit: pageSize,
    });
    yield* page;
    if (page.length < pageSize) return;
    after = page.at(-1)!.id;
  }
}
