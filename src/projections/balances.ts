import type { WalletCredited, WalletDebited, WalletRef } from '../domain/events.ts';
import { Decimal, DEFAULT_ASSET_SCALE, formatAmount } from '../domain/money.ts';
import type { CollectionDefinition } from '../ports/read-store.ts';
import type { ProjectedEvent, Projection } from './projection.ts';

/**
 * The balance of every wallet the ledger has moved money in or out of: distributors, merchants, individuals
 * (by phone) and the platform's fee and issuance accounts. Fed by the WalletCredited and WalletDebited events
 * written atomically with an operation's completion; the issuance account goes negative by what was issued.
 */
export type BalanceDoc = {
  /** `<kind>:<id>`, see balanceDocId. */
  id: string;
  wallet: WalletRef;
  /** Decimal string at the asset scale. */
  balance: string;
  /** The stored event's time: balance events carry no time of their own. */
  updatedAt: string;
  position: number;
};

/** The contract's Balance object. */
export interface Balance {
  balance: string;
}

export const BALANCES_COLLECTION: CollectionDefinition = { name: 'balances' };

const EVENT_TYPES = ['WalletCredited', 'WalletDebited'] as const;
type BalanceEvent = WalletCredited | WalletDebited;

/** The id of a wallet's balance document, e.g. `distributor:<uuid>`, `individual:+234...`, `platform:fees`. */
export const balanceDocId = (wallet: WalletRef): string => `${wallet.kind}:${wallet.id}`;

const isBalanceEvent = (event: ProjectedEvent): event is ProjectedEvent & BalanceEvent =>
  (EVENT_TYPES as readonly string[]).includes(event.type);

export function balancesProjection(options: { assetScale?: number } = {}): Projection<BalanceDoc> {
  const scale = options.assetScale ?? DEFAULT_ASSET_SCALE;
  return {
    name: 'balances',
    collection: BALANCES_COLLECTION,
    eventTypes: EVENT_TYPES,
    documentIds: (event) => (isBalanceEvent(event) ? [balanceDocId(event.data.wallet)] : []),
    evolve(doc, event, id) {
      if (!isBalanceEvent(event)) return doc;
      const current = new Decimal(doc?.balance ?? 0);
      const amount = new Decimal(event.data.amount);
      const next = event.type === 'WalletCredited' ? current.plus(amount) : current.minus(amount);
      const { kind, id: walletID } = event.data.wallet;
      return {
        id,
        wallet: { kind, id: walletID } as WalletRef,
        // never "-0.00"
        balance: next.isZero() ? formatAmount(0, scale) : next.toFixed(scale),
        updatedAt: event.createdAt,
        position: event.position,
      };
    },
  };
}

/** The contract's object; a wallet nothing has moved in yet has a zero balance at the asset scale. */
export function toApi(doc: BalanceDoc | null, assetScale = DEFAULT_ASSET_SCALE): Balance {
  return { balance: doc ? doc.balance : formatAmount(0, assetScale) };
}
