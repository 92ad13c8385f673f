import { DEV_OPERATOR_ADDRESS, startDevChain, type DevChain } from '../../contracts/dev-chain.ts';
import { TEST_OPERATOR_ADDRESSES } from './test-operators.ts';

/**
 * Global setup of the main test project: one development chain (Hardhat's EDR, in this process) for
 * every test file, reached over JSON-RPC like any node. Each test system deploys its own contract on it.
 */
let chain: DevChain | undefined;

export async function setup(): Promise<void> {
  // An operator account per test worker (test-operators.ts): files running at once never share nonces.
  chain = await startDevChain({ fundedAddresses: [DEV_OPERATOR_ADDRESS, ...TEST_OPERATOR_ADDRESSES] });
  // The test workers are forked after global setup, with this environment.
  process.env.TEST_EVM_RPC_URL = chain.url;
}

export async function teardown(): Promise<void> {
  await chain?.close();
}
