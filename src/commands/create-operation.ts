import type {
  CashOutConsentEvent,
  IdempotentRequestRecorded,
  OperationRequested,
  WalletEvent,
} from '../domain/events.ts';
import { volumeDayWindow } from '../domain/volume-day.ts';
import { DomainError } from '../domain/errors.ts';
import { Decimal } from '../domain/money.ts';
import { streams } from '../domain/streams.ts';
import { cashOutConsentDecider, consentRefusal, type CashOutConsentState } from './cash-out-consent.ts';
import type { Decision, StreamWrite } from './pipeline.ts';
import { availableBalance, type IdempotencyState, type KeyVolumeState, type WalletState } from './wallet-state.ts';

/** How long an idempotency key holds its first response at least (it holds it for as long as its record is kept). */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

export const IDEMPOTENCY_KEY_REUSED_DETAIL = 'this Idempotency-Key was already used with a different request';

export interface CreateOperation {
  /** The operation, fully validated and resolved by the handler (counterparty names, fee, payer, day). */
  operation: OperationRequested['data'];
  limits: { maxTransactionAmount: string | null; maxDailyVolume: string | null };
  /**
   * With an Idempotency-Key: its stream, the request's hash, and the answer the write API gives to this create
   * (shaped there), recorded so that a repeat gets the same answer.
   */
  idempotency: { stream: string; requestHash: string; response: RecordedResponse } | null;
  assetScale: number;
  /**
   * CASH_OUT_CONSENT=individual-code, for a cash-out-fulfillment: the paying individual and the hash of the code
   * the request carried (null when none). null when no consent is required (the contract's default).
   */
  consent: { phone: string; presentedHash: string | null } | null;
  /** VOLUME_TIME_ZONE (UTC when absent): a daily-volume refusal says when the key's day runs in it. */
  volumeTimeZone?: string;
}

export interface CreateOperationStates {
  wallet: WalletState;
  volume?: KeyVolumeState;
  idempotency?: IdempotencyState;
  consent?: CashOutConsentState;
}

/** The answer an idempotent request got the first time, as recorded: an HTTP status and body. */
export type RecordedResponse = IdempotentRequestRecorded['data']['response'];

/**
 * The decision's result: the operation created (the write API shapes its answer), or the recorded first answer,
 * or a refusal that had something to record first (a wrong cash-out code counted): the caller throws it once appended.
 */
export type CreateOperationOutcome =
  | {
      kind: 'created';
      operation: OperationRequested['data'];
      /** The log position of its OperationRequested, once appended. */ position?: number;
      /** The log position of the payer's FundsHeld, once appended. */ holdPosition?: number;
    }
  | { kind: 'replayed'; response: RecordedResponse }
  | { kind: 'refused'; error: DomainError };

/**
 * The recorded idempotent request that answers for its key, or null. A record answers for as long as it exists:
 * its age is never judged by comparing its `recordedAt` (another process's clock) with this process's clock, so
 * that an API process whose clock runs a day ahead cannot take a retry for a new request and create a second
 * operation. Nothing removes records today; a sweep that ever does keeps IDEMPOTENCY_WINDOW_MS plus a margin
 * for clocks.
 */
function liveIdempotencyRecord(state: IdempotencyState | undefined) {
  return state?.status === 'recorded' ? state : null;
}

/**
 * The one idempotency decision: a repeat of a recorded request (same key, same request hash) gets its first
 * response again; the same key with another request is refused; null: the key is new, the create goes on.
 */
export function repeatOf(
  state: IdempotencyState | undefined,
  requestHash: string,
): { kind: 'replayed'; response: RecordedResponse } | null {
  const record = liveIdempotencyRecord(state);
  if (record === null) return null;
  if (record.requestHash !== requestHash)
    throw new DomainError('IDEMPOTENCY_KEY_REUSED', IDEMPOTENCY_KEY_REUSED_DETAIL);
  return { kind: 'replayed', response: record.response };
}

/**
 * The decision behind the create-operation endpoints, pure: the contract's rules 2 to 4 checked against
 * the states read, and every stream they touch written together, so that no two concurrent creates can
 * both pass a limit that only one of them fits:
 *   operation-<id>            OperationRequested (the stream must not exist)
 *   wallet-<payer>            FundsHeld: amount + fee set aside from the available balance
 *   keyVolume-<key>_<day>     VolumeReserved (only for a key with a max daily volume)
 *   idempotency-<key>_<hash>  IdempotentRequestRecorded (only with an Idempotency-Key)
 *   cashOutConsent-<phone>    CashOutCodeUsed (only when the individual's consent is required): checked first,
 *                             so that a caller without it learns nothing of the individual's balance; a wrong
 *                             code writes only its count here, and the create is refused
 */
