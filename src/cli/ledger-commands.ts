import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { findUserByEmail, userContext } from '../commands/back-office.ts';
import { settleFailed } from '../commands/failed-settlement.ts';
import { openLedger } from '../adapters/open-stores.ts';
import { loadConfig, type Config } from '../config.ts';
import { formatAmount } from '../domain/money.ts';
import { ISSUANCE_ADDRESS } from '../ports/ledger.ts';
import { common, printResult as print, UsageError, withLedger, type CommonOptions } from './support.ts';
import { cliIO } from './io.ts';

/** The EVM adapter and viem, loaded only by the commands that need them (every CLI start would pay for them). */
const evm = () => import('../adapters/evm/evm-ledger.ts');

async function evmSettings(config: Config, needAddress: boolean) {
  const { readOperatorKey } = await evm();
  const names: (keyof Config)[] = [
    'EVM_RPC_URL',
    'EVM_CHAIN_ID',
    'EVM_OPERATOR_KEY_FILE',
    ...(needAddress ? (['EVM_LEDGER_ADDRESS'] as const) : []),
  ];
  const missing = names.filter((name) => config[name] === undefined);
  if (missing.length > 0) throw new UsageError(`set ${missing.join(', ')} (see the README's EVM ledger section)`);
  return {
    rpcUrl: config.EVM_RPC_URL!,
    chainId: config.EVM_CHAIN_ID!,
    // Read from its file here and handed to viem only: never printed, never logged, never in an event.
    operatorKey: readOperatorKey(config.EVM_OPERATOR_KEY_FILE!),
    confirmations: config.EVM_CONFIRMATIONS,
    pollingIntervalMs: config.EVM_POLL_INTERVAL_MS,
  };
}

/** The ledger: deploying the WalletLedger contract and looking at whichever ledger is configured. */
export function registerLedgerCommands(program: Command): void {
  const ledger = program.command('ledger').description('the ledger the executor settles on (LEDGER=embedded|evm)');

  common(ledger.command('deploy'))
    .description(
      'deploy the WalletLedger contract with the operator account as its only writer (EVM_RPC_URL, EVM_CHAIN_ID, ' +
        'EVM_OPERATOR_KEY_FILE); prints its address for EVM_LEDGER_ADDRESS',
    )
    .option(
      '--unless-deployed',
      'do nothing when EVM_LEDGER_ADDRESS already holds a WalletLedger whose operator is this key (idempotent setups)',
    )
    .action(async (opts: CommonOptions & { unlessDeployed?: boolean }) => {
      const config = loadConfig(cliIO().env);
      const settings = await evmSettings(config, false);
      const { deployWalletLedger, findWalletLedger } = await evm();
      if (opts.unlessDeployed && config.EVM_LEDGER_ADDRESS) {
        const existing = await findWalletLedger({ ...settings, contract: config.EVM_LEDGER_ADDRESS as `0x${string}` });
        if (existing) {
          print(
            opts,
            { chainId: config.EVM_CHAIN_ID, address: config.EVM_LEDGER_ADDRESS, alreadyDeployed: true },
            (r) => `WalletLedger already deployed at ${r.address}`,
          );
          return;
        }
      }
      const deployed = await deployWalletLedger(settings);
      print(
        opts,
        { chainId: config.EVM_CHAIN_ID, ...deployed, alreadyDeployed: false },
        (r) =>
          `WalletLedger deployed at ${r.address} (transaction ${r.transactionHash}, block ${r.blockNumber}); set ` +
          `EVM_LEDGER_ADDRESS=${r.address}`,
      );
    });

  common(ledger.command('status'))
    .description(
      'the configured ledger: on a chain its id, block height, the operator’s balance for gas and the contract’s ' +
        'supply; embedded, its transactions and supply',
    )
    .action(async (opts: CommonOptions) => {
      const config = loadConfig(cliIO().env);
      if (config.LEDGER === 'evm') {
        const { openEvmLedger } = await evm();
        const { formatEther } = await import('viem');
        const chain = openEvmLedger({
          ...(await evmSettings(config, true)),
          contract: config.EVM_LEDGER_ADDRESS as `0x${string}`,
          scale: config.ASSET_SCALE,
        });
        try {
          const status = await chain.status();
          const result = {
            ledger: 'evm' as const,
            ...status,
            operatorBalance: formatEther(BigInt(status.operatorBalanceWei)),
            supply: formatAmount(status.supply, config.ASSET_SCALE),
          };
          print(opts, result, (r) =>
            [
              `chain ${r.chainId} at block ${r.blockNumber}`,
              `contract ${r.contract}: ${r.sequence} operations executed, supply ${r.supply}`,
              `operator ${r.operator}: ${r.operatorBalance} for gas`,
            ].join('\n'),
          );
        } finally {
          await chain.close();
        }
        return;
      }
      const embedded = await openLedger({ dataDir: opts.dataDir ?? config.DATA_DIR, selection: config });
      try {
        let sequence = 0;
        for (
          let page = await embedded.transactions({ fromSequence: 1, maxCount: 1000 });
          page.length > 0;
          page = await embedded.transactions({ fromSequence: sequence + 1, maxCount: 1000 })
        ) {
          sequence = page.at(-1)!.sequenceNumber;
        }
        const issuance = await embedded.balance(ISSUANCE_ADDRESS);
        const supply = formatAmount(issuance.startsWith('-') ? issuance.slice(1) : '0', config.ASSET_SCALE);
        print(
          opts,
          { ledger: 'embedded' as const, sequence, supply },
          (r) => `embedded ledger: ${r.sequence} operations executed, supply ${r.supply}`,
        );
      } finally {
        await embedded.close();
      }
    });

  registerSettleFailed(ledger);
}

