import { describe, expect, it } from 'vitest';
import type { OperationRequested } from '../../src/domain/events.ts';
import { operationState, type OperationState } from '../../src/commands/operations.ts';
import type { OperationStatus } from '../../src/domain/operation-status.ts';
import {
  afterAnswer,
  afterVoid,
  answerOfError,
  claimEvent,
  completionWrites,
  decideClaim,
  failureWrites,
  ledgerQuestion,
  legsOf,
  nextStep,
  type ClaimSighting,
  type Failure,
  type LedgerAnswer,
  type LedgerStep,
  type Outcome,
  type OutcomeContext,
  type WorkflowSettings,
} from '../../src/executor/workflow.ts';
import {
  LedgerDuplicateError,
  LedgerRejectedError,
  LedgerUnavailableError,
  LedgerVoidedError,
  type LedgerTransaction,
} from '../../src/ports/ledger.ts';

/**
 * The executor's pure workflow, given / when / then: the next step from an operation's state, the legs of
 * its ledger transaction, and what a completion or a failure writes.
 */

const SCALE = 2;
const NOW = '2026-03-01T12:00:00.000Z';
const EARLIER = '2026-03-01T11:59:59.000Z';
const LATER = '2026-03-01T12:00:05.000Z';
const settings: WorkflowSettings = { executorID: 'exec-A', maxAttempts: 3 };

const merchantOp = (overrides: Partial<OperationRequested['data']> = {}): OperationRequested['data'] => ({
  operationID: 'op_0123456789abcdef0123456789abcdef',
  party: { type: 'merchant', id: 'm-1' },
  keyID: 'key-1',
  operationType: 'pay-merchant',
  amount: '100.00',
  fee: '1.50',
  payer: { kind: 'merchant', id: 'm-1' },
  payee: { kind: 'merchant', id: 'm-2' },
  payerName: 'Shop One',
  payerShortCode: '111',
  counterparty: { kind: 'merchant', id: 'm-2', name: 'Shop Two', shortCode: '222' },
  memo: null,
  cashOutFulfillmentType: null,
  cashOutFulfillmentID: null,
  volumeDay: null,
  createdAt: EARLIER,
  ...overrides,
});

const issueOp = (overrides: Partial<OperationRequested['data']> = {}): OperationRequested['data'] => ({
  operationID: 'op_fedcba9876543210fedcba9876543210',
  party: null,
  keyID: null,
  operationType: 'issue',
  amount: '500.00',
  fee: '0.00',
  payer: { kind: 'platform', id: 'issuance' },
  payee: { kind: 'distributor', id: 'd-1' },
  payerName: 'Platform issuance',
  payerShortCode: null,
  counterparty: { kind: 'distributor', id: 'd-1', name: 'Dist', shortCode: '333' },
  memo: null,
  cashOutFulfillmentType: null,
  cashOutFulfillmentID: null,
  volumeDay: null,
  createdAt: EARLIER,
  ...overrides,
});

const tx = (operationID: string, overrides: Partial<LedgerTransaction> = {}): LedgerTransaction => ({
  blockchainID: 'ab'.repeat(32),
  sequenceNumber: 42,
  operationID,
  legs: [],
  createdAt: '2026-03-01T12:00:01.000Z',
  ...overrides,
});

/** The state after these events, folded by the real evolve. */
function given(...events: Parameters<typeof operationState.evolve>[1][]): OperationState {
  return events.reduce(operationState.evolve, operationState.initialState());
}

const requested = (data = merchantOp()) => ({ type: 'OperationRequested' as const, data });
const approved = (operationID = merchantOp().operationID) => ({
  type: 'OperationApproved' as const,
  data: { operationID, approvedBy: 'user-c', approvedAt: EARLIER },
});
const claimed = (executorID: string, attempt: number, leaseUntil: string, operationID = merchantOp().operationID) => ({
  type: 'OperationExecutionStarted' as const,
  data: { operationID, executorID, attempt, leaseUntil, startedAt: EARLIER },
});