export function decideCreateOperation(
  command: CreateOperation,
  states: CreateOperationStates,
): Decision<CreateOperationOutcome> {
  const { operation, limits } = command;
  const repeat = command.idempotency && repeatOf(states.idempotency, command.idempotency.requestHash);
  if (repeat) return { writes: [], result: repeat };

  const consent: CashOutConsentEvent[] = command.consent
    ? cashOutConsentDecider.decide(
        {
          type: 'UseCashOutCode',
          data: {
            phone: command.consent.phone,
            presentedHash: command.consent.presentedHash,
            amount: operation.amount,
            operationID: operation.operationID,
            now: operation.createdAt,
          },
        },
        states.consent ?? cashOutConsentDecider.initialState(),
      )
    : [];
  const refused = consentRefusal(consent);
  if (refused && command.consent) {
    return {
      writes: [{ stream: streams.cashOutConsent(command.consent.phone), events: consent }],
      result: { kind: 'refused', error: refused },
    };
  }

  // Amounts in a refusal's detail are printed at the asset scale, as every amount the API shows.
  const scaled = (value: Decimal.Value) => new Decimal(value).toFixed(command.assetScale);
  const amount = new Decimal(operation.amount);
  if (limits.maxTransactionAmount !== null && amount.gt(limits.maxTransactionAmount)) {
    throw new DomainError(
      'TRANSACTION_LIMIT_EXCEEDED',
      `amount ${scaled(amount)} exceeds this key's max transaction amount of ${scaled(limits.maxTransactionAmount)}`,
    );
  }
  if (limits.maxDailyVolume !== null && states.volume && amount.plus(states.volume.total).gt(limits.maxDailyVolume)) {
    const left = Decimal.max(0, new Decimal(limits.maxDailyVolume).minus(states.volume.total));
    throw new DomainError(
      'DAILY_VOLUME_EXCEEDED',
      `this operation would exceed the key's max daily volume of ${scaled(limits.maxDailyVolume)} ` +
        `(${scaled(left)} left for ${operation.volumeDay}; the day runs ` +
        `${volumeDayWindow(new Date(operation.createdAt), command.volumeTimeZone ?? 'UTC')})`,
    );
  }
  const debit = amount.plus(operation.fee);
  const available = availableBalance(states.wallet);
  if (available.lt(debit)) {
    // Names the available amount (the balance endpoints' `available`), which is what a client can compare.
    throw new DomainError(
      'INSUFFICIENT_BALANCE',
      `the payer’s available balance of ${scaled(available)} does not cover the amount and its fee (${scaled(debit)})`,
    );
  }

  const { operationID } = operation;
  const held: WalletEvent = {
    type: 'FundsHeld',
    data: { wallet: operation.payer, operationID, amount: debit.toFixed(command.assetScale) },
  };
  const writes: StreamWrite[] = [
    {
      stream: streams.operation(operationID),
      events: [{ type: 'OperationRequested', data: operation }],
      expectedRevision: 'no_stream',
    },
    { stream: streams.wallet(operation.payer), events: [held] },
  ];
  if (limits.maxDailyVolume !== null && operation.volumeDay !== null && operation.keyID !== null) {
    writes.push({
      stream: streams.keyVolume(operation.keyID, operation.volumeDay),
      events: [
        {
          type: 'VolumeReserved',
          data: { keyID: operation.keyID, day: operation.volumeDay, operationID, amount: operation.amount },
        },
      ],
    });
  }
  if (command.consent) writes.push({ stream: streams.cashOutConsent(command.consent.phone), events: consent });
  if (command.idempotency) {
    writes.push({
      stream: command.idempotency.stream,
      events: [
        {
          type: 'IdempotentRequestRecorded',
          data: {
            keyID: operation.keyID,
            requestHash: command.idempotency.requestHash,
            response: command.idempotency.response,
            recordedAt: operation.createdAt,
          },
        },
      ],
    });
  }
  return { writes, result: { kind: 'created', operation } };
}
