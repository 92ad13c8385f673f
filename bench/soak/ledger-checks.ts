/**
 * The ledger's own consistency: every transaction in sequence order, the hash chain, the stored balances
 * against a replay of the transactions, and the supply.
 */
import { Decimal } from '../../src/domain/money.ts';
import { ISSUANCE_ADDRESS, type Ledger, type LedgerLeg, type LedgerTransaction } from '../../src/ports/ledger.ts';

// The transaction list and the chain check are the tests' own (bench/e2e.bench.ts reuses them the same way).
export { allLedgerTransactions, chainProblems } from '../../test/support/invariants.ts';

/** Net effect of legs per wallet address. */
export function netOf(legs: LedgerLeg[], into = new Map<string, Decimal>()): Map<string, Decimal> {
  for (const leg of legs) {
    into.set(leg.from, (into.get(leg.from) ?? new Decimal(0)).minus(leg.amount));
    into.set(leg.to, (into.get(leg.to) ?? new Decimal(0)).plus(leg.amount));
  }
  return into;
}

/**
 * The ledger's balance of every wallet it moved money for (as it stores them), and what does not hold: a
 * stored balance that is not the sum of its transactions, a negative wallet, a supply that is not what was
 * issued minus what was redeemed.
 */
export async function ledgerBalances(
  ledger: Ledger,
  transactions: LedgerTransaction[],
): Promise<{ balances: Map<string, Decimal>; problems: string[] }> {
  const problems: string[] = [];
  const replayed = netOf(transactions.flatMap((tx) => tx.legs));
  let issued = new Decimal(0);
  let redeemed = new Decimal(0);
  for (const leg of transactions.flatMap((tx) => tx.legs)) {
    if (leg.from === ISSUANCE_ADDRESS) issued = issued.plus(leg.amount);
    if (leg.to === ISSUANCE_ADDRESS) redeemed = redeemed.plus(leg.amount);
  }
  const balances = new Map<string, Decimal>();
  for (const [wallet, sum] of replayed) {
    const stored = new Decimal(await ledger.balance(wallet));
    balances.set(wallet, stored);
    if (!stored.eq(sum))
      problems.push(`ledger balance of ${wallet} is ${stored.toFixed()}, its transactions sum to ${sum.toFixed()}`);
    if (wallet !== ISSUANCE_ADDRESS && stored.isNegative())
      problems.push(`ledger balance of ${wallet} is negative: ${stored.toFixed()}`);
  }
  const supply = [...balances]
    .filter(([wallet]) => wallet !== ISSUANCE_ADDRESS)
    .reduce((sum, [, b]) => sum.plus(b), new Decimal(0));
  const issuance = balances.get(ISSUANCE_ADDRESS) ?? new Decimal(0);
  if (!supply.eq(issuance.negated()))
    problems.push(`total supply ${supply.toFixed()} is not minus the issuance balance ${issuance.toFixed()}`);
  if (!supply.eq(issued.minus(redeemed)))
    problems.push(
      `total supply ${supply.toFixed()} is not issued ${issued.toFixed()} minus redeemed ${redeemed.toFixed()}`,
    );
  return { balances, problems };
}