/** A state with the given status, folded from a plausible history. */
function stateWithStatus(status: OperationStatus): OperationState {
  const id = merchantOp().operationID;
  switch (status) {
    case 'pending':
      return given(requested());
    case 'approved':
      return given(requested(), approved());
    case 'rejected':
      return given(requested(), {
        type: 'OperationRejected',
        data: { operationID: id, rejectedBy: 'user-c', reason: 'no', rejectedAt: EARLIER },
      });
    case 'executing':
      return given(requested(), approved(), claimed('exec-A', 1, LATER));
    case 'submitted':
      return given(requested(), approved(), claimed('exec-A', 1, LATER), {
        type: 'OperationSubmitted',
        data: { operationID: id, sequenceNumber: 7, submittedAt: NOW },
      });
    case 'completed':
      return given(
        requested(),
        approved(),
        claimed('exec-A', 1, LATER),
        { type: 'OperationSubmitted', data: { operationID: id, sequenceNumber: 7, submittedAt: NOW } },
        {
          type: 'OperationCompleted',
          data: {
            operationID: id,
            blockchainID: 'ab'.repeat(32),
            walletOperationID: `wo_${'ab'.repeat(16)}`,
            sequenceNumber: 7,
            completedAt: NOW,
          },
        },
      );
    case 'failed':
      return given(requested(), approved(), claimed('exec-A', 1, LATER), {
        type: 'OperationFailed',
        data: { operationID: id, lastError: 'boom', failedAt: NOW },
      });
  }
}

/** This process has just seen the claim (a live holder's), or has seen it unchanged for a whole lease (a dead one's). */
const JUST_SEEN = { unchangedForMs: 0, leaseMs: 1000 };
const UNCHANGED_FOR_A_LEASE = { unchangedForMs: 1000, leaseMs: 1000 };
const A_DAY = 24 * 3600_000;
const dayAfter = (iso: string) => new Date(Date.parse(iso) + A_DAY).toISOString();
const dayBefore = (iso: string) => new Date(Date.parse(iso) - A_DAY).toISOString();

describe('nextStep', () => {
  it('an operation that does not exist: ignore', () => {
    expect(nextStep(operationState.initialState(), settings, JUST_SEEN)).toEqual({ kind: 'ignore' });
  });

  it.each<[OperationStatus, string]>([
    ['pending', 'not approved yet'],
    ['rejected', 'a checker refused it'],
    ['submitted', 'the ledger has it and completion follows'],
    ['completed', 'already settled'],
    ['failed', 'already settled'],
  ])('%s (%s): ignore', (status) => {
    const state = stateWithStatus(status);
    expect(state.status).toBe(status);
    expect(nextStep(state, settings, JUST_SEEN)).toEqual({ kind: 'ignore' });
  });

  it('approved and unclaimed: claim, attempt 1', () => {
    expect(nextStep(stateWithStatus('approved'), settings, JUST_SEEN)).toEqual({ kind: 'claim', attempt: 1 });
  });

  it('our own claim just seen (a restart or a retry): recover with the next attempt at once', () => {
    const state = given(requested(), approved(), claimed('exec-A', 1, LATER));
    expect(nextStep(state, settings, JUST_SEEN)).toEqual({ kind: 'recover', attempt: 2 });
  });

  it('our own claim seen unchanged for a lease: recover', () => {
    const state = given(requested(), approved(), claimed('exec-A', 2, EARLIER));
    expect(nextStep(state, settings, UNCHANGED_FOR_A_LEASE)).toEqual({ kind: 'recover', attempt: 3 });
  });

  it("another executor's claim seen unchanged for 400 of 1,000 ms: wait the 600 ms left", () => {
    const state = given(requested(), approved(), claimed('exec-B', 1, LATER));
    expect(nextStep(state, settings, { unchangedForMs: 400, leaseMs: 1000 })).toEqual({ kind: 'wait', forMs: 600 });
  });

  it("another executor's claim seen unchanged for a whole lease: take over with the next attempt (recover asks the ledger first)", () => {
    const state = given(requested(), approved(), claimed('exec-B', 1, EARLIER));
    expect(nextStep(state, settings, UNCHANGED_FOR_A_LEASE)).toEqual({ kind: 'recover', attempt: 2 });
  });

  it("when another executor's claim says its lease ended a day ago (our clock a day ahead of its), then a claim just seen is still waited for", () => {
    const state = given(requested(), approved(), claimed('exec-B', 1, dayBefore(NOW)));
    expect(nextStep(state, settings, JUST_SEEN)).toEqual({ kind: 'wait', forMs: 1000 });
  });

  it("when another executor's claim says its lease runs a day longer (its clock a day ahead), then a claim unchanged for a lease is taken over", () => {
    const state = given(requested(), approved(), claimed('exec-B', 1, dayAfter(NOW)));
    expect(nextStep(state, settings, UNCHANGED_FOR_A_LEASE)).toEqual({ kind: 'recover', attempt: 2 });
  });

  it('the latest claim counts: a takeover of our claim by another executor makes us wait for its lease', () => {
    const state = given(requested(), approved(), claimed('exec-A', 1, EARLIER), claimed('exec-B', 2, LATER));
    expect(nextStep(state, settings, JUST_SEEN)).toEqual({ kind: 'wait', forMs: 1000 });
  });

  it('attempts spent on our own claim: give up', () => {
    const state = given(requested(), approved(), claimed('exec-A', 3, LATER));
    expect(nextStep(state, settings, JUST_SEEN)).toEqual({ kind: 'give-up', attempt: 4 });
  });

  it("attempts spent on another executor's claim unchanged for a lease: give up", () => {
    const state = given(requested(), approved(), claimed('exec-B', 3, EARLIER));
    expect(nextStep(state, settings, UNCHANGED_FOR_A_LEASE)).toEqual({ kind: 'give-up', attempt: 4 });
  });

  it("attempts spent but another executor's claim just seen: wait for it first", () => {
    const state = given(requested(), approved(), claimed('exec-B', 3, LATER));
    expect(nextStep(state, settings, JUST_SEEN)).toEqual({ kind: 'wait', forMs: 1000 });
  });

  it('the last allowed attempt is still a recover', () => {
    const state = given(requested(), approved(), claimed('exec-A', 2, LATER));
    expect(nextStep(state, settings, JUST_SEEN)).toEqual({ kind: 'recover', attempt: 3 });
  });

  it('maxAttempts 1: after the first claim there is no other attempt', () => {
    const state = given(requested(), approved(), claimed('exec-A', 1, LATER));
    expect(nextStep(state, { ...settings, maxAttempts: 1 }, JUST_SEEN)).toEqual({ kind: 'give-up', attempt: 2 });
  });
});

