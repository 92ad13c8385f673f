import { DomainError, invalidInput } from '../domain/errors.ts';
import type { OperationRequested } from '../domain/events.ts';
import { formatAmount, parsePositiveAmount } from '../domain/money.ts';
import type { PartyRef } from '../domain/parties.ts';
import { normalizePhone } from '../domain/phone.ts';
import { streams } from '../domain/streams.ts';
import { requiredText, shortCode } from '../domain/text.ts';
import { decideCreateOperation } from './create-operation.ts';
import type { PartyLookup } from './party-lookup.ts';
import { runDecision, type CommandContext, type CommandPipelineDeps } from './pipeline.ts';
import { walletState } from './wallet-state.ts';
import { newOperationID } from '../domain/operation-ids.ts';

/**
 * Operations that reach the executor from other channels, without a checker: they are requested and
 * approved in the same atomic append, and then executed like every other operation.
 *  - Treasury issuance: an operator issues e-money to a distributor's float, from the platform's issuing
 *    account (the actor in the metadata is the operator).
 *  - An individual's payment to a merchant, authorized by the individual in the wallet app: it holds the
 *    individual's funds like any payer's, so it can never overdraw them.
 */
export interface ChannelDeps extends CommandPipelineDeps {
  lookup: PartyLookup;
  clock: () => Date;
  assetScale: number;
}

export async function issueFloat(
  deps: ChannelDeps,
  input: { to: PartyRef; amount: unknown },
  context: CommandContext,
): Promise<{ operationID: string }> {
  if (input.to.type !== 'distributor') throw invalidInput('to', 'e-money is issued to a distributor’s float');
  const amount = parsePositiveAmount('amount', input.amount, deps.assetScale);
  const distributor = await deps.lookup.party(input.to);
  if (!distributor) throw new DomainError('NOT_FOUND', `distributor ${input.to.id} does not exist`, 'to');
  const now = deps.clock().toISOString();
  const operationID = newOperationID();
  const operation: OperationRequested['data'] = {
    operationID,
    party: null,
    keyID: null,
    operationType: 'issue',
    amount,
    fee: formatAmount(0, deps.assetScale),
    payer: { kind: 'platform', id: 'issuance' },
    payee: { kind: 'distributor', id: distributor.id },
    payerName: 'Platform issuance',
    payerShortCode: null,
    counterparty: { kind: 'distributor', id: distributor.id, name: distributor.name, shortCode: distributor.shortCode },
    memo: null,
    cashOutFulfillmentType: null,
    cashOutFulfillmentID: null,
    volumeDay: null,
    createdAt: now,
  };
  await deps.store.appendMulti([
    {
      stream: streams.operation(operationID),
      expectedRevision: 'no_stream',
      events: [
        { type: 'OperationRequested', data: operation, metadata: { ...context } },
        {
          type: 'OperationApproved',
          data: { operationID, approvedBy: context.actor, approvedAt: now },
          metadata: { ...context },
        },
      ],
    },
  ]);
  return { operationID };
}

export async function individualPay(
  deps: ChannelDeps,
  input: { from: unknown; toMerchantShortCode: unknown; amount: unknown; memo?: unknown },
  context: CommandContext,
): Promise<{ operationID: string }> {
  const phone = normalizePhone('from', input.from);
  const code = shortCode('to-merchant', input.toMerchantShortCode);
  const amount = parsePositiveAmount('amount', input.amount, deps.assetScale);
  const memo = input.memo === undefined || input.memo === null ? null : requiredText('memo', input.memo, 256);
  const individual = await deps.lookup.individual(phone);
  if (!individual) throw invalidInput('from', `${phone} is not a registered individual wallet`);
  const merchant = await deps.lookup.byShortCode('merchant', code);
  if (!merchant) throw invalidInput('to-merchant', `${code} is not the short code of any merchant`);
  const now = deps.clock().toISOString();
  const operationID = newOperationID();
  const payer = { kind: 'individual', id: phone } as const;
  const operation: OperationRequested['data'] = {
    operationID,
    party: null,
    keyID: null,
    operationType: 'individual-payment',
    amount,
    fee: formatAmount(0, deps.assetScale),
    payer,
    payee: { kind: 'merchant', id: merchant.id },
    payerName: individual.name,
    payerShortCode: null,
    counterparty: { kind: 'merchant', id: merchant.id, name: merchant.name, shortCode: merchant.shortCode },
    memo,
    cashOutFulfillmentType: null,
    cashOutFulfillmentID: null,
    volumeDay: null,
    createdAt: now,
  };
  // The same decision as an API create (the balance rule and the hold), then approved at once.
  await runDecision(deps, {
    read: { wallet: { stream: streams.wallet(payer), ...walletState } },
    decide: (states) => {
      const decision = decideCreateOperation(
        {
          operation,
          limits: { maxTransactionAmount: null, maxDailyVolume: null },
          idempotency: null,
          assetScale: deps.assetScale,
          consent: null,
        },
        states,
      );
      const [own, ...others] = decision.writes;
      const approved = { type: 'OperationApproved', data: { operationID, approvedBy: context.actor, approvedAt: now } };
      return { ...decision, writes: [{ ...own!, events: [...own!.events, approved] }, ...others] };
    },
    context,
  });
  return { operationID };
}
