import { createHash } from 'node:crypto';
import type { EventStore } from '../ports/event-store.ts';
import { noTracing, withTraceparent, type Tracing } from '../ports/tracing.ts';
import { DomainError, invalidInput } from '../domain/errors.ts';
import type { Counterparty, OperationRequested, WalletRef } from '../domain/events.ts';
import { feeFor, type FeeSchedule } from '../domain/fees.ts';
import { hashCashOutCode } from '../domain/cash-out-codes.ts';
import { formatAmount } from '../domain/money.ts';
import type { PartyRef } from '../domain/parties.ts';
import { streams } from '../domain/streams.ts';
import { volumeDayOf } from '../domain/volume-day.ts';
import { KeyedMutex } from '../shared/keyed-mutex.ts';
import { apiKeyDecider, type ActingUser, type ApiKeyRecord, type ApiKeyState } from './api-keys.ts';
import { cashOutConsentDecider } from './cash-out-consent.ts';
import {
  decideCreateOperation,
  repeatOf,
  type CreateOperationOutcome,
  type RecordedResponse,
} from './create-operation.ts';
import { decideOnOperation, operationState, type OperationDecision, type OperationState } from './operations.ts';
import { PartyLookup, type PartyInfo } from './party-lookup.ts';
import {
  deadlineOf,
  loadState,
  notDoneInTime,
  runDecisionCommitted,
  within,
  type CommandContext,
  type InFlightStates,
  type StateCache,
  type StreamRead,
} from './pipeline.ts';
import { type IdempotencyState, idempotencyState, keyVolumeState, walletState } from './wallet-state.ts';
import { isOperationID, newOperationID } from '../domain/operation-ids.ts';

/** A create-operation body after schema validation: amounts normalized to the scale, phones to E.164. */
export type CreateOperationInput =
  | {
      operationType: 'cash-in';
      amount: string;
      phoneTo?: string | undefined;
      merchantToShortCode?: string | undefined;
      memo?: string | null | undefined;
    }
  | {
      operationType: 'cash-out-fulfillment';
      amount: string;
      phoneFrom: string;
      cashOutFulfillmentType: 'cash';
      cashOutFulfillmentID: string;
      memo?: string | null | undefined;
      authorizationCode?: string | undefined;
    }
  | { operationType: 'cash-out'; amount: string; distributorToShortCode: string; memo?: string | null | undefined }
  | { operationType: 'pay-merchant'; amount: string; merchantToShortCode: string; memo?: string | null | undefined }
  | { operationType: 'pay-individual'; amount: string; phoneTo: string; memo?: string | null | undefined };

export interface OperationDeps {
  store: EventStore;
  cache?: StateCache;
  lookup: PartyLookup;
  clock: () => Date;
  assetScale: number;
  feeSchedule: FeeSchedule;
  /** IANA zone whose calendar day bounds a key's max daily volume. */
  volumeTimeZone: string;
  /**
   * The store's time as this process knows it (its clock less the skew it measured against the store's), which
   * alone decides the volume day: a process whose clock runs a day ahead must not open "tomorrow" for a key
   * whose today other processes fill. Default `clock`.
   */
  dayClock?: () => Date;
  /** Creates for one payer (and one key's volume) are decided one at a time in this process, committed together. */
  serialize: { mutex: KeyedMutex; inFlight: InFlightStates };
  /**
   * A create is answered within this many ms (CREATE_DEADLINE_MS), else 503 (src/commands/pipeline.ts). Unset:
   * unbounded.
   */
  deadlineMs?: number;
  /** Told each time a create is decided again after a conflict with another writer (metrics). */
  onConflictRetry?: () => void;
  /**
   * CASH_OUT_CONSENT: `individual-code` requires, on every cash-out-fulfillment, a live one-time code of the
   * paying individual (hashed under `secretsKey`), used with the create. Absent or `none`: the contract's rule.
   */
  cashOutConsent?: { policy: 'none' | 'individual-code'; secretsKey: Buffer };
  /** Tracing (src/ports/tracing.ts): a create continues the request's trace, a decision the operation's. None: off. */
  tracing?: Tracing;
}

