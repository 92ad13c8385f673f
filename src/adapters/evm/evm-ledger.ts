import { readFileSync } from 'node:fs';
import {
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createWalletClient,
  defineChain,
  encodeFunctionData,
  http,
  keccak256,
  parseEventLogs,
  toBytes,
  type Address,
  type Hex,
  type Log,
  type PublicClient,
  type WalletClient,
  type Chain,
  type Transport,
} from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { Decimal } from '../../domain/money.ts';
import {
  ISSUANCE_ADDRESS,
  LedgerDuplicateError,
  LedgerRejectedError,
  LedgerUnavailableError,
  LedgerVoidedError,
  type Ledger,
  type LedgerFate,
  type LedgerLeg,
  type LedgerTransaction,
  type LedgerVoidOutcome,
} from '../../ports/ledger.ts';
import { OperatorNonces } from './operator-nonces.ts';
import { walletLedgerAbi, walletLedgerBytecode } from './wallet-ledger-artifact.ts';

/**
 * The EVM ledger: wallet-ops settles on a WalletLedger contract (contracts/WalletLedger.sol) through viem.
 *
 * - An operation is one contract call from the operator account: `issue` when the issuing account pays,
 *   `redeem` when it is paid, else `transfer` with the fee leg. The receipt's transaction hash is the
 *   blockchainID; the contract's sequence number the sequenceNumber; amounts go on chain in the asset's
 *   smallest unit (ASSET_SCALE).
 * - Before sending, the call is estimated: a revert there (overdraft, an operation already executed) is
 *   answered without spending gas. A transaction mined reverted is looked up again: the operation executed
 *   by someone else is a duplicate, a revert that still holds is a rejection, else it is worth retrying.
 * - A submit waits for `confirmations` blocks. A timeout or an unreachable node is LedgerUnavailableError:
 *   the executor retries, and asks `findByOperationID` (the contract's own record) before sending again, so a
 *   transaction that did land is never sent twice; one sent twice anyway reverts on the contract.
 * - `void` is the contract's `void(operationId)`: mined, no movement for the id can execute afterwards (a
 *   movement signed earlier and mined later reverts, and is answered LedgerVoidedError); a movement mined
 *   first makes the void revert, answered with the transaction. The block order decides, not the executors.
 *   A contract deployed before void() existed answers void and fateOf as unavailable, naming the move to a
 *   new contract (docs/operations.md): the executor then keeps such operations open rather than fail them.
 */
export interface EvmLedgerOptions {
  rpcUrl: string;
  chainId: number;
  /** The operator's private key (0x + 64 hex digits). Never logged; read from a file by `readOperatorKey`. */
  operatorKey: Hex;
  contract: Address;
  scale: number;
  /** Blocks a transaction must be deep before its operation completes. Default 1 (mined). */
  confirmations?: number;
  /** How long a submit waits for its receipt before the attempt counts as transient. Default 60 s. */
  receiptTimeoutMs?: number;
  /** How long one JSON-RPC request may take. Default 10 s. */
  requestTimeoutMs?: number;
  /** How often receipts and blocks are polled. Default 250 ms. */
  pollingIntervalMs?: number;
  /** Called after a movement is signed, before it goes to the node (fault injection: LEDGER_STOP_WHILE_HOLDING). */
  whileHolding?: () => void;
}

export interface EvmLedgerStatus {
  chainId: number;
  blockNumber: string;
  operator: Address;
  /** The operator's native balance, which pays the gas, in wei. */
  operatorBalanceWei: string;
  contract: Address;
  /** Issued - redeemed, in the asset's units. */
  supply: string;
  /** The contract's last sequence number: how many operations it executed. */
  sequence: number;
}

export interface EvmLedger extends Ledger {
  status(): Promise<EvmLedgerStatus>;
}

const OPERATOR_KEY = /^0x[0-9a-fA-F]{64}$/;

/** Reads the operator's key from a file (the file's only content, 0x + 64 hex digits). Errors never show it. */
export function readOperatorKey(file: string): Hex {
  let text: string;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch (error) {
    throw new Error(`cannot read the operator key file ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`, {
      cause: error,
    });
  }
  if (!OPERATOR_KEY.test(text))
    throw new Error(`the operator key file ${file} must hold one private key: 0x and 64 hex digits`);
  return text as Hex;
}

