import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_OPERATOR_KEY, startDevChain, type DevChain } from '../../contracts/dev-chain.ts';
import { openEvmLedger } from '../../src/adapters/evm/evm-ledger.ts';
import { runCli, runCliJson } from '../support/cli.ts';
import { issue, waitUntilSettled } from '../support/executor-system.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';

/**
 * The ledger commands and `audit verify` on a real EVM chain (Hardhat's EDR in this process, over JSON-RPC):
 * `ledger deploy`, `ledger status` and the reconciliation of a history with the contract's events, each
 * command run as an operator runs it, in this process (test/support/cli.ts).
 */
describe('wallet-ops ledger and audit verify on an EVM chain', () => {
  const dir = tempDir('ledger-on-chain-');
  const keyFile = join(dir.path, 'operator.key');
  let chain: DevChain;
  let env: Record<string, string>;
  let sys: TestSystem;

  beforeAll(async () => {
    chain = await startDevChain();
    writeFileSync(keyFile, `${DEV_OPERATOR_KEY}\n`, { mode: 0o600 });
    env = {
      EVM_RPC_URL: chain.url,
      EVM_CHAIN_ID: String(chain.chainId),
      EVM_OPERATOR_KEY_FILE: keyFile,
      EVM_POLL_INTERVAL_MS: '20',
    };
  });
  afterAll(async () => {
    await sys?.close();
    await chain?.close();
    dir.cleanup();
  });

  it('when ledger deploy runs, then it prints the address of a contract on the chain, and --unless-deployed leaves it be', async () => {
    const deployed = await runCliJson<{
      address: string;
      transactionHash: string;
      chainId: number;
      alreadyDeployed: boolean;
    }>(['ledger', 'deploy'], env);
    expect(deployed.address).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(deployed).toMatchObject({ chainId: chain.chainId, alreadyDeployed: false });
    expect(await chain.request('eth_getCode', [deployed.address, 'latest'])).not.toBe('0x');
    env.EVM_LEDGER_ADDRESS = deployed.address;

    const again = await runCliJson<{ address: string; alreadyDeployed: boolean }>(
      ['ledger', 'deploy', '--unless-deployed'],
      env,
    );
    expect(again).toMatchObject({ address: deployed.address, alreadyDeployed: true });
  });

  it('when the EVM settings are missing, then deploy names them and exits 2 (a usage error) without touching the chain', async () => {
    const result = await runCli(['ledger', 'deploy'], { EVM_RPC_URL: chain.url });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/EVM_CHAIN_ID, EVM_OPERATOR_KEY_FILE/);
    expect(result.stderr).not.toContain(DEV_OPERATOR_KEY.slice(2, 20));
  });

  it('given a system settling on the contract, when operations complete, then ledger status shows them and audit verify reconciles the history with the chain', async () => {
    sys = await startTestSystem({ ...env, LEDGER: 'evm' });
    const distributor = await sys.party('distributor');
    const ids = [await issue(sys, distributor.ref, '100.00'), await issue(sys, distributor.ref, '25.50')];
    for (const id of ids) expect((await waitUntilSettled(sys, id)).status).toBe('completed');

    const status = await runCliJson<{
      ledger: string;
      sequence: number;
      supply: string;
      chainId: number;
      operator: string;
    }>(['ledger', 'status'], { ...env, LEDGER: 'evm' });
    expect(status).toMatchObject({ ledger: 'evm', sequence: 2, supply: '125.50', chainId: chain.chainId });
    // As a person reads it: the chain, the contract's count and supply, the operator's gas.
    const read = await runCli(['ledger', 'status'], { ...env, LEDGER: 'evm' });
    expect(read.stdout.split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^chain ${chain.chainId} at block \\d+$`)),
      `contract ${env.EVM_LEDGER_ADDRESS}: 2 operations executed, supply 125.50`,
      expect.stringMatching(new RegExp(`^operator ${status.operator}: \\d+(\\.\\d+)? for gas$`)),
      '',
    ]);

    const verified = await runCli(['audit', 'verify', '--data-dir', sys.config.DATA_DIR, '--json'], {
      ...env,
      LEDGER: 'evm',
    });
    expect(verified.code, verified.stderr).toBe(0);
    const report = JSON.parse(verified.stdout) as { ok: boolean; counts?: Record<string, number> };
    expect(report.ok).toBe(true);
  });

  it('given a movement on the contract that the history never recorded, then audit verify reports it and fails', async () => {
    // The operator key used behind wallet-ops's back: money moved on the chain with no operation in the history.
    const rogue = openEvmLedger({
      rpcUrl: chain.url,
      chainId: chain.chainId,
      operatorKey: DEV_OPERATOR_KEY,
      contract: env.EVM_LEDGER_ADDRESS as `0x${string}`,
      scale: 2,
      pollingIntervalMs: 20,
    });
    await rogue.submit({
      operationID: 'op_not_in_the_history',
      legs: [{ from: 'platform:issuance', to: 'distributor:nobody', amount: '1.00' }],
    });

    const verified = await runCli(['audit', 'verify', '--data-dir', sys.config.DATA_DIR, '--json'], {
      ...env,
      LEDGER: 'evm',
    });
    expect(verified.code).toBe(1);
    const report = JSON.parse(verified.stdout) as {
      ok: boolean;
      problems: Array<{ check: string; operationID?: string; detail: string }>;
    };
    expect(report.ok).toBe(false);
    expect(report.problems).toContainEqual(
      expect.objectContaining({ check: 'ledger', operationID: 'op_not_in_the_history' }),
    );
  });
});