/**
 * `ledger settle-failed request|approve`: an operation recorded as failed whose money moved on the ledger
 * (`audit verify`'s failedButMoved) is completed as the ledger has it, maker-checker: a platform administrator
 * asks, another approves (src/commands/failed-settlement.ts).
 */
function registerSettleFailed(ledger: Command): void {
  const settle = ledger
    .command('settle-failed')
    .description(
      "complete an operation recorded as failed whose money moved on the ledger (audit verify's failedButMoved): " +
        'one platform administrator asks, another approves',
    );
  type SettleOptions = CommonOptions & { as: string; reason?: string };
  const run = (
    type: 'RequestFailedSettlement' | 'ApproveFailedSettlement',
    operationID: string,
    opts: SettleOptions,
    human: (r: { operationID: string; sequenceNumber: number; blockchainID: string }) => string,
  ) =>
    withLedger(
      opts,
      async ({ eventStore }, chain, config) => {
        const user = await findUserByEmail({ store: eventStore }, opts.as);
        const deps = { store: eventStore, ledger: chain, clock: () => new Date(), assetScale: config.ASSET_SCALE };
        const event = await settleFailed(
          deps,
          {
            type,
            operationID,
            by: { userID: user.userID, platformAdmin: user.platformAdmin },
            ...(opts.reason === undefined ? {} : { reason: opts.reason }),
          },
          userContext(user, randomUUID()),
        );
        const { sequenceNumber, blockchainID } = event.data;
        return {
          operationID,
          status:
            event.type === 'OperationSettledFromLedger' ? ('completed' as const) : ('settlement-requested' as const),
          sequenceNumber,
          blockchainID,
        };
      },
      human,
    );

  common(settle.command('request'))
    .description('ask to settle the failed operation from its ledger transaction (the ledger must have it)')
    .argument('<operationID>')
    .requiredOption('--reason <text>', 'why, e.g. the audit that found it')
    .requiredOption('--as <email>', 'the platform administrator asking')
    .action(async (operationID: string, opts: SettleOptions) =>
      run(
        'RequestFailedSettlement',
        operationID,
        opts,
        (r) =>
          `settlement of ${r.operationID} from ledger transaction ${r.sequenceNumber} requested; another ` +
          `platform administrator approves it with: wallet-ops ledger settle-failed approve ${r.operationID} ` +
          '--as EMAIL',
      ),
    );

  common(settle.command('approve'))
    .description(
      'approve a settlement another platform administrator asked for: the operation is completed as the ledger has it',
    )
    .argument('<operationID>')
    .requiredOption('--as <email>', 'the approving platform administrator (not the one who asked)')
    .action(async (operationID: string, opts: SettleOptions) =>
      run(
        'ApproveFailedSettlement',
        operationID,
        opts,
        (r) => `operation ${r.operationID} settled: completed as ledger transaction ${r.sequenceNumber}`,
      ),
    );
}