export function evmChain(chainId: number, rpcUrl: string): Chain {
  return defineChain({
    id: chainId,
    name: `chain ${chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
}

interface Clients {
  chain: Chain;
  account: PrivateKeyAccount;
  publicClient: PublicClient<Transport, Chain>;
  walletClient: WalletClient<Transport, Chain, PrivateKeyAccount>;
}

function clients(
  options: Pick<EvmLedgerOptions, 'rpcUrl' | 'chainId' | 'operatorKey' | 'requestTimeoutMs' | 'pollingIntervalMs'>,
): Clients {
  const chain = evmChain(options.chainId, options.rpcUrl);
  // The executor retries with its own backoff; the transport retrying too would only hide outages.
  const transport = http(options.rpcUrl, { timeout: options.requestTimeoutMs ?? 10_000, retryCount: 0 });
  const account = privateKeyToAccount(options.operatorKey);
  const pollingInterval = options.pollingIntervalMs ?? 250;
  return {
    chain,
    account,
    publicClient: createPublicClient({ chain, transport, pollingInterval }),
    walletClient: createWalletClient({ chain, transport, account, pollingInterval }),
  };
}

/** Deploys a WalletLedger whose operator is the given key's account; resolves to its address once mined. */
export async function deployWalletLedger(
  options: Pick<
    EvmLedgerOptions,
    'rpcUrl' | 'chainId' | 'operatorKey' | 'requestTimeoutMs' | 'pollingIntervalMs' | 'confirmations'
  >,
): Promise<{ address: Address; transactionHash: Hex; blockNumber: string; gasUsed: string }> {
  const { publicClient, walletClient, account } = clients(options);
  await checkChainId(publicClient, options.chainId);
  const hash = await walletClient.deployContract({
    abi: walletLedgerAbi,
    bytecode: walletLedgerBytecode,
    args: [account.address],
  });
  const receipt = await publicClient.waitForTransactionReceipt({
    hash,
    confirmations: options.confirmations ?? 1,
    timeout: 120_000,
  });
  if (receipt.status !== 'success' || !receipt.contractAddress) throw new Error(`the deployment ${hash} reverted`);
  return {
    address: receipt.contractAddress,
    transactionHash: hash,
    blockNumber: receipt.blockNumber.toString(),
    gasUsed: receipt.gasUsed.toString(),
  };
}

/**
 * Whether this key's WalletLedger is at the address: false only when the address holds no code at all. Other
 * code there, another operator's ledger, or a read that fails is an error, never "absent": `deploy
 * --unless-deployed` must not deploy a second ledger beside the one the configuration names.
 */
export async function findWalletLedger(
  options: Pick<EvmLedgerOptions, 'rpcUrl' | 'chainId' | 'operatorKey' | 'contract'>,
): Promise<boolean> {
  const { publicClient, account } = clients(options);
  await checkChainId(publicClient, options.chainId);
  const code = await publicClient.getCode({ address: options.contract });
  if (!code || code === '0x') return false;
  let operator: Address;
  try {
    operator = await publicClient.readContract({
      address: options.contract,
      abi: walletLedgerAbi,
      functionName: 'operator',
    });
  } catch (error) {
    throw new Error(
      `${options.contract} holds a contract that does not answer as a WalletLedger: ` +
        `${error instanceof BaseError ? error.shortMessage : String(error)}`,
      { cause: error },
    );
  }
  if (operator.toLowerCase() !== account.address.toLowerCase()) {
    throw new Error(
      `the WalletLedger at ${options.contract} obeys ${operator}, not this operator key's account ${account.address}`,
    );
  }
  return true;
}

async function checkChainId(publicClient: PublicClient, expected: number): Promise<void> {
  const actual = await publicClient.getChainId();
  if (actual !== expected)
    throw new Error(
      `the node at EVM_RPC_URL is chain ${actual}, not EVM_CHAIN_ID ${expected}: refusing to sign for the wrong chain`,
    );
}