describe('claimEvent', () => {
  it('claims for this executor, with the lease from now', () => {
    expect(claimEvent('op_1', 'exec-A', 2, new Date(NOW), 1500)).toEqual({
      type: 'OperationExecutionStarted',
      data: {
        operationID: 'op_1',
        executorID: 'exec-A',
        attempt: 2,
        leaseUntil: '2026-03-01T12:00:01.500Z',
        startedAt: NOW,
      },
    });
  });
});

describe('decideClaim', () => {
  const op = merchantOp().operationID;
  const claimAt = (executorID: string, attempt: number) => claimEvent(op, executorID, attempt, new Date(NOW), 1000);

  it.each<[string, OperationState, ReturnType<typeof decideClaim>, ClaimSighting?]>([
    [
      'approved and unclaimed: claim attempt 1',
      stateWithStatus('approved'),
      { step: { kind: 'claim', attempt: 1 }, events: [claimAt('exec-A', 1)] },
    ],
    [
      'our own earlier claim: claim again as the next attempt',
      given(requested(), approved(), claimed('exec-A', 1, LATER)),
      { step: { kind: 'recover', attempt: 2 }, events: [claimAt('exec-A', 2)] },
    ],
    [
      "another executor's claim unchanged for a lease: take it over",
      given(requested(), approved(), claimed('exec-B', 2, LATER)),
      { step: { kind: 'recover', attempt: 3 }, events: [claimAt('exec-A', 3)] },
      UNCHANGED_FOR_A_LEASE,
    ],
    [
      "another executor's claim just seen, whatever its leaseUntil: no claim, wait",
      given(requested(), approved(), claimed('exec-B', 1, EARLIER)),
      { step: { kind: 'wait', forMs: 1000 }, events: [] },
      JUST_SEEN,
    ],
    [
      'attempts spent: no claim, give up',
      given(requested(), approved(), claimed('exec-A', 3, LATER)),
      { step: { kind: 'give-up', attempt: 4 }, events: [] },
    ],
    ['settled: nothing', stateWithStatus('completed'), { step: { kind: 'ignore' }, events: [] }],
    ['unknown operation: nothing', operationState.initialState(), { step: { kind: 'ignore' }, events: [] }],
  ])('given %s', (_, state, expected, sighting = JUST_SEEN) => {
    expect(decideClaim(state, settings, new Date(NOW), sighting)).toEqual(expected);
  });
});

