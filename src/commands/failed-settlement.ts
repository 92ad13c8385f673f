import type {
  OperationEvent,
  OperationRequested,
  OperationSettledFromLedger,
  OperationSettlementRequested,
} from '../domain/events.ts';
import { DomainError } from '../domain/errors.ts';
import { Decimal } from '../domain/money.ts';
import { statusAfter, type OperationStatus } from '../domain/operation-status.ts';
import { streams } from '../domain/streams.ts';
import { requiredText } from '../domain/text.ts';
import type { EventStore } from '../ports/event-store.ts';
import { walletAddress, type Ledger, type LedgerFate, type LedgerLeg } from '../ports/ledger.ts';
import type { Decider } from './decider.ts';
import { assertNever } from './decider.ts';
import { checkOperationID } from './operation-handlers.ts';
import { movementWrites } from './operations.ts';
import { runDecision, type CommandContext, type StreamWrite } from './pipeline.ts';

/**
 * Settling an operation recorded as failed whose money moved on the ledger anyway (`audit verify`'s
 * failedButMoved: a paused executor's transfer that landed after another recorded the failure, before the
 * ledger arbitrated fates). Maker-checker: a platform administrator asks, naming why; another approves; the
 * approval completes the operation as the ledger has it. Both read the ledger's fate of the operation: only an
 * executed transaction, the one asked about, is settled.
 */
export type SettlementState =
  | { status: 'none' }
  | {
      status: OperationStatus;
      operation: OperationRequested['data'];
      requested: OperationSettlementRequested['data'] | null;
    };

/** Who acts: a console user, who must be a platform administrator. */
export interface SettlingUser {
  userID: string;
  platformAdmin: boolean;
}

export type SettlementCommand =
  | {
      type: 'RequestFailedSettlement';
      data: { operationID: string; by: SettlingUser; reason: string; fate: LedgerFate; now: string };
    }
  | { type: 'ApproveFailedSettlement'; data: { operationID: string; by: SettlingUser; fate: LedgerFate; now: string } };

type SettlementEvent = OperationSettlementRequested | OperationSettledFromLedger;

/**
 * The ledger-side wallet operation of a transaction (a chain's hash comes as 0x…, the embedded ledger's id as bare
 * hex).
 */
export const walletOperationIDOf = (blockchainID: string) => `wo_${blockchainID.replace(/^0x/, '').slice(0, 32)}`;

/** The legs the operation asked for: payer to payee, and the fee to the platform's fee wallet. */
export function operationLegs(operation: OperationRequested['data']): LedgerLeg[] {
  const legs: LedgerLeg[] = [
    { from: walletAddress(operation.payer), to: walletAddress(operation.payee), amount: operation.amount },
  ];
  if (new Decimal(operation.fee).gt(0))
    legs.push({ from: walletAddress(operation.payer), to: 'platform:fees', amount: operation.fee });
  return legs;
}

const sameLegs = (a: LedgerLeg[], b: LedgerLeg[]) =>
  a.length === b.length &&
  a.every((leg, i) => leg.from === b[i]!.from && leg.to === b[i]!.to && new Decimal(leg.amount).eq(b[i]!.amount));

function requireFailed(state: SettlementState, command: SettlementCommand) {
  const { operationID, by } = command.data;
  if (!by.platformAdmin)
    throw new DomainError('ROLE_REQUIRED', 'settling a failed operation needs a platform administrator');
  if (state.status === 'none') throw new DomainError('NOT_FOUND', `operation ${operationID} does not exist`);
  if (state.status !== 'failed')
    throw new DomainError(
      'WRONG_STATE',
      `operation ${operationID} is ${state.status}, not failed: there is nothing to settle`,
    );
  return state;
}

/** The transaction the ledger has for the operation, when it is the operation's own transfer. */
function requireExecuted(operation: OperationRequested['data'], fate: LedgerFate) {
  const { operationID } = operation;
  if (fate.kind !== 'executed')
    throw new DomainError(
      'WRONG_STATE',
      `the ledger has no transaction for operation ${operationID} ` +
        `(${fate.kind === 'voided' ? `voided at ${fate.voidedAt}` : 'none'}): no money moved, the failure stands`,
    );
  if (!sameLegs(fate.tx.legs, operationLegs(operation))) {
    throw new DomainError(
      'WRONG_STATE',
      `ledger transaction ${fate.tx.sequenceNumber} moves ${JSON.stringify(fate.tx.legs)}, not what operation ` +
        `${operationID} asked for: settle it by hand`,
    );
  }
  return fate.tx;
}

