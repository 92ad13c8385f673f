import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWalletClient, encodeFunctionData, http, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { DEV_OPERATOR_ADDRESS, DEV_OPERATOR_KEY, startDevChain, type DevChain } from '../../../contracts/dev-chain.ts';
import { deployWalletLedger, evmChain, openEvmLedger, type EvmLedger } from '../../../src/adapters/evm/evm-ledger.ts';
import { walletLedgerAbi } from '../../../src/adapters/evm/wallet-ledger-artifact.ts';
import {
  LedgerDuplicateError,
  LedgerUnavailableError,
  LedgerVoidedError,
  type LedgerTransaction,
} from '../../../src/ports/ledger.ts';
import {
  walletLedgerAbi as v1Abi,
  walletLedgerBytecode as v1Bytecode,
} from '../../support/wallet-ledger-v1-artifact.ts';

/**
 * The WalletLedger contract as the arbiter of an operation's fate, on a real EVM (Hardhat's EDR, in process):
 * of a movement and a void for one operation id, the one mined first wins, whatever was signed when.
 */
let chain: DevChain;
let contract: Hex;
let ledger: EvmLedger;
let other: EvmLedger;
let old: EvmLedger;
const key = DEV_OPERATOR_KEY as Hex;
const options = () => ({
  rpcUrl: chain.url,
  chainId: chain.chainId,
  operatorKey: key,
  contract,
  scale: 2,
  pollingIntervalMs: 20,
});
let nextID = 0;
const opID = () => `op_void_${++nextID}`;
const issue = (on: EvmLedger, operationID: string, to = 'distributor:v', amount = '1.00') =>
  on.submit({ operationID, legs: [{ from: 'platform:issuance', to, amount }] });