describe('what to ask the ledger', () => {
  it.each<[LedgerStep, ReturnType<typeof ledgerQuestion>]>([
    [{ kind: 'claim', attempt: 1 }, 'submit'],
    [{ kind: 'recover', attempt: 2 }, 'lookup-then-submit'],
    [{ kind: 'give-up', attempt: 4 }, 'void'],
  ])('when the step is %o, then %s', (step, question) => {
    expect(ledgerQuestion(step)).toBe(question);
  });

  it.each<[string, unknown, LedgerAnswer]>([
    [
      'a duplicate: executed, with the transaction it carries',
      new LedgerDuplicateError(tx('op_1')),
      { kind: 'executed', tx: tx('op_1') },
    ],
    [
      'voided: voided, with the time of the void',
      new LedgerVoidedError('op_1', NOW),
      { kind: 'voided', voidedAt: NOW },
    ],
    [
      'a rejection: rejected, with its reason',
      new LedgerRejectedError('insufficient funds'),
      { kind: 'rejected', reason: 'insufficient funds' },
    ],
    [
      'unavailable: unavailable, with the cause',
      new LedgerUnavailableError('ledger down', { cause: new Error('ECONNREFUSED') }),
      { kind: 'unavailable', cause: 'ledger down: ECONNREFUSED' },
    ],
    ['any other error: unavailable', new Error('socket hang up'), { kind: 'unavailable', cause: 'socket hang up' }],
  ])('when the ledger throws %s', (_, error, answer) => {
    expect(answerOfError(error)).toEqual(answer);
  });
});

