/**
 * A local EVM chain for development and tests, offline: Hardhat's EDR (an EVM in Rust whose native binary
 * ships inside its npm package) served as JSON-RPC over HTTP, like any node. It lives in the process that
 * starts it, so executors in other processes (and their crashes) meet a chain that outlives them.
 *
 * Development only: it keeps its state in memory and funds a well-known test account. `npm run chain`
 * starts one on 127.0.0.1:8545.
 */
import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import {
  CANCUN,
  EdrContext,
  ContractDecoder,
  MineOrdering,
  L1_CHAIN_TYPE,
  l1GenesisState,
  l1HardforkFromString,
  l1ProviderFactory,
  type Provider,
} from '@nomicfoundation/edr';

/**
 * Hardhat's and Anvil's first test account: its key is public, printed by every development node. Never use it
 * on a chain with real value.
 */
export const DEV_OPERATOR_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
export const DEV_OPERATOR_ADDRESS = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';
export const DEV_CHAIN_ID = 31337;

export interface DevChainOptions {
  port?: number;
  host?: string;
  chainId?: number;
  /** Also mine an empty block every N ms, so confirmations beyond the first come without new transactions. */
  blockIntervalMs?: number;
  /** Accounts funded at genesis with 10,000 ether each. Default: the development operator. */
  fundedAddresses?: string[];
}

export interface DevChain {
  url: string;
  chainId: number;
  /** Answers one JSON-RPC request in process, as the HTTP endpoint would. */
  request(method: string, params?: unknown[]): Promise<unknown>;
  /** Stops answering: requests in flight fail, as a crashed node's would. */
  close(): Promise<void>;
}

let context: EdrContext | undefined;

interface JsonRpcReply {
  error?: { code: number; message: string; data?: unknown };
}

/**
 * EDR answers a revert Hardhat's way (`data: { data: '0x…' }`); geth, and so viem, expect code 3 with the
 * revert data as a hex string. Speaking geth's dialect makes the chain behave as a production node would.
 */
function asGethReply(reply: JsonRpcReply): JsonRpcReply {
  const data = reply.error?.data as { data?: unknown } | undefined;
  if (!reply.error || typeof data?.data !== 'string') return reply;
  const reason = /reverted with reason string '(.*)'$/s.exec(reply.error.message)?.[1];
  return {
    ...reply,
    error: {
      code: 3,
      message: reason === undefined ? 'execution reverted' : `execution reverted: ${reason}`,
      data: data.data,
    },
  };
}

async function edrContext(): Promise<EdrContext> {
  // EDR allows one context per process.
  if (!context) {
    context = new EdrContext();
    await context.registerProviderFactory(L1_CHAIN_TYPE, l1ProviderFactory());
  }
  return context;
}

const hexToBytes = (hex: string) => Buffer.from(hex.replace(/^0x/, ''), 'hex');

export async function startDevChain(options: DevChainOptions = {}): Promise<DevChain> {
  const chainId = options.chainId ?? DEV_CHAIN_ID;
  const hardfork = CANCUN;
  const funded = (options.fundedAddresses ?? [DEV_OPERATOR_ADDRESS]).map((address) => ({
    address: hexToBytes(address),
    balance: 10_000n * 10n ** 18n,
  }));
  const provider: Provider = await (
    await edrContext()
  ).createProvider(
    L1_CHAIN_TYPE,
    {
      allowBlocksWithSameTimestamp: false,
      allowUnlimitedContractSize: false,
      // Like geth: eth_call answers a revert as an error with its data; a reverted transaction is mined with status 0.
      bailOnCallFailure: true,
      bailOnTransactionFailure: false,
      chainId: BigInt(chainId),
      coinbase: hexToBytes('0xc014ba5e00000000000000000000000000000000'),
      defaultTransactionGasLimit: 30_000_000n,
      genesisState: [...l1GenesisState(l1HardforkFromString(hardfork)), ...funded],
      hardfork,
      initialBaseFeePerGas: 1_000_000_000n,
      minGasPrice: 0n,
      mining: {
        autoMine: true,
        ...(options.blockIntervalMs ? { interval: BigInt(options.blockIntervalMs) } : {}),
        memPool: { order: MineOrdering.Priority },
      },
      network: { genesisBlockGasLimit: 30_000_000n },
      networkId: BigInt(chainId),
      observability: {},
      ownedAccounts: [],
      precompileOverrides: [],
    },
    { enable: false, decodeConsoleLogInputsCallback: () => [], printLineCallback: () => {} },
    { subscriptionCallback: () => {} },
    new ContractDecoder(),
  );

  let closed = false;
  async function answer(request: { params?: unknown; [field: string]: unknown }): Promise<string> {
    if (closed) throw new Error('the development chain is stopped');
    // EDR wants `params` even where JSON-RPC makes it optional (viem leaves it out of eth_gasPrice).
    const response = await provider.handleRequest(JSON.stringify({ params: [], ...request }));
    const reply = (typeof response.data === 'string' ? JSON.parse(response.data) : response.data) as JsonRpcReply;
    return JSON.stringify(asGethReply(reply));
  }

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      // A JSON-RPC batch is an array: answer each, in order.
      const answered = Promise.resolve()
        .then(
          () =>
            JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> | Record<string, unknown>[],
        )
        .then((body) =>
          Array.isArray(body) ? Promise.all(body.map(answer)).then((parts) => `[${parts.join(',')}]`) : answer(body),
        );
      answered.then(
        (text) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(text);
        },
        (error: Error) => {
          res.writeHead(503, { 'content-type': 'text/plain' });
          res.end(error.message);
        },
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  let id = 0;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    chainId,
    async request(method, params = []) {
      const reply = JSON.parse(await answer({ jsonrpc: '2.0', id: ++id, method, params })) as {
        result?: unknown;
        error?: { message: string };
      };
      if (reply.error) throw new Error(reply.error.message);
      return reply.result;
    },
    async close() {
      closed = true;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const port = Number(process.env.CHAIN_PORT ?? 8545);
  const chain = await startDevChain({
    port,
    host: process.env.CHAIN_HOST ?? '127.0.0.1',
    blockIntervalMs: Number(process.env.CHAIN_BLOCK_INTERVAL_MS ?? 1000),
  });
  console.log(
    `development chain ${chain.chainId} on ${chain.url} (in memory; the operator key ${DEV_OPERATOR_ADDRESS} is a public test key)`,
  );
  const stop = () => void chain.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