export interface IdempotencyRequest {
  /** The client's Idempotency-Key header value. */
  key: string;
  /** SHA-256 over method, path and body. */
  requestHash: string;
  /** The answer the caller gives to the created operation, recorded for a repeat (the write API shapes it). */
  responseFor: (operation: OperationRequested['data']) => RecordedResponse;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const walletOfParty = (party: PartyRef | PartyInfo): WalletRef => ({ kind: party.type, id: party.id });
const counterpartyOf = (party: PartyInfo): Counterparty => ({
  kind: party.type,
  id: party.id,
  name: party.name,
  shortCode: party.shortCode,
});

async function requireIndividual(deps: OperationDeps, field: string, phone: string): Promise<Counterparty> {
  const individual = await deps.lookup.individual(phone);
  if (!individual) throw invalidInput(field, `${field} ${phone} is not a registered individual wallet`);
  return { kind: 'individual', id: individual.phone, name: individual.name };
}

async function requireShortCode(
  deps: OperationDeps,
  field: string,
  type: 'distributor' | 'merchant',
  code: string,
): Promise<PartyInfo> {
  const party = await deps.lookup.byShortCode(type, code);
  if (!party) throw invalidInput(field, `${field} ${code} is not the short code of any ${type}`);
  return party;
}

/** Who pays, who receives, and who the other side is, resolved from the body's phones and short codes. */
async function resolveParties(deps: OperationDeps, party: PartyRef, input: CreateOperationInput) {
  const own = walletOfParty(party);
  switch (input.operationType) {
    case 'cash-in': {
      if (input.phoneTo !== undefined) {
        const counterparty = await requireIndividual(deps, 'phoneTo', input.phoneTo);
        return { payer: own, payee: { kind: 'individual', id: counterparty.id } as WalletRef, counterparty };
      }
      const merchant = await requireShortCode(deps, 'merchantToShortCode', 'merchant', input.merchantToShortCode ?? '');
      return { payer: own, payee: walletOfParty(merchant), counterparty: counterpartyOf(merchant) };
    }
    case 'cash-out-fulfillment': {
      const counterparty = await requireIndividual(deps, 'phoneFrom', input.phoneFrom);
      return { payer: { kind: 'individual', id: counterparty.id } as WalletRef, payee: own, counterparty };
    }
    case 'cash-out': {
      const distributor = await requireShortCode(
        deps,
        'distributorToShortCode',
        'distributor',
        input.distributorToShortCode,
      );
      return { payer: own, payee: walletOfParty(distributor), counterparty: counterpartyOf(distributor) };
    }
    case 'pay-merchant': {
      const merchant = await requireShortCode(deps, 'merchantToShortCode', 'merchant', input.merchantToShortCode);
      if (merchant.id === party.id) throw invalidInput('merchantToShortCode', 'a merchant cannot pay itself');
      return { payer: own, payee: walletOfParty(merchant), counterparty: counterpartyOf(merchant) };
    }
    case 'pay-individual': {
      const counterparty = await requireIndividual(deps, 'phoneTo', input.phoneTo);
      return { payer: own, payee: { kind: 'individual', id: counterparty.id } as WalletRef, counterparty };
    }
  }
}

/**
 * Creates a pending operation for the key's party, with every rule of the contract checked atomically with
 * the append (see decideCreateOperation). A repeat of an idempotent request returns its first response.
 */
export async function createOperation(
  deps: OperationDeps,
  key: ApiKeyRecord,
  input: CreateOperationInput,
  idempotency: IdempotencyRequest | null,
  context: CommandContext,
  /** Which of the key's secrets authenticated the request (src/http/authenticate.ts); absent: the current one. */
  secretGeneration: number = key.secretHolders.length,
): Promise<Exclude<CreateOperationOutcome, { kind: 'refused' }>> {
  const now = deps.clock();
  const createdAt = now.toISOString();
  const idempotencyStream = idempotency ? streams.idempotency(key.keyID, sha256(idempotency.key)) : null;
  // One deadline for the whole create: the look-ups before the decision (a locked table holds them too) and the
  // decision.
  const deadline = deadlineOf(deps);

  // A repeat is answered before anything is looked up again: its answer must not depend on what changed since.
  let idempotencyRead: { state: IdempotencyState; revision: number } | undefined;
  if (idempotencyStream && idempotency) {
    idempotencyRead = await within(loadState(deps, idempotencyStream, idempotencyState), deadline, notDoneInTime);
    const repeat = repeatOf(idempotencyRead.state, idempotency.requestHash);
    if (repeat) return repeat;
  }

  const lookUp = async () =>
    [await resolveParties(deps, key.party, input), await deps.lookup.party(key.party)] as const;
  const [{ payer, payee, counterparty }, own] = await within(lookUp(), deadline, notDoneInTime);
  if (!own) throw new DomainError('NOT_FOUND', 'the API key’s party no longer exists');
  const payerIsOwn = payer.kind === key.party.type && payer.id === key.party.id;
  const fee =
    key.party.type === 'merchant' && input.operationType !== 'cash-in' && input.operationType !== 'cash-out-fulfillment'
      ? feeFor(deps.feeSchedule, input.operationType, input.amount, deps.assetScale)
      : formatAmount(0, deps.assetScale);
  const volumeDay = key.maxDailyVolume !== null ? volumeDayOf(deps.dayClock?.() ?? now, deps.volumeTimeZone) : null;
  const operation: OperationRequested['data'] = {
    operationID: newOperationID(),
    party: key.party,
    keyID: key.keyID,
    secretGeneration,
    operationType: input.operationType,
    amount: input.amount,
    fee,
    payer,
    payee,
    payerName: payerIsOwn ? own.name : counterparty.name,
    payerShortCode: payerIsOwn ? own.shortCode : null,
    counterparty,
    memo: input.memo ?? null,
    cashOutFulfillmentType: input.operationType === 'cash-out-fulfillment' ? input.cashOutFulfillmentType : null,
    cashOutFulfillmentID: input.operationType === 'cash-out-fulfillment' ? input.cashOutFulfillmentID : null,
    volumeDay,
    createdAt,
  };

  const read: Record<string, StreamRead<any>> = { wallet: { stream: streams.wallet(payer), ...walletState } };
  if (volumeDay !== null) read.volume = { stream: streams.keyVolume(key.keyID, volumeDay), ...keyVolumeState };
  // Read just above: the decision takes it as it stands (its append at that revision proves it), no second read.
  if (idempotencyStream)
    read.idempotency = {
      stream: idempotencyStream,
      ...idempotencyState,
      ...(idempotencyRead ? { known: idempotencyRead } : {}),
    };
  // The individual's consent, when the platform requires it: the code is hashed here (the decision stays pure).
  let consent: { phone: string; presentedHash: string | null } | null = null;
  if (deps.cashOutConsent?.policy === 'individual-code' && input.operationType === 'cash-out-fulfillment') {
    const phone = counterparty.id;
    consent = {
      phone,
      presentedHash:
        input.authorizationCode === undefined
          ? null
          : hashCashOutCode(deps.cashOutConsent.secretsKey, phone, input.authorizationCode),
    };
    read.consent = {
      stream: streams.cashOutConsent(phone),
      evolve: cashOutConsentDecider.evolve,
      initialState: cashOutConsentDecider.initialState,
    };
  }

  const tracing = deps.tracing ?? noTracing;
  const attributes = {
    'wallet_ops.operation_id': operation.operationID,
    'wallet_ops.operation_type': operation.operationType,
  };
  // A fresh trace at the API edge: what leaves the platform (the webhook deliveries of this operation) must not
  // carry the caller's trace id to the party's receiver. The caller's trace is linked, never continued.
  return tracing.span(
    'operation CreateOperation',
    { kind: 'server', links: [context.traceparent], attributes },
    async (span) => {
      const { result, positions } = await runDecisionCommitted(deps, {
        ...(deadline === undefined ? {} : { deadline }),
        read,
        decide: (states) =>
          decideCreateOperation(
            {
              operation,
              limits: { maxTransactionAmount: key.maxTransactionAmount, maxDailyVolume: key.maxDailyVolume },
              idempotency:
                idempotencyStream && idempotency
                  ? {
                      stream: idempotencyStream,
                      requestHash: idempotency.requestHash,
                      response: idempotency.responseFor(operation),
                    }
                  : null,
              assetScale: deps.assetScale,
              consent,
              volumeTimeZone: deps.volumeTimeZone,
            },
            states as Parameters<typeof decideCreateOperation>[1],
          ),
        context: withTraceparent(context, span.traceparent),
        ...(deps.onConflictRetry ? { onConflictRetry: deps.onConflictRetry } : {}),
      });
      // A wrong cash-out code: its count is appended, and the create refused.
      if (result.kind === 'refused') throw result.error;
      // Where the operation and its hold sit in the log: this process's reads of them wait (bounded) for their models.
      const position = positions.get(streams.operation(operation.operationID));
      const holdPosition = positions.get(streams.wallet(payer));
      if (result.kind !== 'created' || position === undefined) return result;
      return { ...result, position, ...(holdPosition === undefined ? {} : { holdPosition }) };
    },
  );
}

type DecisionDeps = Pick<OperationDeps, 'store' | 'cache' | 'clock' | 'assetScale' | 'tracing'>;

/**
 * Decides on an operation with the state of the key that created it read in the same decision: who requested
 * the key (for segregation of duties) and whether it is revoked. The key an operation was created with never
 * changes, so it is looked up first to know which key stream to read.
 *
 * The decision continues the operation's trace: its span is a child of the create's (stored with the
 * operation), linked to the deciding request's own trace; its events carry it, for the executor to continue.
 */
/** Where a decision's events landed in the log: the operation's own, and the payer's release (a rejection's). */
export interface DecisionLanded {
  position?: number | undefined;
  walletPosition?: number | undefined;
}

async function decideWithKey(
  deps: DecisionDeps,
  operationID: string,
  command: OperationDecision,
  context: CommandContext,
  landed?: (at: DecisionLanded) => void,
) {
  const operationStream = streams.operation(operationID);
  const { state } = await loadState(deps, operationStream, operationState);
  const keyID = state.status === 'none' ? null : state.operation.keyID;
  const read = {
    operation: { stream: operationStream, ...operationState },
    ...(keyID === null
      ? {}
      : {
          key: {
            stream: streams.apiKey(keyID),
            evolve: apiKeyDecider.evolve,
            initialState: apiKeyDecider.initialState,
          },
        }),
  };
  const created = state.status === 'none' ? undefined : (state.trace.created ?? undefined);
  const tracing = deps.tracing ?? noTracing;
  return tracing.span(
    `operation ${command.type}`,
    {
      parent: created ?? context.traceparent,
      links: created ? [context.traceparent] : [],
      attributes: { 'wallet_ops.operation_id': operationID },
    },
    async (span) => {
      const { result, positions } = await runDecisionCommitted(deps, {
        read: read as { operation: StreamRead<OperationState>; key: StreamRead<ApiKeyState> },
        decide: ({ operation, key }) =>
          decideOnOperation(command, { operation, key: key ?? apiKeyDecider.initialState() }, deps.assetScale),
        context: withTraceparent(context, span.traceparent ?? context.traceparent),
      });
      if (landed && state.status !== 'none')
        landed({
          position: positions.get(operationStream),
          walletPosition: positions.get(streams.wallet(state.operation.payer)),
        });
      return result;
    },
  );
}

export const checkOperationID = (operationID: string) => {
  if (!isOperationID(operationID))
    throw new DomainError('NOT_FOUND', `operation ${operationID.slice(0, 40)} does not exist`);
};

/**
 * A checker approves or rejects a pending operation of their own party. The approver may not be the user who
 * requested the operation's key (nor its requester through another channel), and an operation whose key is
 * revoked cannot be approved.
 */
export async function decideOperation(
  deps: DecisionDeps,
  user: ActingUser,
  operationID: string,
  decision: { type: 'approve' } | { type: 'reject'; reason: string },
  context: CommandContext,
  /** Told where the decision landed in the log, once committed (the console's read-your-writes). */
  landed?: (at: DecisionLanded) => void,
): Promise<{ operationID: string; state: string }> {
  checkOperationID(operationID);
  const now = deps.clock().toISOString();
  return decideWithKey(
    deps,
    operationID,
    decision.type === 'approve'
      ? { type: 'ApproveOperation', data: { operationID, by: user, now } }
      : { type: 'RejectOperation', data: { operationID, by: user, reason: decision.reason, now } },
    context,
    landed,
  );
}

/**
 * The key-revocation consumer's command: rejects the operation, releasing what it holds, if it is still
 * pending and its key is revoked (both read in the decision); otherwise changes nothing and says what it is.
 */
export async function rejectOperationOfRevokedKey(
  deps: DecisionDeps,
  operationID: string,
  context: CommandContext,
): Promise<{ operationID: string; state: string }> {
  checkOperationID(operationID);
  return decideWithKey(
    deps,
    operationID,
    { type: 'RejectOperationOfRevokedKey', data: { operationID, now: deps.clock().toISOString() } },
    context,
  );
}

/**
 * The key-revocation consumer's sweep: rejects the operation, releasing what it holds, if it is still pending
 * and its key (not revoked) has expired at the decision's time (both read in the decision); otherwise changes
 * nothing. Two sweeps of the same operation reject it once: the second decision finds it rejected.
 */
export async function rejectOperationOfExpiredKey(
  deps: DecisionDeps,
  operationID: string,
  context: CommandContext,
): Promise<{ operationID: string; state: string }> {
  checkOperationID(operationID);
  return decideWithKey(
    deps,
    operationID,
    { type: 'RejectOperationOfExpiredKey', data: { operationID, now: deps.clock().toISOString() } },
    context,
  );
}
