import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPublicClient, http, type Hex } from 'viem';
import { DEV_CHAIN_ID, DEV_OPERATOR_KEY } from '../../contracts/dev-chain.ts';
import { deployWalletLedger, evmChain } from '../../src/adapters/evm/evm-ledger.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * The development chain (contracts/dev-chain.ts, Hardhat's EDR) in a child process of its own, as a node
 * would be: its JSON-RPC server answers on the child's event loop, not on the bench's, which runs the
 * executor. Automine only (CHAIN_BLOCK_INTERVAL_MS=0: no interval blocks), so every transaction is mined in
 * its own block as it arrives and 1 confirmation means "mined".
 */
export interface ChainProcess {
  url: string;
  chainId: number;
  operatorKey: Hex;
  /** A file holding the operator key, for EVM_OPERATOR_KEY_FILE (0600, removed by close). */
  operatorKeyFile: string;
  /** Deploys a fresh WalletLedger, operated by the development operator; its address. */
  deploy(): Promise<Hex>;
  /** CPU time the chain's process has used so far (user + system, ms), NaN where /proc is not there. */
  cpuMs(): number;
  close(): Promise<void>;
}

export async function startChainProcess(): Promise<ChainProcess> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'contracts/dev-chain.ts'], {
    cwd: ROOT,
    env: { ...process.env, CHAIN_PORT: '0', CHAIN_HOST: '127.0.0.1', CHAIN_BLOCK_INTERVAL_MS: '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`the development chain did not start in 60 s: ${out}`)), 60_000);
    child.once('exit', (code) => reject(new Error(`the development chain exited with ${code}: ${out}`)));
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const found = /on (http:\/\/[\d.]+:\d+)/.exec(out);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]!);
      }
    });
  });
  const dir = mkdtempSync(join(tmpdir(), 'bench-evm-'));
  const operatorKeyFile = join(dir, 'operator.key');
  writeFileSync(operatorKeyFile, `${DEV_OPERATOR_KEY}\n`, { mode: 0o600 });
  const operatorKey = DEV_OPERATOR_KEY as Hex;
  return {
    url,
    chainId: DEV_CHAIN_ID,
    operatorKey,
    operatorKeyFile,
    async deploy() {
      return (await deployWalletLedger({ rpcUrl: url, chainId: DEV_CHAIN_ID, operatorKey, pollingIntervalMs: 20 }))
        .address;
    },
    cpuMs() {
      return processCpuMs(child.pid!);
    },
    async close() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** utime + stime of a process from /proc/<pid>/stat, in ms (clock ticks of 10 ms on Linux). */
function processCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After the command name: state is field 3, utime field 14 and stime field 15 (1-based, in proc(5)).
    return (Number(fields[14 - 3]) + Number(fields[15 - 3])) * 10;
  } catch {
    return NaN;
  }
}

/** Gas used by transactions, from their receipts. */
export async function gasUsed(
  chain: Pick<ChainProcess, 'url' | 'chainId'>,
  hashes: readonly string[],
): Promise<bigint[]> {
  const client = createPublicClient({
    chain: evmChain(chain.chainId, chain.url),
    transport: http(chain.url, { retryCount: 0 }),
  });
  const gas: bigint[] = [];
  for (const hash of hashes) gas.push((await client.getTransactionReceipt({ hash: hash as Hex })).gasUsed);
  return gas;
}

export interface MethodStats {
  calls: number;
  totalMs: number;
}

/**
 * Counts the JSON-RPC requests this process sends to the chain, by method, and the time each took on the
 * wire (from the request to its answer, so with the node's queueing when requests overlap). viem's http
 * transport calls the global fetch, so wrapping it sees every request of every client in this process.
 */
export class RpcMeter {
  private stats = new Map<string, MethodStats>();
  private original: typeof fetch | undefined;

  install(url: string): void {
    if (this.original) return;
    const original = globalThis.fetch;
    this.original = original;
    globalThis.fetch = async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
      const target = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      if (!target.startsWith(url) || typeof init?.body !== 'string') return original(input, init);
      const body = JSON.parse(init.body) as { method: string } | Array<{ method: string }>;
      const methods = Array.isArray(body) ? body.map((b) => b.method) : [body.method];
      const started = performance.now();
      try {
        return await original(input, init);
      } finally {
        const ms = performance.now() - started;
        for (const method of methods) {
          const s = this.stats.get(method) ?? { calls: 0, totalMs: 0 };
          s.calls += 1;
          s.totalMs += ms;
          this.stats.set(method, s);
        }
      }
    };
  }

  uninstall(): void {
    if (this.original) globalThis.fetch = this.original;
    this.original = undefined;
  }

  reset(): void {
    this.stats = new Map();
  }

  snapshot(): Map<string, MethodStats> {
    return new Map([...this.stats].map(([method, s]) => [method, { ...s }]));
  }
}