describe("afterAnswer: what the ledger's answer leads to", () => {
  const op = merchantOp();
  const ledgerTx = tx(op.operationID);
  const context: OutcomeContext = {
    revision: 3,
    now: NOW,
    lastError: 'ledger down',
    assetScale: SCALE,
    retry: { firstMs: 100, maxMs: 5_000 },
    random: () => 0,
  };
  const completed = (revision = 3): Outcome => ({
    kind: 'record',
    result: 'completed',
    writes: completionWrites(op, ledgerTx, revision, NOW, SCALE),
  });
  const failed = (result: 'rejected' | 'gave_up' | 'voided', lastError: string): Outcome => ({
    kind: 'record',
    result,
    writes: failureWrites(op, lastError, 3, NOW, SCALE),
  });
  const claim = { kind: 'claim', attempt: 1 } as const;
  const recover = (attempt: number) => ({ kind: 'recover', attempt }) as const;
  const giveUp = { kind: 'give-up', attempt: 4 } as const;

  const voidFirst = (lastError: string): Outcome => ({ kind: 'void', failure: { lastError, result: 'rejected' } });
  const voidedByAnother = failed(
    'voided',
    `the ledger voided the operation at ${EARLIER} (an executor gave up on it, or the ledger refused it)`,
  );

  it.each<[string, LedgerStep, LedgerAnswer, Partial<OutcomeContext>, Outcome]>([
    ['a first submit executed: complete', claim, { kind: 'executed', tx: ledgerTx }, {}, completed()],
    [
      'a recovery that finds the transaction (or submits it): complete',
      recover(2),
      { kind: 'executed', tx: ledgerTx },
      {},
      completed(),
    ],
    [
      "a submit refused: void it first (a transfer in flight elsewhere, or a retry, must not land later), failing with the ledger's reason",
      claim,
      { kind: 'rejected', reason: 'insufficient funds' },
      {},
      voidFirst('insufficient funds'),
    ],
    [
      'a recovery refused: void it first, failing with the reason',
      recover(3),
      { kind: 'rejected', reason: 'frozen wallet' },
      {},
      voidFirst('frozen wallet'),
    ],
    [
      'a submit that meets a void another executor committed: fail, the ledger said so',
      claim,
      { kind: 'voided', voidedAt: EARLIER },
      {},
      voidedByAnother,
    ],
    ['a recovery that meets a void: fail', recover(2), { kind: 'voided', voidedAt: EARLIER }, {}, voidedByAnother],
    [
      'no answer to attempt 1: retry after the first backoff (half of 100 ms at the lowest jitter)',
      claim,
      { kind: 'unavailable', cause: 'ledger down' },
      {},
      { kind: 'retry', delayMs: 50, cause: 'ledger down' },
    ],
    [
      'no answer to attempt 3: the backoff has doubled twice',
      recover(3),
      { kind: 'unavailable', cause: 'timeout' },
      {},
      { kind: 'retry', delayMs: 200, cause: 'timeout' },
    ],
    [
      'no answer to attempt 3, highest jitter: at most the ceiling',
      recover(3),
      { kind: 'unavailable', cause: 'timeout' },
      { random: () => 0.999999 },
      { kind: 'retry', delayMs: expect.closeTo(400, 3) as unknown as number, cause: 'timeout' },
    ],
    [
      'no answer late: capped at maxMs',
      recover(20),
      { kind: 'unavailable', cause: 'timeout' },
      {},
      { kind: 'retry', delayMs: 2_500, cause: 'timeout' },
    ],
    [
      'out of attempts, the void lost to the transaction: complete (it did go through)',
      giveUp,
      { kind: 'executed', tx: ledgerTx },
      {},
      completed(),
    ],
    [
      'out of attempts, the void committed: give up, naming the attempts and the last cause',
      giveUp,
      { kind: 'voided', voidedAt: NOW },
      {},
      failed('gave_up', 'gave up after 3 attempts: ledger down'),
    ],
    [
      'out of attempts after a restart (no cause remembered), the void committed: give up, saying the ledger stayed unavailable',
      giveUp,
      { kind: 'voided', voidedAt: NOW },
      { lastError: undefined },
      failed('gave_up', 'gave up after 3 attempts: the ledger stayed unavailable'),
    ],
    [
      'out of attempts and the void gets no answer (e.g. a paused executor holds the ledger): nothing recorded, void again after a backoff',
      giveUp,
      { kind: 'unavailable', cause: 'ledger busy' },
      {},
      { kind: 'retry', delayMs: 400, cause: 'ledger busy' },
    ],
    [
      'out of attempts and the void is refused: nothing recorded, void again after a backoff',
      giveUp,
      { kind: 'rejected', reason: 'bad id' },
      {},
      { kind: 'retry', delayMs: 400, cause: 'the ledger refused to void the operation: bad id' },
    ],
  ])('given %s', (_, step, answer, overrides, expected) => {
    expect(afterAnswer(op, step, answer, { ...context, ...overrides })).toEqual(expected);
  });

  describe('afterVoid: the void made to fail a refused operation', () => {
    const refusal: Failure = { lastError: 'insufficient funds', result: 'rejected' };
    it.each<[string, LedgerAnswer, Outcome]>([
      [
        "the void committed: fail with the refusal's reason",
        { kind: 'voided', voidedAt: NOW },
        failed('rejected', 'insufficient funds'),
      ],
      [
        'the transaction committed first (a transfer in flight elsewhere landed): complete',
        { kind: 'executed', tx: ledgerTx },
        completed(),
      ],
      [
        'no answer: nothing recorded, the next attempt asks again',
        { kind: 'unavailable', cause: 'ledger busy' },
        { kind: 'retry', delayMs: 50, cause: 'ledger busy' },
      ],
      [
        'the void refused: nothing recorded, asked again',
        { kind: 'rejected', reason: 'bad id' },
        { kind: 'retry', delayMs: 50, cause: 'the ledger refused to void the operation: bad id' },
      ],
    ])('given %s', (_, answer, expected) => {
      expect(afterVoid(op, claim, refusal, answer, context)).toEqual(expected);
    });
  });

  it("the outcome is appended at the revision it is given (the claim's)", () => {
    const outcome = afterAnswer(op, claim, { kind: 'executed', tx: ledgerTx }, { ...context, revision: 7 });
    expect(outcome.kind === 'record' && outcome.writes[0]).toMatchObject({
      stream: `operation-${op.operationID}`,
      expectedRevision: 7,
    });
  });
});