/** Waits until the node holds `count` more transactions of the operator than it has mined, or `done()`. */
async function pendingTransactions(count: number, done: () => boolean = () => false): Promise<void> {
  for (let i = 0; i < 500 && !done(); i++) {
    const [mined, pending] = await Promise.all(
      ['latest', 'pending'].map(
        (tag) => chain.request('eth_getTransactionCount', [DEV_OPERATOR_ADDRESS, tag]) as Promise<string>,
      ),
    );
    if (Number(pending) - Number(mined!) >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  if (!done()) throw new Error(`the node never held ${count} pending transactions`);
}

/** Runs `act` with blocks mined only on request, then mines whatever is left and turns automining back on. */
async function manualMining<T>(act: () => Promise<T>): Promise<T> {
  await chain.request('evm_setAutomine', [false]);
  try {
    return await act();
  } finally {
    await chain.request('evm_mine', []);
    await chain.request('evm_setAutomine', [true]);
  }
}

beforeAll(async () => {
  chain = await startDevChain();
  ({ address: contract } = await deployWalletLedger(options()));
  ledger = openEvmLedger(options());
  other = openEvmLedger(options());
  // An existing deployment: the contract as it was before void().
  const account = privateKeyToAccount(key);
  const wallet = createWalletClient({ chain: evmChain(chain.chainId, chain.url), transport: http(chain.url), account });
  const hash = await wallet.deployContract({ abi: v1Abi, bytecode: v1Bytecode, args: [account.address] });
  const receipt = (await chain.request('eth_getTransactionReceipt', [hash])) as { contractAddress: Hex };
  old = openEvmLedger({ ...options(), contract: receipt.contractAddress });
});
afterAll(async () => {
  await chain?.close();
});

describe('the EVM ledger: void', () => {
  it('when an operation is voided, then a movement for it is refused with LedgerVoidedError and moves nothing', async () => {
    const operationID = opID();
    const voided = await ledger.void(operationID);
    expect(voided).toMatchObject({ kind: 'voided', operationID, voidedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });

    const refused = await issue(ledger, operationID, 'distributor:v1').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LedgerVoidedError);
    expect(refused).toMatchObject({ operationID, voidedAt: (voided as { voidedAt: string }).voidedAt });
    expect(await ledger.fateOf(operationID)).toEqual(voided);
    expect(await ledger.findByOperationID(operationID)).toBeNull();
    expect(await ledger.balance('distributor:v1')).toBe('0.00');
    // Idempotent: a second void answers the first.
    expect(await other.void(operationID)).toEqual(voided);
  });

  it('when a movement was mined, then a void for it is refused with the transaction', async () => {
    const operationID = opID();
    const tx = await issue(ledger, operationID);
    expect(await ledger.void(operationID)).toEqual({ kind: 'executed', tx });
    expect(await ledger.fateOf(operationID)).toEqual({ kind: 'executed', tx });
    await expect(issue(ledger, operationID)).rejects.toBeInstanceOf(LedgerDuplicateError);
  });

  it('given an operation never sent, then its fate is none', async () => {
    expect(await ledger.fateOf('op_never_sent')).toEqual({ kind: 'none' });
  });

  it('given two ledgers racing a movement and a void on 10 operations, then exactly one of each pair wins and the fate agrees', async () => {
    const ids = Array.from({ length: 10 }, opID);
    const results = await Promise.all(
      ids.map(async (operationID, i) => {
        const [mover, voider] = i % 2 ? [ledger, other] : [other, ledger];
        const moved = issue(mover, operationID, 'distributor:race').then(
          (tx) => ({ ok: true as const, tx }),
          (error: unknown) => ({ ok: false as const, error }),
        );
        const voided = voider.void(operationID);
        return { operationID, moved: await moved, voided: await voided };
      }),
    );
    let executed = 0;
    for (const { operationID, moved, voided } of results) {
      if (moved.ok) {
        executed += 1;
        expect(voided).toEqual({ kind: 'executed', tx: moved.tx });
      } else {
        expect(moved.error).toBeInstanceOf(LedgerVoidedError);
        expect(voided).toMatchObject({ kind: 'voided', operationID });
      }
      expect(await ledger.fateOf(operationID)).toEqual(moved.ok ? { kind: 'executed', tx: moved.tx } : voided);
    }
    expect(await ledger.balance('distributor:race')).toBe(`${executed}.00`);
  });

  it('given a movement still pending when the void is asked, then the void never wins: it answers executed once the movement is mined (or unavailable until then)', async () => {
    const operationID = opID();
    const { tx, first } = await manualMining(async () => {
      const moved = issue(ledger, operationID, 'distributor:block');
      await pendingTransactions(1);
      let settled = false;
      // A node that estimates on the pending block refuses the void at once (unavailable: the movement is not
      // mined yet); one that estimates on the latest sends it, to revert behind the movement in the same block.
      const voided = other
        .void(operationID)
        .catch((e: unknown) => e)
        .finally(() => (settled = true));
      await pendingTransactions(2, () => settled);
      await chain.request('evm_mine', []);
      return { tx: await moved, first: await voided };
    });
    if (first instanceof LedgerUnavailableError)
      expect(await other.void(operationID)).toEqual({ kind: 'executed', tx });
    else expect(first).toEqual({ kind: 'executed', tx });
    expect(await ledger.fateOf(operationID)).toEqual({ kind: 'executed', tx });
  });

  it('given a movement signed before the void but mined after it (a paused executor’s), then it reverts and money does not move', async () => {
    const operationID = opID();
    const account = privateKeyToAccount(key);
    const { late, voided } = await manualMining(async () => {
      // The paused executor's transaction, signed for the nonce after the next: it waits in the pool.
      const nonce = Number(await chain.request('eth_getTransactionCount', [DEV_OPERATOR_ADDRESS, 'pending']));
      const data = encodeFunctionData({
        abi: walletLedgerAbi,
        functionName: 'issue',
        args: [operationID, 'distributor:late', 100n],
      });
      const signed = await account.signTransaction({
        type: 'eip1559',
        chainId: chain.chainId,
        to: contract,
        data,
        gas: 300_000n,
        nonce: nonce + 1,
        maxFeePerGas: 10_000_000_000n,
        maxPriorityFeePerGas: 1_000_000_000n,
      });
      const late = (await chain.request('eth_sendRawTransaction', [signed])) as Hex;
      // Another executor gives up and voids, with the nonce before it: the void is mined first, then the movement.
      const voiding = other.void(operationID);
      await pendingTransactions(2);
      await chain.request('evm_mine', []);
      return { late, voided: await voiding };
    });
    expect(voided).toMatchObject({ kind: 'voided', operationID });
    const receipt = (await chain.request('eth_getTransactionReceipt', [late])) as { status: string } | null;
    expect(receipt?.status).toBe('0x0');
    expect(await ledger.balance('distributor:late')).toBe('0.00');
    expect(await ledger.fateOf(operationID)).toEqual(voided);
    // The executor that signed it, asking again, is told the operation was voided.
    await expect(issue(ledger, operationID)).rejects.toBeInstanceOf(LedgerVoidedError);
  });
});

describe('a WalletLedger deployed before void() (an existing deployment)', () => {
  it('when asked to void or for a fate, then it refuses as unavailable, naming the move to a new contract; movements and reads work as before', async () => {
    const operationID = opID();
    const refusal = await old.void(operationID).catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(LedgerUnavailableError);
    expect((refusal as Error).message).toMatch(/predates void\(\).*docs\/operations\.md/);
    await expect(old.fateOf(operationID)).rejects.toBeInstanceOf(LedgerUnavailableError);
    const tx: LedgerTransaction = await issue(old, operationID);
    expect(await old.findByOperationID(operationID)).toEqual(tx);
    expect(await old.transactions()).toEqual([tx]);
  });
});

describe('moving to a new WalletLedger: balances carried over', () => {
  it('given a fresh contract, when balances are carried over, then they count in balances and supply; once an operation executed, carrying over reverts', async () => {
    const account = privateKeyToAccount(key);
    const wallet = createWalletClient({
      chain: evmChain(chain.chainId, chain.url),
      transport: http(chain.url),
      account,
    });
    const { address } = await deployWalletLedger(options());
    const fresh = openEvmLedger({ ...options(), contract: address });
    const carry = (to: string, amount: bigint) =>
      wallet.writeContract({ address, abi: walletLedgerAbi, functionName: 'carryOver', args: [to, amount] });

    await carry('distributor:carried', 12_345n);
    expect(await fresh.balance('distributor:carried')).toBe('123.45');
    expect((await fresh.status()).supply).toBe('123.45');
    expect((await fresh.status()).sequence).toBe(0);

    await fresh.submit({
      operationID: opID(),
      legs: [{ from: 'distributor:carried', to: 'merchant:carried', amount: '100.00' }],
    });
    await expect(carry('distributor:late', 1n)).rejects.toThrow('operations executed already');
    expect(await fresh.balance('distributor:carried')).toBe('23.45');
  });
});
