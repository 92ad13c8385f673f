import { availableBalance, walletState } from '../commands/wallet-state.ts';
import type { WalletEvent, WalletRef } from '../domain/events.ts';
import { Decimal, DEFAULT_ASSET_SCALE, formatAmount } from '../domain/money.ts';
import type { CollectionDefinition } from '../ports/read-store.ts';
import type { ProjectedEvent, Projection } from './projection.ts';

/**
 * The balance of every wallet the ledger has moved money in or out of: distributors, merchants, individuals
 * (by phone) and the platform's fee and issuance accounts. Fed by the WalletCredited and WalletDebited events
 * written atomically with an operation's completion; the issuance account goes negative by what was issued.
 * Also by FundsHeld and HoldReleased, so that it knows what pending and approved operations hold: the fold is
 * the write side's own (walletState.evolve in src/commands/wallet-state.ts), so the `available` a client reads
 * is the one a create is checked against, once the projection has caught up.
 */
export type BalanceDoc = {
  /** `<kind>:<id>`, see balanceDocId. */
  id: string;
  wallet: WalletRef;
  /** Decimal string at the asset scale: credits minus debits executed on the ledger. */
  balance: string;
  /**
   * Decimal string at the asset scale: what pending and approved operations hold (amount + fee). Absent
   * from a document built before holds were projected (`projections rebuild --only balances` adds it).
   */
  held?: string;
  /** The stored event's time: balance events carry no time of their own. */
  updatedAt: string;
  position: number;
};

/** The contract's Balance object, with two documented extension fields (README, OpenAPI). */
export interface Balance {
  /** The contract's field: the executed balance. */
  balance: string;
  /** Extension: what a create can spend now, `balance - held`. */
  available: string;
  /** Extension: what pending and approved operations hold. */
  held: string;
}

export const BALANCES_PROJECTION = 'balances';
export const BALANCES_COLLECTION: CollectionDefinition = { name: 'balances' };

const EVENT_TYPES = [
  'WalletCredited',
  'WalletDebited',
  'FundsHeld',
  'HoldReleased',
] as const satisfies readonly WalletEvent['type'][];
type BalanceEvent = WalletEvent;

/** The id of a wallet's balance document, e.g. `distributor:<uuid>`, `individual:+234...`, `platform:fees`. */
export const balanceDocId = (wallet: WalletRef): string => `${wallet.kind}:${wallet.id}`;

const isBalanceEvent = (event: ProjectedEvent): event is ProjectedEvent & BalanceEvent =>
  (EVENT_TYPES as readonly string[]).includes(event.type);

export function balancesProjection(options: { assetScale?: number } = {}): Projection<BalanceDoc> {
  const scale = options.assetScale ?? DEFAULT_ASSET_SCALE;
  return {
    name: BALANCES_PROJECTION,
    collection: BALANCES_COLLECTION,
    eventTypes: EVENT_TYPES,
    documentIds: (event) => (isBalanceEvent(event) ? [balanceDocId(event.data.wallet)] : []),
    evolve(doc, event, id) {
      if (!isBalanceEvent(event)) return doc;
      const before = { balance: doc?.balance ?? '0', held: doc?.held ?? '0' };
      const next = walletState.evolve(before, { type: event.type, data: event.data } as WalletEvent);
      const { kind, id: walletID } = event.data.wallet;
      return {
        id,
        wallet: { kind, id: walletID } as WalletRef,
        balance: atScale(next.balance, scale),
        held: atScale(next.held, scale),
        updatedAt: event.createdAt,
        position: event.position,
      };
    },
  };
}

/** A decimal string at the scale, never "-0.00". */
const atScale = (amount: string | Decimal, scale: number) => {
  const fixed = formatAmount(amount, scale);
  return NEGATIVE_ZERO.test(fixed) ? formatAmount(0, scale) : fixed;
};
const NEGATIVE_ZERO = /^-0(?:\.0*)?$/;

/**
 * The contract's object plus its extension fields; a wallet nothing has moved in yet has zero everywhere,
 * at the asset scale. `available` is computed as the write side computes it (availableBalance).
 */
export function toApi(doc: BalanceDoc | null, assetScale = DEFAULT_ASSET_SCALE): Balance {
  const state = { balance: doc?.balance ?? '0', held: doc?.held ?? '0' };
  return {
    balance: atScale(state.balance, assetScale),
    available: atScale(availableBalance(state), assetScale),
    held: atScale(state.held, assetScale),
  };
}
