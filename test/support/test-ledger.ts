import { chmodSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DEV_CHAIN_ID } from '../../contracts/dev-chain.ts';
import { onEvm } from './run-on.ts';
import { testOperatorKey } from './test-operators.ts';
import { deployWalletLedger } from '../../src/adapters/evm/evm-ledger.ts';

/**
 * Which ledger the tests run on. By default the embedded one. In a test file that calls runOnEvm() (the
 * `*.on-evm.e2e.test.ts` files), or with TEST_LEDGER=evm, a WalletLedger contract on the development chain that
 * the run's global setup started (test/support/evm-chain.global.ts): a fresh contract per data directory, so that
 * each test system has its own supply and fee wallet to check the invariants on. The choice is the file's
 * (test/support/run-on.ts).
 */
export { onEvm, runOnEvm } from './run-on.ts';

const byDataDir = new Map<string, Promise<Record<string, string>>>();
const deployed = new Map<string, Record<string, string>>();
let keyFile: string | undefined;

function operatorKeyFile(): string {
  if (!keyFile) {
    keyFile = join(tmpdir(), `wallet-ops-test-operator-${process.pid}.key`);
    writeFileSync(keyFile, `${testOperatorKey()}\n`, { mode: 0o600 });
    chmodSync(keyFile, 0o600);
  }
  return keyFile;
}

/** The configuration that puts a data directory's system on the test ledger: {} on the embedded ledger. */
export function testLedgerEnv(dataDir: string): Promise<Record<string, string>> {
  if (!onEvm()) return Promise.resolve({});
  const key = resolve(dataDir);
  let env = byDataDir.get(key);
  if (!env) {
    env = deploy().then((made) => {
      deployed.set(key, made);
      return made;
    });
    byDataDir.set(key, env);
  }
  return env;
}

async function deploy(): Promise<Record<string, string>> {
  const rpcUrl = process.env.TEST_EVM_RPC_URL;
  if (!rpcUrl)
    throw new Error('the EVM ledger needs TEST_EVM_RPC_URL: the global setup test/support/evm-chain.global.ts sets it');
  const operatorKeyPath = operatorKeyFile();
  const { address } = await deployWalletLedger({
    rpcUrl,
    chainId: DEV_CHAIN_ID,
    operatorKey: testOperatorKey(),
    pollingIntervalMs: 20,
  });
  return {
    LEDGER: 'evm',
    EVM_RPC_URL: rpcUrl,
    EVM_CHAIN_ID: String(DEV_CHAIN_ID),
    EVM_OPERATOR_KEY_FILE: operatorKeyPath,
    EVM_LEDGER_ADDRESS: address,
    EVM_POLL_INTERVAL_MS: '20',
  };
}

/** The ledger configuration already made for a data directory ({} if none), for processes started on it later. */
export function knownLedgerEnv(dataDir: string): Record<string, string> {
  return deployed.get(resolve(dataDir)) ?? {};
}