type Call =
  | { functionName: 'issue'; args: readonly [string, string, bigint] }
  | { functionName: 'redeem'; args: readonly [string, string, bigint] }
  | { functionName: 'transfer'; args: readonly [string, string, string, bigint, string, bigint] }
  | { functionName: 'void'; args: readonly [string] };

/** The revert reason somewhere in a viem error's causes, or null when the error is not a revert. */
function revertReason(error: unknown): string | null {
  if (!(error instanceof BaseError)) return null;
  const reverted = error.walk((e) => e instanceof ContractFunctionRevertedError);
  if (reverted instanceof ContractFunctionRevertedError) return reverted.reason ?? reverted.shortMessage;
  const text = error.walk(
    (e) => e instanceof Error && /execution reverted/i.test((e as BaseError).details ?? e.message),
  );
  return text
    ? ((text as BaseError).details ?? (text as Error).message).replace(/^.*execution reverted:?\s*/i, '') ||
        'execution reverted'
    : null;
}

const DUPLICATE_REASON = 'operation already executed';
const VOIDED_REASON = 'operation voided';

function unavailable(what: string, error: unknown): LedgerUnavailableError {
  const detail =
    error instanceof BaseError ? error.shortMessage : error instanceof Error ? error.message : String(error);
  return new LedgerUnavailableError(`chain ${what}: ${detail.split('\n')[0]}`, { cause: error });
}

