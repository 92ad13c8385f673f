import { randomUUID } from 'node:crypto';
import { loadConfig } from '../../src/config.ts';
import { knownLedgerEnv } from './test-ledger.ts';
import { knownStoreEnv } from './test-stores.ts';
import { createLogger } from '../../src/logger.ts';
import { buildWalletOps, type Part, type WalletOps } from '../../src/wallet-ops.ts';
import { actingUser, findUserByEmail, userContext } from '../../src/commands/back-office.ts';
import { issueFloat, type ChannelDeps } from '../../src/commands/channel-operations.ts';
import { decideOperation } from '../../src/commands/operation-handlers.ts';
import { operationState, type OperationState } from '../../src/commands/operations.ts';
import { PartyLookup } from '../../src/commands/party-lookup.ts';
import { loadState } from '../../src/commands/pipeline.ts';
import { availableBalance, walletState } from '../../src/commands/wallet-state.ts';
import type { WalletRef } from '../../src/domain/events.ts';
import type { PartyRef } from '../../src/domain/parties.ts';
import { streams } from '../../src/domain/streams.ts';
import { runCliJson } from './cli.ts';
import {
  startTestSystem,
  waitFor,
  WITHOUT_EXECUTOR,
  type TestParty,
  type TestSystem,
  type TestSystemOptions,
} from './system.ts';

/**
 * Like startTestSystem (system.ts), with the parts chosen: typically everything but the executor, so that
 * a test decides when an executor runs and with which ledger faults (`startExecutor`, in this process, on
 * the same data directory through its own connections, as a separate `serve executor` would).
 * No `credit()`: money reaches wallets only through the ledger here (issueFloat, executed cash-ins).
 */
export type PartsTestSystem = Omit<TestSystem, 'credit'> & {
  parts: readonly Part[];
  startExecutor(env?: Record<string, string>): Promise<RunningExecutor>;
};

export interface RunningExecutor {
  ops: WalletOps;
  stop(): Promise<void>;
}

export async function startPartsSystem(
  env: Record<string, string> = {},
  parts: readonly Part[] = WITHOUT_EXECUTOR,
  options: TestSystemOptions = {},
): Promise<PartsTestSystem> {
  const sys = await startTestSystem(env, undefined, parts, options);
  const executors = new Set<RunningExecutor>();
  const { credit: _noCredit, close: closeSystem, ...rest } = sys;
  return {
    ...rest,
    parts,
    async startExecutor(overrides = {}) {
      const executorConfig = loadConfig({
        LOG_LEVEL: 'silent',
        ...knownLedgerEnv(sys.config.DATA_DIR),
        ...knownStoreEnv(sys.config.DATA_DIR),
        ...env,
        DATA_DIR: sys.config.DATA_DIR,
        ...overrides,
      });
      const ops = await buildWalletOps(executorConfig, createLogger(executorConfig.LOG_LEVEL), undefined, ['executor']);
      let stopped = false;
      const running: RunningExecutor = {
        ops,
        async stop() {
          if (stopped) return;
          stopped = true;
          executors.delete(running);
          await ops.close();
        },
      };
      executors.add(running);
      return running;
    },
    async close() {
      await Promise.all([...executors].map((executor) => executor.stop()));
      await closeSystem();
    },
  };
}

type Subject = { system: Pick<WalletOps, 'stores'>; config: { ASSET_SCALE: number }; backOffice?: unknown };

/** What issueFloat and individualPay need, on a system's stores. */
export const channelDeps = (sys: Subject): ChannelDeps => ({
  store: sys.system.stores.eventStore,
  lookup: new PartyLookup(sys.system.stores.eventStore),
  clock: () => new Date(),
  assetScale: sys.config.ASSET_SCALE,
});

/** Treasury issuance to a distributor's float: requested and approved at once; an executor carries it out. */
export async function issue(sys: Subject, to: PartyRef, amount: string): Promise<string> {
  return (await issueFloat(channelDeps(sys), { to, amount }, { actor: 'operator:test', correlationId: randomUUID() }))
    .operationID;
}

/** A checker of the party approves, in this process (the back-office function the CLI calls). */
export async function approve(
  sys: Pick<TestSystem, 'backOffice'>,
  party: Pick<TestParty, 'checkerEmail'>,
  operationID: string,
): Promise<void> {
  const checker = await findUserByEmail(sys.backOffice, party.checkerEmail);
  await decideOperation(
    sys.backOffice,
    actingUser(checker),
    operationID,
    { type: 'approve' },
    userContext(checker, randomUUID()),
  );
}

/** A checker of the party approves through the operator CLI (run in this process, test/support/cli.ts). */
export async function approveViaCli(
  sys: Pick<TestSystem, 'config'>,
  party: Pick<TestParty, 'checkerEmail'>,
  operationID: string,
): Promise<void> {
  const result = await runCliJson<{ operationID: string; state: string }>([
    'operation',
    'approve',
    operationID,
    '--as',
    party.checkerEmail,
    '--data-dir',
    sys.config.DATA_DIR,
  ]);
  if (result.state !== 'approved' || result.operationID !== operationID)
    throw new Error(`unexpected CLI answer ${JSON.stringify(result)}`);
}

/** The operation's state on the write side (its stream folded). */
export async function operationOf(sys: Subject, operationID: string): Promise<OperationState> {
  return (await loadState({ store: sys.system.stores.eventStore }, streams.operation(operationID), operationState))
    .state;
}

/** Waits until the operation is completed or failed on the write side, and returns its state. */
export async function waitUntilSettled(sys: Subject, operationID: string, timeoutMs = 15_000): Promise<OperationState> {
  let state: OperationState = { status: 'none' };
  await waitFor(async () => {
    state = await operationOf(sys, operationID);
    return state.status === 'completed' || state.status === 'failed';
  }, timeoutMs);
  return state;
}

/** The write side's view of a wallet: executed balance, held, and available. */
export async function walletOf(
  sys: Subject,
  wallet: WalletRef,
): Promise<{ balance: string; held: string; available: string }> {
  const { state } = await loadState({ store: sys.system.stores.eventStore }, streams.wallet(wallet), walletState);
  return { balance: state.balance, held: state.held, available: availableBalance(state).toFixed() };
}
