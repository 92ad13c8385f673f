import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { DEV_OPERATOR_ADDRESS, DEV_OPERATOR_KEY, startDevChain, type DevChain } from '../../../contracts/dev-chain.ts';
import {
  deployWalletLedger,
  findWalletLedger,
  openEvmLedger,
  readOperatorKey,
  type EvmLedger,
} from '../../../src/adapters/evm/evm-ledger.ts';
import { LedgerDuplicateError, LedgerRejectedError, LedgerUnavailableError } from '../../../src/ports/ledger.ts';

// A real EVM (Hardhat's EDR, in process) behind a real JSON-RPC endpoint: nothing here is mocked.
let chain: DevChain;
let contract: `0x${string}`;
let ledger: EvmLedger;
const stranger = generatePrivateKey();

const options = () => ({
  rpcUrl: chain.url,
  chainId: chain.chainId,
  operatorKey: DEV_OPERATOR_KEY as `0x${string}`,
  contract,
  scale: 2,
  pollingIntervalMs: 20,
});
let nextID = 0;
const opID = () => `op_test_${++nextID}`;

beforeAll(async () => {
  chain = await startDevChain({ fundedAddresses: [DEV_OPERATOR_ADDRESS, privateKeyToAccount(stranger).address] });
  ({ address: contract } = await deployWalletLedger(options()));
  ledger = openEvmLedger(options());
});
afterAll(async () => {
  await ledger?.close();
  await chain?.close();
});