export function openEvmLedger(options: EvmLedgerOptions): EvmLedger {
  const { publicClient, account } = clients(options);
  const confirmations = options.confirmations ?? 1;
  const receiptTimeoutMs = options.receiptTimeoutMs ?? 60_000;
  const unit = new Decimal(10).pow(options.scale);
  const address = options.contract;
  const nonces = new OperatorNonces({
    pendingNonce: () => publicClient.getTransactionCount({ address: account.address, blockTag: 'pending' }),
  });
  let chainChecked: Promise<void> | null = null;
  let deployedIn: Promise<bigint> | undefined;

  /** Once per ledger (again after a failure): a node of another chain must never get our signatures. */
  function ready(): Promise<void> {
    chainChecked ??= checkChainId(publicClient, options.chainId).catch((error: unknown) => {
      chainChecked = null;
      throw error instanceof Error && /refusing to sign/.test(error.message)
        ? new LedgerUnavailableError(error.message)
        : unavailable('unreachable', error);
    });
    return chainChecked;
  }

  const toUnits = (amount: string): bigint => {
    const units = new Decimal(amount).times(unit);
    if (!units.isInteger() || units.lte(0))
      throw new LedgerRejectedError(`amount ${amount} is not a positive amount at scale ${options.scale}`);
    return BigInt(units.toFixed(0));
  };
  const fromUnits = (units: bigint): string => new Decimal(units.toString()).div(unit).toFixed(options.scale);

  function callFor(operationID: string, legs: LedgerLeg[]): Call {
    const [main, fee, ...more] = legs;
    if (!main || more.length > 0 || (fee && fee.from !== main.from))
      throw new LedgerRejectedError(
        `the ledger contract takes one movement and an optional fee from the same payer, not ${JSON.stringify(legs)}`,
      );
    if (main.from === ISSUANCE_ADDRESS && !fee)
      return { functionName: 'issue', args: [operationID, main.to, toUnits(main.amount)] };
    if (main.to === ISSUANCE_ADDRESS && !fee)
      return { functionName: 'redeem', args: [operationID, main.from, toUnits(main.amount)] };
    if (main.from === ISSUANCE_ADDRESS || main.to === ISSUANCE_ADDRESS)
      throw new LedgerRejectedError('issuing and redeeming carry no fee on the ledger contract');
    return {
      functionName: 'transfer',
      args: [operationID, main.from, main.to, toUnits(main.amount), fee?.to ?? '', fee ? toUnits(fee.amount) : 0n],
    };
  }

  async function findByOperationID(operationID: string): Promise<LedgerTransaction | null> {
    await ready();
    try {
      const [sequence, blockNumber] = await publicClient.readContract({
        address,
        abi: walletLedgerAbi,
        functionName: 'executed',
        args: [operationID],
      });
      if (sequence === 0n) return null;
      const [found] = await transactionsFrom({
        fromBlock: blockNumber,
        toBlock: blockNumber,
        operationKey: keccak256(toBytes(operationID)),
      });
      if (!found)
        throw new LedgerUnavailableError(
          `the contract says ${operationID} executed as ${sequence} in block ${blockNumber}, the node has no ` +
            'event for it',
        );
      return found;
    } catch (error) {
      if (error instanceof LedgerUnavailableError) throw error;
      throw unavailable('read failed', error);
    }
  }

  /** The block in which the operation was voided, 0n if it was not. */
  async function voidedIn(operationID: string): Promise<bigint> {
    await ready();
    try {
      return await publicClient.readContract({
        address,
        abi: walletLedgerAbi,
        functionName: 'voided',
        args: [operationID],
      });
    } catch (error) {
      // A contract without voided() reverts with no reason: it was deployed before voids existed.
      if (revertReason(error) !== null) {
        throw new LedgerUnavailableError(
          `the WalletLedger at ${address} predates void(): operations cannot be voided on it; move to a new ` +
            'contract (docs/operations.md, "Moving to a WalletLedger with void")',
          { cause: error },
        );
      }
      throw unavailable('read failed', error);
    }
  }

  async function blockTime(blockNumber: bigint): Promise<string> {
    try {
      const { timestamp } = await publicClient.getBlock({ blockNumber });
      return new Date(Number(timestamp) * 1000).toISOString();
    } catch (error) {
      throw unavailable('read failed', error);
    }
  }

  async function fateOf(operationID: string): Promise<LedgerFate> {
    const tx = await findByOperationID(operationID);
    if (tx) return { kind: 'executed', tx };
    const block = await voidedIn(operationID);
    return block === 0n ? { kind: 'none' } : { kind: 'voided', operationID, voidedAt: await blockTime(block) };
  }

  /** The fate once the contract said the operation is executed or voided; unavailable if the node lags behind it. */
  async function settledFate(operationID: string): Promise<LedgerVoidOutcome> {
    const fate = await fateOf(operationID);
    if (fate.kind === 'none')
      throw new LedgerUnavailableError(`the contract settled ${operationID}, but the node does not show it yet`);
    return fate;
  }

  /** Movement events grouped into transactions, in sequence order. */
  async function transactionsFrom(filter: {
    fromBlock: bigint;
    toBlock: bigint | 'latest';
    operationKey?: Hex;
    sequences?: bigint[];
  }): Promise<LedgerTransaction[]> {
    const logs = await publicClient.getContractEvents({
      address,
      abi: walletLedgerAbi,
      eventName: 'Movement',
      args: {
        ...(filter.operationKey ? { operationKey: filter.operationKey } : {}),
        ...(filter.sequences ? { sequence: filter.sequences } : {}),
      },
      fromBlock: filter.fromBlock,
      toBlock: filter.toBlock,
      strict: true,
    });
    return fromMovements(logs);
  }

  /** Transactions from Movement logs (one per leg), their createdAt the time of their block. */
  async function fromMovements(logs: readonly Log[]): Promise<LedgerTransaction[]> {
    const movements = parseEventLogs({
      abi: walletLedgerAbi,
      eventName: 'Movement',
      logs: logs as Log[],
      strict: true,
    }).filter((log) => log.address.toLowerCase() === address.toLowerCase());
    const bySequence = new Map<bigint, LedgerTransaction & { block: bigint }>();
    for (const log of movements) {
      const { sequence, operationId, from, to, amount } = log.args;
      const leg = { from, to, amount: fromUnits(amount) };
      const known = bySequence.get(sequence);
      if (known) known.legs.push(leg);
      else
        bySequence.set(sequence, {
          blockchainID: log.transactionHash!,
          sequenceNumber: Number(sequence),
          operationID: operationId,
          legs: [leg],
          createdAt: '',
          block: log.blockNumber!,
        });
    }
    const timestamps = new Map<bigint, string>();
    for (const block of new Set([...bySequence.values()].map((tx) => tx.block))) {
      const { timestamp } = await publicClient.getBlock({ blockNumber: block });
      timestamps.set(block, new Date(Number(timestamp) * 1000).toISOString());
    }
    return [...bySequence.values()]
      .sort((a, b) => a.sequenceNumber - b.sequenceNumber)
      .map(({ block, ...tx }) => ({ ...tx, createdAt: timestamps.get(block)! }));
  }

  /** Fee caps, asked of the node at most every two seconds rather than before every transaction. */
  let feeCache: { at: number; fees: Promise<{ maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }> } | null = null;
  function fees() {
    if (!feeCache || Date.now() - feeCache.at > 2_000) {
      const fees = publicClient.estimateFeesPerGas();
      feeCache = { at: Date.now(), fees };
      fees.catch(() => (feeCache = null));
    }
    return feeCache.fees;
  }

  /** Signs here and hands the node the raw transaction: one request, and the key never leaves the process. */
  async function send(call: Call, gas: bigint, nonce: number): Promise<Hex> {
    const data = encodeFunctionData({ abi: walletLedgerAbi, ...call } as Parameters<typeof encodeFunctionData>[0]);
    const { maxFeePerGas, maxPriorityFeePerGas } = await fees();
    const serializedTransaction = await account.signTransaction({
      type: 'eip1559',
      chainId: options.chainId,
      to: address,
      data,
      gas,
      nonce,
      maxFeePerGas,
      maxPriorityFeePerGas,
    });
    if (call.functionName !== 'void') options.whileHolding?.();
    return publicClient.sendRawTransaction({ serializedTransaction });
  }

  /** A revert's reason as the port's outcome: the operation executed already, or refused for good. */
  async function refused(operationID: string, reason: string): Promise<never> {
    if (reason.includes(DUPLICATE_REASON)) {
      const existing = await findByOperationID(operationID);
      if (existing) throw new LedgerDuplicateError(existing);
      throw new LedgerUnavailableError(`the contract says ${operationID} executed, but it cannot be found yet`);
    }
    if (reason.includes(VOIDED_REASON)) {
      const block = await voidedIn(operationID);
      if (block !== 0n) throw new LedgerVoidedError(operationID, await blockTime(block));
      throw new LedgerUnavailableError(
        `the contract says ${operationID} was voided, but the node does not show it yet`,
      );
    }
    throw new LedgerRejectedError(reason);
  }

  async function estimate(call: Call): Promise<bigint> {
    // prepare: false: the estimate needs no nonce, block or fee, which viem would otherwise fetch first.
    return publicClient.estimateContractGas({
      address,
      abi: walletLedgerAbi,
      account,
      prepare: false,
      ...call,
    } as Parameters<typeof publicClient.estimateContractGas>[0]);
  }

  /** The call's gas; a revert becomes the port's outcome (duplicate or rejection), anything else is transient. */
  async function estimateOrRefuse(operationID: string, call: Call): Promise<bigint> {
    try {
      return await estimate(call);
    } catch (error) {
      const reason = revertReason(error);
      if (reason !== null) return refused(operationID, reason);
      throw unavailable('estimate failed', error);
    }
  }

  return {
    async submit({ operationID, legs }) {
      const call = callFor(operationID, legs);
      await ready();
      const gas = await estimateOrRefuse(operationID, call);
      let hash: Hex;
      try {
        // A fifth more than estimated: the estimate is exact for the state it ran on, which may move.
        hash = await nonces.send((nonce) => send(call, (gas * 6n) / 5n, nonce));
      } catch (error) {
        const reason = revertReason(error);
        if (reason !== null) return refused(operationID, reason);
        throw unavailable('send failed', error);
      }
      let receipt;
      try {
        receipt = await publicClient.waitForTransactionReceipt({ hash, confirmations, timeout: receiptTimeoutMs });
      } catch (error) {
        throw unavailable(`no receipt for ${hash}`, error);
      }
      if (receipt.status === 'reverted') {
        // Mined but reverted: another executor got there first, or the state moved between estimate and block.
        const existing = await findByOperationID(operationID);
        if (existing) throw new LedgerDuplicateError(existing);
        await estimateOrRefuse(operationID, call);
        throw new LedgerUnavailableError(
          `transaction ${hash} reverted in block ${receipt.blockNumber} and would not revert now: retrying`,
        );
      }
      const [mined] = await fromMovements(receipt.logs).catch((error: unknown) => {
        throw unavailable('read failed', error);
      });
      if (!mined || mined.operationID !== operationID)
        throw new LedgerUnavailableError(`transaction ${hash} was mined without a movement for ${operationID}`);
      return mined;
    },
    async void(operationID) {
      if (!operationID) throw new LedgerRejectedError('an operation id is required to void');
      const known = await fateOf(operationID);
      if (known.kind !== 'none') return known;
      const call: Call = { functionName: 'void', args: [operationID] };
      let gas: bigint;
      try {
        gas = await estimate(call);
      } catch (error) {
        const reason = revertReason(error);
        if (reason?.includes(DUPLICATE_REASON)) return settledFate(operationID);
        if (reason !== null) throw new LedgerRejectedError(reason);
        throw unavailable('estimate failed', error);
      }
      let hash: Hex;
      try {
        hash = await nonces.send((nonce) => send(call, (gas * 6n) / 5n, nonce));
      } catch (error) {
        const reason = revertReason(error);
        if (reason?.includes(DUPLICATE_REASON)) return settledFate(operationID);
        if (reason !== null) throw new LedgerRejectedError(reason);
        throw unavailable('send failed', error);
      }
      let receipt;
      try {
        receipt = await publicClient.waitForTransactionReceipt({ hash, confirmations, timeout: receiptTimeoutMs });
      } catch (error) {
        // Mined or not, the void may still land: the caller asks again, and voiding is idempotent.
        throw unavailable(`no receipt for ${hash}`, error);
      }
      // Reverted: a movement was mined first. Mined: voided (by this call, or an earlier one).
      if (receipt.status === 'reverted') {
        const fate = await fateOf(operationID);
        if (fate.kind === 'executed') return fate;
        throw new LedgerUnavailableError(
          `void transaction ${hash} reverted in block ${receipt.blockNumber} and the operation is not executed: ` +
            'retrying',
        );
      }
      return settledFate(operationID);
    },
    fateOf,
    findByOperationID,
    async balance(wallet) {
      await ready();
      try {
        if (wallet === ISSUANCE_ADDRESS) {
          const supply = await publicClient.readContract({
            address,
            abi: walletLedgerAbi,
            functionName: 'totalSupply',
          });
          // The issuing account is below zero by what is in circulation, as on the embedded ledger.
          return supply === 0n ? fromUnits(0n) : `-${fromUnits(supply)}`;
        }
        return fromUnits(
          await publicClient.readContract({ address, abi: walletLedgerAbi, functionName: 'balanceOf', args: [wallet] }),
        );
      } catch (error) {
        throw unavailable('read failed', error);
      }
    },
    async transactions({ fromSequence = 1, maxCount = 1000 } = {}) {
      await ready();
      try {
        const last = await publicClient.readContract({ address, abi: walletLedgerAbi, functionName: 'sequence' });
        const to = Math.min(Number(last), fromSequence + maxCount - 1);
        if (to < fromSequence) return [];
        const sequences = Array.from({ length: to - fromSequence + 1 }, (_, i) => BigInt(fromSequence + i));
        if (!deployedIn) {
          deployedIn = publicClient.readContract({ address, abi: walletLedgerAbi, functionName: 'deployedIn' });
          deployedIn.catch(() => (deployedIn = undefined));
        }
        return await transactionsFrom({ fromBlock: await deployedIn, toBlock: 'latest', sequences });
      } catch (error) {
        throw unavailable('read failed', error);
      }
    },
    async status() {
      await ready();
      const [blockNumber, operatorBalance, supply, sequence] = await Promise.all([
        publicClient.getBlockNumber(),
        publicClient.getBalance({ address: account.address }),
        publicClient.readContract({ address, abi: walletLedgerAbi, functionName: 'totalSupply' }),
        publicClient.readContract({ address, abi: walletLedgerAbi, functionName: 'sequence' }),
      ]);
      return {
        chainId: options.chainId,
        blockNumber: blockNumber.toString(),
        operator: account.address,
        operatorBalanceWei: operatorBalance.toString(),
        contract: address,
        supply: fromUnits(supply),
        sequence: Number(sequence),
      };
    },
    async close() {},
  };
}