describe('legsOf', () => {
  it('without a fee: one leg, payer to payee, for the amount', () => {
    expect(legsOf(merchantOp({ fee: '0.00' }))).toEqual([
      { from: 'merchant:m-1', to: 'merchant:m-2', amount: '100.00' },
    ]);
  });

  it('a fee written without decimals that is zero: still one leg', () => {
    expect(legsOf(merchantOp({ fee: '0' }))).toHaveLength(1);
  });

  it('with a fee: a second leg from the payer to platform:fees', () => {
    expect(legsOf(merchantOp())).toEqual([
      { from: 'merchant:m-1', to: 'merchant:m-2', amount: '100.00' },
      { from: 'merchant:m-1', to: 'platform:fees', amount: '1.50' },
    ]);
  });

  it('issuance: from the issuing account', () => {
    expect(legsOf(issueOp())).toEqual([{ from: 'platform:issuance', to: 'distributor:d-1', amount: '500.00' }]);
  });

  it('an individual payer and payee are addressed by phone', () => {
    const op = merchantOp({
      payer: { kind: 'individual', id: '+2348123456781' },
      payee: { kind: 'distributor', id: 'd-1' },
      fee: '0.00',
      operationType: 'cash-out-fulfillment',
    });
    expect(legsOf(op)).toEqual([{ from: 'individual:+2348123456781', to: 'distributor:d-1', amount: '100.00' }]);
  });
});

describe('completionWrites', () => {
  it('a held payer with a fee: completion on the operation stream at the claim revision, debit of amount + fee settling the hold, credits to the payee and the fee wallet', () => {
    const op = merchantOp();
    const ledgerTx = tx(op.operationID, {
      blockchainID: `${'0123456789abcdef'.repeat(2)}${'f'.repeat(32)}`,
      sequenceNumber: 9,
    });

    const writes = completionWrites(op, ledgerTx, 3, NOW, SCALE);

    expect(writes).toEqual([
      {
        stream: `operation-${op.operationID}`,
        expectedRevision: 3,
        events: [
          {
            type: 'OperationSubmitted',
            data: { operationID: op.operationID, sequenceNumber: 9, submittedAt: ledgerTx.createdAt },
          },
          {
            type: 'OperationCompleted',
            data: {
              operationID: op.operationID,
              blockchainID: ledgerTx.blockchainID,
              walletOperationID: `wo_${'0123456789abcdef'.repeat(2)}`,
              sequenceNumber: 9,
              completedAt: NOW,
            },
          },
        ],
      },
      {
        stream: 'wallet-merchant_m-1',
        expectedRevision: 'any',
        events: [
          {
            type: 'WalletDebited',
            data: { wallet: op.payer, operationID: op.operationID, amount: '101.50', heldAmount: '101.50' },
          },
        ],
      },
      {
        stream: 'wallet-merchant_m-2',
        expectedRevision: 'any',
        events: [{ type: 'WalletCredited', data: { wallet: op.payee, operationID: op.operationID, amount: '100.00' } }],
      },
      {
        stream: 'wallet-platform_fees',
        expectedRevision: 'any',
        events: [
          {
            type: 'WalletCredited',
            data: { wallet: { kind: 'platform', id: 'fees' }, operationID: op.operationID, amount: '1.50' },
          },
        ],
      },
    ]);
  });

  it('no fee: no credit to the fee wallet, and the debit is the amount', () => {
    const op = merchantOp({
      fee: '0.00',
      operationType: 'pay-individual',
      payee: { kind: 'individual', id: '+2348123456781' },
    });
    const writes = completionWrites(op, tx(op.operationID), 0, NOW, SCALE);
    expect(writes.map((w) => w.stream)).toEqual([
      `operation-${op.operationID}`,
      'wallet-merchant_m-1',
      'wallet-individual_+2348123456781',
    ]);
    expect(writes[1]!.events[0]!.data).toMatchObject({ amount: '100.00', heldAmount: '100.00' });
  });

  it('issuance: the issuing account is debited with heldAmount "0.00" (it held nothing)', () => {
    const op = issueOp();
    const writes = completionWrites(op, tx(op.operationID), 2, NOW, SCALE);
    expect(writes.map((w) => w.stream)).toEqual([
      `operation-${op.operationID}`,
      'wallet-platform_issuance',
      'wallet-distributor_d-1',
    ]);
    expect(writes[1]!.events).toEqual([
      {
        type: 'WalletDebited',
        data: { wallet: op.payer, operationID: op.operationID, amount: '500.00', heldAmount: '0.00' },
      },
    ]);
    expect(writes[2]!.events).toEqual([
      { type: 'WalletCredited', data: { wallet: op.payee, operationID: op.operationID, amount: '500.00' } },
    ]);
  });

  it('amounts at the asset scale', () => {
    const op = merchantOp({ amount: '7.000', fee: '0.125' });
    const writes = completionWrites(op, tx(op.operationID), 0, NOW, 3);
    expect(writes[1]!.events[0]!.data).toMatchObject({ amount: '7.125', heldAmount: '7.125' });
    const issued = completionWrites(issueOp({ amount: '1.000', fee: '0.000' }), tx('op_x'), 0, NOW, 3);
    expect(issued[1]!.events[0]!.data).toMatchObject({ heldAmount: '0.000' });
  });

  it('the walletOperationID is derived from the blockchainID: wo_ and its first 32 characters', () => {
    const op = merchantOp();
    const blockchainID = 'c0ffee'.padEnd(64, '9');
    const completed = completionWrites(op, tx(op.operationID, { blockchainID }), 0, NOW, SCALE)[0]!.events[1]!.data as {
      walletOperationID: string;
    };
    expect(completed.walletOperationID).toBe(`wo_${blockchainID.slice(0, 32)}`);
  });

  it('takes sequence number and submission time from the ledger transaction, completion time from now', () => {
    const op = merchantOp();
    const [submitted, completed] = completionWrites(
      op,
      tx(op.operationID, { sequenceNumber: 1234, createdAt: EARLIER }),
      0,
      NOW,
      SCALE,
    )[0]!.events;
    expect(submitted!.data).toMatchObject({ sequenceNumber: 1234, submittedAt: EARLIER });
    expect(completed!.data).toMatchObject({ sequenceNumber: 1234, completedAt: NOW });
  });
});

