import type { Stores } from '../../src/adapters/open-stores.ts';
import { loadState } from '../../src/commands/pipeline.ts';
import { walletState } from '../../src/commands/wallet-state.ts';
import type { WalletRef } from '../../src/domain/events.ts';
import { Decimal } from '../../src/domain/money.ts';
import { streams } from '../../src/domain/streams.ts';
import type { Ledger, LedgerTransaction } from '../../src/ports/ledger.ts';
import { BALANCES_COLLECTION, type BalanceDoc } from '../../src/projections/balances.ts';
import { allProjections } from '../../src/projections/index.ts';
import { projectionStatus } from '../../src/projections/rebuild.ts';
import { balancePath, request } from './http.ts';
import { ledgerBalances } from './ledger-checks.ts';
import { liveKeys, type World } from './setup.ts';
import type { SoakStats } from './stats.ts';
import { sleep, waitUntil } from './util.ts';

const ASSET_SCALE = 2;
const CATCH_UP_MS = 60_000;

const walletOfAddress = (address: string): WalletRef => {
  const at = address.indexOf(':');
  return { kind: address.slice(0, at), id: address.slice(at + 1) } as WalletRef;
};

/** Waits until every read model has applied every event it follows. */
export async function projectionsCaughtUp(stores: Stores): Promise<boolean> {
  const projections = allProjections(ASSET_SCALE);
  await stores.readStore.defineCollections(projections.map((p) => p.collection));
  return waitUntil(
    async () => (await projectionStatus(stores, projections)).every((s) => s.lagEvents === 0),
    CATCH_UP_MS,
    250,
  );
}

/** GET balance through the API, again while it answers 5xx or not at all (injected read-store faults, a restart). */
async function httpBalance(baseUrl: string, party: World['distributors'][number]): Promise<string | null> {
  const key = liveKeys(party)[0];
  if (!key) return null;
  for (let attempt = 0; attempt < 20; attempt++) {
    const answer = await request(baseUrl, 'GET', balancePath(party), key.apiKey);
    if (answer.status === 200) return String(answer.body.balance);
    if (answer.status !== null && answer.status < 500) return `HTTP ${answer.status}`;
    await sleep(250);
  }
  return 'no answer';
}

/**
 * Balances, once the executors have drained and the projections caught up: the ledger's own consistency,
 * then every wallet's ledger balance against the balances read model and the write side (its wallet stream
 * folded), and every distributor's and merchant's GET balance against the ledger.
 */
export async function checkBalances(
  baseUrl: string,
  world: World,
  stores: Stores,
  ledger: Ledger,
  transactions: LedgerTransaction[],
  stats: SoakStats,
): Promise<number> {
  if (!(await projectionsCaughtUp(stores)))
    stats.problem(`the projections did not catch up with the event store within ${CATCH_UP_MS / 1000} s of the drain`);
  const { balances, problems } = await ledgerBalances(ledger, transactions);
  problems.forEach((problem) => stats.problem(problem));

  const docs = await stores.readStore.find<BalanceDoc>(BALANCES_COLLECTION.name, {});
  const projected = new Map(docs.map((doc) => [doc.id, new Decimal(doc.balance)]));
  for (const wallet of new Set([...balances.keys(), ...projected.keys()])) {
    const onLedger = balances.get(wallet) ?? new Decimal(0);
    const inModel = projected.get(wallet) ?? new Decimal(0);
    if (!onLedger.eq(inModel))
      stats.problem(
        `wallet ${wallet}: ledger ${onLedger.toFixed(ASSET_SCALE)}, balances read model ${inModel.toFixed(ASSET_SCALE)}`,
      );
    const { state } = await loadState(
      { store: stores.eventStore },
      streams.wallet(walletOfAddress(wallet)),
      walletState,
    );
    if (!new Decimal(state.balance).eq(onLedger))
      stats.problem(`wallet ${wallet}: ledger ${onLedger.toFixed(ASSET_SCALE)}, write side ${state.balance}`);
  }

  let compared = 0;
  for (const party of [...world.distributors, ...world.merchants]) {
    const expected = (balances.get(`${party.kind}:${party.id}`) ?? new Decimal(0)).toFixed(ASSET_SCALE);
    const answered = await httpBalance(baseUrl, party);
    compared += 1;
    if (answered === null)
      stats.notes.push(`${party.kind} ${party.shortCode} has no live key left to read its balance`);
    else if (!/^\d/.test(answered) || !new Decimal(answered).eq(expected))
      stats.problem(`GET balance of ${party.kind} ${party.shortCode}: ${answered}, the ledger has ${expected}`);
  }
  return compared;
}