export const settlementDecider: Decider<SettlementCommand, SettlementState, OperationEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve(state, event) {
    if (event.type === 'OperationRequested') return { status: 'pending', operation: event.data, requested: null };
    if (state.status === 'none') return state;
    const status = statusAfter(event.type);
    if (event.type === 'OperationSettlementRequested') return { ...state, status, requested: event.data };
    return { ...state, status, requested: null };
  },
  decide(command, state): SettlementEvent[] {
    const { operationID, by, fate, now } = command.data;
    const failed = requireFailed(state, command);
    switch (command.type) {
      case 'RequestFailedSettlement': {
        if (failed.requested)
          throw new DomainError(
            'WRONG_STATE',
            `a settlement of operation ${operationID} is already waiting for approval (asked by ` +
              `${failed.requested.requestedBy})`,
          );
        const reason = requiredText('reason', command.data.reason, 500);
        const tx = requireExecuted(failed.operation, fate);
        return [
          {
            type: 'OperationSettlementRequested',
            data: {
              operationID,
              requestedBy: by.userID,
              reason,
              sequenceNumber: tx.sequenceNumber,
              blockchainID: tx.blockchainID,
              requestedAt: now,
            },
          },
        ];
      }
      case 'ApproveFailedSettlement': {
        const requested = failed.requested;
        if (!requested)
          throw new DomainError(
            'WRONG_STATE',
            `no settlement of operation ${operationID} waits for approval: ask for one with settle-failed request`,
          );
        if (requested.requestedBy === by.userID)
          throw new DomainError(
            'SAME_USER',
            `the settlement of operation ${operationID} was asked by this same user: another platform ` +
              'administrator approves it',
          );
        const tx = requireExecuted(failed.operation, fate);
        if (tx.sequenceNumber !== requested.sequenceNumber || tx.blockchainID !== requested.blockchainID) {
          throw new DomainError(
            'WRONG_STATE',
            `the ledger's transaction for operation ${operationID} (${tx.sequenceNumber}) is not the one the ` +
              `settlement asked about (${requested.sequenceNumber})`,
          );
        }
        return [
          {
            type: 'OperationSettledFromLedger',
            data: {
              operationID,
              sequenceNumber: tx.sequenceNumber,
              blockchainID: tx.blockchainID,
              walletOperationID: walletOperationIDOf(tx.blockchainID),
              legs: tx.legs,
              requestedBy: requested.requestedBy,
              approvedBy: by.userID,
              reason: requested.reason,
              settledAt: now,
            },
          },
        ];
      }
      default:
        return assertNever(command);
    }
  },
};

/**
 * The money movements of a settlement, as a completion writes them (src/executor/workflow.ts completionWrites),
 * except that the payer's hold is not settled: the failure released it.
 */
/** The settlement's money movements: a completion's, the hold having been released by the failure. */
export function settlementWalletWrites(operation: OperationRequested['data'], assetScale: number): StreamWrite[] {
  return movementWrites(operation, '0', assetScale);
}

export interface SettlementDeps {
  store: EventStore;
  ledger: Pick<Ledger, 'fateOf'>;
  clock: () => Date;
  assetScale: number;
}

/**
 * Asks (RequestFailedSettlement) or approves (ApproveFailedSettlement): the ledger's fate is read first, then decided
 * on.
 */
export async function settleFailed(
  deps: SettlementDeps,
  command: { type: SettlementCommand['type']; operationID: string; by: SettlingUser; reason?: string },
  context: CommandContext,
): Promise<SettlementEvent> {
  const { operationID } = command;
  checkOperationID(operationID);
  const fate = await deps.ledger.fateOf(operationID);
  const now = deps.clock().toISOString();
  const decided: SettlementCommand =
    command.type === 'RequestFailedSettlement'
      ? { type: command.type, data: { operationID, by: command.by, reason: command.reason ?? '', fate, now } }
      : { type: command.type, data: { operationID, by: command.by, fate, now } };
  return runDecision(deps, {
    read: {
      operation: {
        stream: streams.operation(operationID),
        evolve: settlementDecider.evolve,
        initialState: settlementDecider.initialState,
      },
    },
    decide: ({ operation }) => {
      const [event] = settlementDecider.decide(decided, operation) as [SettlementEvent];
      const moves =
        event.type === 'OperationSettledFromLedger' && operation.status !== 'none'
          ? settlementWalletWrites(operation.operation, deps.assetScale)
          : [];
      // The settlement before its movements, in one append: the audit reads the movements as the completed operation's.
      return { writes: [{ stream: streams.operation(operationID), events: [event] }, ...moves], result: event };
    },
    context,
  });
}