describe('failureWrites', () => {
  it('a held payer: the failure at the claim revision and the release of amount + fee', () => {
    const op = merchantOp();
    expect(failureWrites(op, 'insufficient funds', 4, NOW, SCALE)).toEqual([
      {
        stream: `operation-${op.operationID}`,
        expectedRevision: 4,
        events: [
          {
            type: 'OperationFailed',
            data: { operationID: op.operationID, lastError: 'insufficient funds', failedAt: NOW },
          },
        ],
      },
      {
        stream: 'wallet-merchant_m-1',
        expectedRevision: 'any',
        events: [
          {
            type: 'HoldReleased',
            data: { wallet: op.payer, operationID: op.operationID, amount: '101.50', reason: 'failed' },
          },
        ],
      },
    ]);
  });

  it('a key with a daily volume: its volume is released too', () => {
    const op = merchantOp({ volumeDay: '2026-03-01' });
    const writes = failureWrites(op, 'rejected', 4, NOW, SCALE);
    expect(writes.map((w) => w.stream)).toEqual([
      `operation-${op.operationID}`,
      'wallet-merchant_m-1',
      'keyVolume-key-1_2026-03-01',
    ]);
    expect(writes[2]!.events).toEqual([
      {
        type: 'VolumeReleased',
        data: { keyID: 'key-1', day: '2026-03-01', operationID: op.operationID, amount: '100.00' },
      },
    ]);
  });

  it('an individual payer (wallet-app payment) is released like any payer', () => {
    const op = merchantOp({
      operationType: 'individual-payment',
      party: null,
      keyID: null,
      fee: '0.00',
      payer: { kind: 'individual', id: '+2348123456781' },
    });
    const writes = failureWrites(op, 'x', 1, NOW, SCALE);
    expect(writes.map((w) => w.stream)).toEqual([`operation-${op.operationID}`, 'wallet-individual_+2348123456781']);
    expect(writes[1]!.events[0]!.data).toMatchObject({ amount: '100.00', reason: 'failed' });
  });

  it('issuance: no release for the issuing account, which held nothing', () => {
    const op = issueOp();
    expect(failureWrites(op, 'ledger down', 2, NOW, SCALE)).toEqual([
      {
        stream: `operation-${op.operationID}`,
        expectedRevision: 2,
        events: [
          { type: 'OperationFailed', data: { operationID: op.operationID, lastError: 'ledger down', failedAt: NOW } },
        ],
      },
    ]);
  });
});