describe('the EVM ledger on a WalletLedger contract', () => {
  it('given an issue, when it is submitted, then the chain has a transaction with that hash and the wallet its balance', async () => {
    const operationID = opID();
    const tx = await ledger.submit({
      operationID,
      legs: [{ from: 'platform:issuance', to: 'distributor:d1', amount: '100.50' }],
    });
    expect(tx.blockchainID).toMatch(/^0x[0-9a-f]{64}$/);
    const onChain = (await chain.request('eth_getTransactionByHash', [tx.blockchainID])) as {
      hash: string;
      from: string;
    } | null;
    expect(onChain?.from.toLowerCase()).toBe(DEV_OPERATOR_ADDRESS.toLowerCase());
    expect(tx.legs).toEqual([{ from: 'platform:issuance', to: 'distributor:d1', amount: '100.50' }]);
    expect(tx.operationID).toBe(operationID);
    expect(await ledger.balance('distributor:d1')).toBe('100.50');
    expect(await ledger.findByOperationID(operationID)).toEqual(tx);
  });

  it('given a funded payer, when a transfer with a fee is submitted, then both legs move in one transaction with one sequence number', async () => {
    await ledger.submit({
      operationID: opID(),
      legs: [{ from: 'platform:issuance', to: 'merchant:m1', amount: '50.00' }],
    });
    const tx = await ledger.submit({
      operationID: opID(),
      legs: [
        { from: 'merchant:m1', to: 'individual:+2348030000001', amount: '20.00' },
        { from: 'merchant:m1', to: 'platform:fees', amount: '0.35' },
      ],
    });
    expect(tx.legs).toHaveLength(2);
    expect(await ledger.balance('merchant:m1')).toBe('29.65');
    expect(await ledger.balance('individual:+2348030000001')).toBe('20.00');
    const previous = await ledger.findByOperationID(`op_test_${nextID - 1}`);
    expect(tx.sequenceNumber).toBe(previous!.sequenceNumber + 1);
  });

  it('given too little money, when a transfer is submitted, then it is rejected for good with the contract’s reason', async () => {
    const operationID = opID();
    const refused = ledger.submit({
      operationID,
      legs: [{ from: 'distributor:empty', to: 'merchant:m1', amount: '1.00' }],
    });
    await expect(refused).rejects.toBeInstanceOf(LedgerRejectedError);
    await expect(refused).rejects.toThrow('insufficient funds in distributor:empty');
    expect(await ledger.findByOperationID(operationID)).toBeNull();
  });

  it('given an executed operation, when it is submitted again, then the chain refuses and the first transaction is returned as the duplicate', async () => {
    const operationID = opID();
    const first = await ledger.submit({
      operationID,
      legs: [{ from: 'platform:issuance', to: 'distributor:d2', amount: '5.00' }],
    });
    const again = await ledger
      .submit({ operationID, legs: [{ from: 'platform:issuance', to: 'distributor:d2', amount: '5.00' }] })
      .catch((e: unknown) => e);
    expect(again).toBeInstanceOf(LedgerDuplicateError);
    expect((again as LedgerDuplicateError).existing).toEqual(first);
    expect(await ledger.balance('distributor:d2')).toBe('5.00');
  });

  it('given 20 submits at once from two ledgers sharing the operator account, then every one lands once with its own sequence number', async () => {
    const other = openEvmLedger(options());
    const ids = Array.from({ length: 20 }, opID);
    const results = await Promise.all(
      ids.map((operationID, i) =>
        (i % 2 ? other : ledger).submit({
          operationID,
          legs: [{ from: 'platform:issuance', to: 'distributor:many', amount: '1.00' }],
        }),
      ),
    );
    expect(new Set(results.map((tx) => tx.sequenceNumber)).size).toBe(20);
    expect(new Set(results.map((tx) => tx.blockchainID)).size).toBe(20);
    expect(await ledger.balance('distributor:many')).toBe('20.00');
  });

  it('given any account but the operator, when it writes to the contract, then the contract refuses', async () => {
    const intruder = openEvmLedger({ ...options(), operatorKey: stranger });
    await expect(
      intruder.submit({
        operationID: opID(),
        legs: [{ from: 'platform:issuance', to: 'distributor:x', amount: '1.00' }],
      }),
    ).rejects.toThrow('only the operator');
  });

  it('keeps supply = issued - redeemed, with the issuing account below zero by the supply', async () => {
    await ledger.submit({
      operationID: opID(),
      legs: [{ from: 'platform:issuance', to: 'distributor:r', amount: '10.00' }],
    });
    const before = await ledger.status();
    await ledger.submit({
      operationID: opID(),
      legs: [{ from: 'distributor:r', to: 'platform:issuance', amount: '4.00' }],
    });
    const after = await ledger.status();
    expect(Number(after.supply)).toBeCloseTo(Number(before.supply) - 4, 2);
    expect(await ledger.balance('platform:issuance')).toBe(`-${after.supply}`);
  });

  it('pages the transactions in sequence order', async () => {
    const all = await ledger.transactions({ fromSequence: 1, maxCount: 1000 });
    expect(all.map((tx) => tx.sequenceNumber)).toEqual(all.map((_, i) => i + 1));
    const page = await ledger.transactions({ fromSequence: 3, maxCount: 2 });
    expect(page).toEqual(all.slice(2, 4));
  });

  it('given legs the contract cannot express, then they are rejected before anything is sent', async () => {
    await expect(
      ledger.submit({
        operationID: opID(),
        legs: [
          { from: 'a:1', to: 'b:1', amount: '1.00' },
          { from: 'c:1', to: 'platform:fees', amount: '1.00' },
        ],
      }),
    ).rejects.toBeInstanceOf(LedgerRejectedError);
    await expect(
      ledger.submit({ operationID: opID(), legs: [{ from: 'a:1', to: 'b:1', amount: '1.005' }] }),
    ).rejects.toBeInstanceOf(LedgerRejectedError);
  });

  it('given a node on another chain id, then it refuses to sign, as worth retrying once configured right', async () => {
    const wrong = openEvmLedger({ ...options(), chainId: 1 });
    await expect(
      wrong.submit({ operationID: opID(), legs: [{ from: 'platform:issuance', to: 'distributor:x', amount: '1.00' }] }),
    ).rejects.toThrow(/chain 31337, not EVM_CHAIN_ID 1/);
  });

  it('given no node at the URL, then every call is worth retrying', async () => {
    const down = openEvmLedger({ ...options(), rpcUrl: 'http://127.0.0.1:9', requestTimeoutMs: 1000 });
    await expect(
      down.submit({ operationID: opID(), legs: [{ from: 'platform:issuance', to: 'distributor:x', amount: '1.00' }] }),
    ).rejects.toBeInstanceOf(LedgerUnavailableError);
    await expect(down.findByOperationID('op_x')).rejects.toBeInstanceOf(LedgerUnavailableError);
    await expect(down.balance('distributor:x')).rejects.toBeInstanceOf(LedgerUnavailableError);
  });
});

describe('finding a deployed WalletLedger (ledger deploy --unless-deployed)', () => {
  it('answers absent only for an address without code; another operator’s ledger is an error, never a reason to deploy again', async () => {
    expect(await findWalletLedger(options())).toBe(true);
    expect(await findWalletLedger({ ...options(), contract: '0x000000000000000000000000000000000000dEaD' })).toBe(
      false,
    );
    await expect(findWalletLedger({ ...options(), operatorKey: stranger })).rejects.toThrow(/obeys 0x/);
  });
});

describe('the operator key file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'operator-key-'));
  it('reads one key and never shows it in its errors', () => {
    const good = join(dir, 'good');
    writeFileSync(good, `${DEV_OPERATOR_KEY}\n`);
    expect(readOperatorKey(good)).toBe(DEV_OPERATOR_KEY);
    const bad = join(dir, 'bad');
    writeFileSync(bad, `${DEV_OPERATOR_KEY}x`);
    expect(() => readOperatorKey(bad)).toThrow(/must hold one private key/);
    try {
      readOperatorKey(bad);
    } catch (error) {
      expect((error as Error).message).not.toContain(DEV_OPERATOR_KEY.slice(2, 20));
    }
    expect(() => readOperatorKey(join(dir, 'missing'))).toThrow(/ENOENT/);
  });
});
