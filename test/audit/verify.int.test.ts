/**
 * audit verify's business checks on small hand-written histories (appended through the hash chain, so that
 * only the rule under test fails): operation state machines, maker-checker, wallets, supply, the ledger.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chainID, openEmbeddedLedger } from '../../src/adapters/ledger/embedded-ledger.ts';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { withHashChain } from '../../src/audit/hash-chain.ts';
import { type AuditReport, verifyHistory } from '../../src/audit/verify.ts';
import type { OperationRequested } from '../../src/domain/events.ts';
import type { EventStore, NewEvent } from '../../src/ports/event-store.ts';
import type { Ledger } from '../../src/ports/ledger.ts';
import { tempDir } from '../support/temp-dir.ts';
import { verifyViaCli } from './support.ts';

const party = { type: 'distributor' as const, id: 'd1' };
const users = { maker: 'u-maker', checker: 'u-checker', other: 'u-other-party', noRole: 'u-maker-2' };

const MINUTE = 60_000;

describe('audit verify: the rules of the history', () => {
  let dir: ReturnType<typeof tempDir>;
  let store: EventStore;
  let ledger: Ledger;
  /** The clock of the history's times, the ledger's and verify's "now": tests move it, never the wall clock. */
  let now: Date;
  const advance = (ms: number) => {
    now = new Date(now.getTime() + ms);
  };

  beforeEach(async () => {
    now = new Date('2026-01-02T10:00:00Z');
    dir = tempDir('verify-');
    store = withHashChain(openSqliteEventStore({ file: join(dir.path, 'events.sqlite') }));
    ledger = openEmbeddedLedger({ file: join(dir.path, 'ledger.sqlite'), clock: () => now });
    const user = (userID: string, roles: string[], of: typeof party | null = party): NewEvent => ({
      type: 'UserAdded',
      data: {
        userID,
        party: of,
        email: `${userID}@x.test`,
        passwordHash: 'x',
        roles,
        platformAdmin: false,
        addedAt: '2026-01-01T00:00:00Z',
      },
      metadata: { actor: 'operator:test' },
    });
    await store.append(`user-${users.maker}`, [user(users.maker, ['maker'])], 'no_stream');
    await store.append(`user-${users.checker}`, [user(users.checker, ['checker'])], 'no_stream');
    await store.append(
      `user-${users.other}`,
      [user(users.other, ['checker'], { type: 'distributor', id: 'd2' })],
      'no_stream',
    );
    await store.append(`user-${users.noRole}`, [user(users.noRole, ['maker'])], 'no_stream');
    await store.append(
      'apikey-k1',
      [
        {
          type: 'ApiKeyRequested',
          data: {
            keyID: 'k1',
            party,
            label: 'till',
            permissions: ['Perform Operations'],
            maxTransactionAmount: null,
            maxDailyVolume: null,
            allowedIPs: [],
            expiresInDays: 30,
            requestedBy: users.maker,
            requestedAt: '2026-01-01T00:00:00Z',
          },
        },
        {
          type: 'ApiKeyApproved',
          data: {
            keyID: 'k1',
            approvedBy: users.checker,
            approvedAt: '2026-01-01T00:00:00Z',
            expiresAt: '2099-01-01T00:00:00Z',
            secretHash: 'x',
          },
        },
      ],
      'no_stream',
    );
  });
  afterEach(async () => {
    await store.close();
    await ledger.close();
    dir.cleanup();
  });

  const verify = (options: { maxApprovedAgeMs?: number; claimWatchMs?: number } = {}): Promise<AuditReport> =>
    verifyHistory({ eventStore: store, ledger, ledgerChainID: chainID, assetScale: 2, clock: () => now, ...options });

  function operation(
    amount: string,
    payer = { kind: 'platform', id: 'issuance' },
    keyID: string | null = null,
  ): OperationRequested['data'] {
    const issue = keyID === null;
    return {
      operationID: `op_${randomUUID().replaceAll('-', '')}`,
      party: issue ? null : party,
      keyID,
      operationType: issue ? 'issue' : 'cash-in',
      amount,
      fee: '0.00',
      payer: payer as never,
      payee: issue ? { kind: 'distributor', id: 'd1' } : { kind: 'individual', id: '+2348000000001' },
      payerName: 'p',
      payerShortCode: null,
      counterparty: { kind: 'individual', id: '+2348000000001', name: 'n' },
      memo: null,
      cashOutFulfillmentType: null,
      cashOutFulfillmentID: null,
      volumeDay: null,
      createdAt: '2026-01-02T00:00:00Z',
    };
  }

  async function request(
    op: OperationRequested['data'],
    actor = op.keyID ? `apikey:${op.keyID}` : 'operator:treasury',
  ): Promise<void> {
    await store.append(
      `operation-${op.operationID}`,
      [{ type: 'OperationRequested', data: op, metadata: { actor } }],
      'no_stream',
    );
  }
  async function decide(
    op: OperationRequested['data'],
    type: 'OperationApproved' | 'OperationRejected',
    by: string,
  ): Promise<void> {
    const at = now.toISOString();
    const data =
      type === 'OperationApproved'
        ? { operationID: op.operationID, approvedBy: by, approvedAt: at }
        : { operationID: op.operationID, rejectedBy: by, reason: 'no', rejectedAt: at };
    await store.append(`operation-${op.operationID}`, [{ type, data }], 'any');
  }
  /** An executor's claim, now, with a lease of `leaseMs` (10 s, the default EXECUTOR_LEASE_MS). */
  async function claim(op: OperationRequested['data'], leaseMs = 10_000): Promise<void> {
    const data = {
      operationID: op.operationID,
      executorID: 'e',
      attempt: 1,
      leaseUntil: new Date(now.getTime() + leaseMs).toISOString(),
      startedAt: now.toISOString(),
    };
    await store.append(`operation-${op.operationID}`, [{ type: 'OperationExecutionStarted', data }], 'any');
  }
  /** What the executor does on the ledger before it records the completion. */
  async function executeOnLedger(op: OperationRequested['data']) {
    return ledger.submit({
      operationID: op.operationID,
      legs: [{ from: `${op.payer.kind}:${op.payer.id}`, to: `${op.payee.kind}:${op.payee.id}`, amount: op.amount }],
    });
  }
  const outcomes = (report: AuditReport) => report.problems.filter((p) => p.check === 'outcome');
  /** The ledger transaction and the completion with its money movements, as the executor writes them. */
  async function complete(
    op: OperationRequested['data'],
    options: { skipLedger?: boolean; credit?: string } = {},
  ): Promise<void> {
    const from = `${op.payer.kind}:${op.payer.id}`;
    const to = `${op.payee.kind}:${op.payee.id}`;
    const tx = options.skipLedger
      ? { blockchainID: 'f'.repeat(64), sequenceNumber: 999 }
      : await ledger.submit({ operationID: op.operationID, legs: [{ from, to, amount: op.amount }] });
    const correlation = { actor: 'system:executor:e', correlationId: op.operationID };
    await store.appendMulti([
      {
        stream: `operation-${op.operationID}`,
        expectedRevision: 'any',
        events: [
          {
            type: 'OperationSubmitted',
            data: { operationID: op.operationID, sequenceNumber: tx.sequenceNumber, submittedAt: 'x' },
            metadata: correlation,
          },
          {
            type: 'OperationCompleted',
            data: {
              operationID: op.operationID,
              blockchainID: tx.blockchainID,
              walletOperationID: 'wo_x',
              sequenceNumber: tx.sequenceNumber,
              completedAt: 'x',
            },
            metadata: correlation,
          },
        ],
      },
      {
        stream: `wallet-${op.payer.kind}_${op.payer.id}`,
        expectedRevision: 'any',
        events: [
          {
            type: 'WalletDebited',
            data: { wallet: op.payer, operationID: op.operationID, amount: op.amount, heldAmount: '0.00' },
            metadata: correlation,
          },
        ],
      },
      {
        stream: `wallet-${op.payee.kind}_${op.payee.id}`,
        expectedRevision: 'any',
        events: [
          {
            type: 'WalletCredited',
            data: { wallet: op.payee, operationID: op.operationID, amount: options.credit ?? op.amount },
            metadata: correlation,
          },
        ],
      },
    ]);
  }
  async function issueAndCashIn(): Promise<OperationRequested['data']> {
    const issued = operation('100.00');
    await request(issued);
    await decide(issued, 'OperationApproved', 'operator:treasury');
    await claim(issued);
    await complete(issued);
    const cashIn = operation('40.00', { kind: 'distributor', id: 'd1' }, 'k1');
    await request(cashIn);
    return cashIn;
  }

  it('given a clean history, when verified, then no problem and supply = issued - redeemed', async () => {
    const cashIn = await issueAndCashIn();
    await decide(cashIn, 'OperationApproved', users.checker);
    await claim(cashIn);
    await complete(cashIn);
    const report = await verify();
    expect(report.problems).toEqual([]);
    expect(report.supply).toMatchObject({ issued: '100.00', redeemed: '0.00', supply: '100.00' });
    expect(report.checked).toMatchObject({ operations: 2, users: 4, apiKeys: 1, ledgerTransactions: 2 });
  });

  it('when the maker approves, or a user without the checker role, or of another party, then maker-checker fails for each', async () => {
    for (const by of [users.noRole, users.other, 'u-nobody']) {
      const op = operation('1.00', { kind: 'distributor', id: 'd1' }, 'k1');
      await request(op, `user:${users.noRole}`);
      await decide(op, 'OperationApproved', by);
    }
    const report = await verify();
    const details = report.problems.filter((p) => p.check === 'maker-checker').map((p) => p.detail);
    expect(details.some((d) => d.includes('who requested it'))).toBe(true);
    expect(details.some((d) => d.includes('does not have the checker role'))).toBe(true);
    expect(details.some((d) => d.includes('not of distributor:d1'))).toBe(true);
    expect(details.some((d) => d.includes('not a user at that point'))).toBe(true);
  });

  it('when the user who requested the operation’s API key approves it, then maker-checker fails: they saw its secret', async () => {
    await store.append(
      'user-u-both',
      [
        {
          type: 'UserAdded',
          data: {
            userID: 'u-both',
            party,
            email: 'both@x.test',
            passwordHash: 'x',
            roles: ['maker', 'checker'],
            platformAdmin: false,
            addedAt: '2026-01-01T00:00:00Z',
          },
          metadata: { actor: 'operator:test' },
        },
      ],
      'no_stream',
    );
    await store.append(
      'apikey-k2',
      [
        {
          type: 'ApiKeyRequested',
          data: {
            keyID: 'k2',
            party,
            label: 'own',
            permissions: ['Perform Operations'],
            maxTransactionAmount: null,
            maxDailyVolume: null,
            allowedIPs: [],
            expiresInDays: 30,
            requestedBy: 'u-both',
            requestedAt: '2026-01-01T00:00:00Z',
          },
        },
        {
          type: 'ApiKeyApproved',
          data: {
            keyID: 'k2',
            approvedBy: users.checker,
            approvedAt: '2026-01-01T00:00:00Z',
            expiresAt: '2099-01-01T00:00:00Z',
            secretHash: 'x',
          },
        },
      ],
      'no_stream',
    );
    const op = operation('1.00', { kind: 'distributor', id: 'd1' }, 'k2');
    await request(op);
    await decide(op, 'OperationApproved', 'u-both');
    const report = await verify();
    expect(report.problems.filter((p) => p.check === 'maker-checker').map((p) => p.detail)).toEqual([
      `approval of operation ${op.operationID} by user u-both, who requested the API key k2 that created it`,
    ]);
  });

  it('when system:key-revocation rejects a pending operation of a revoked key, then it is fine; of a key still active, then maker-checker fails', async () => {
    const ofActiveKey = operation('1.00', { kind: 'distributor', id: 'd1' }, 'k1');
    const ofRevokedKey = operation('2.00', { kind: 'distributor', id: 'd1' }, 'k1');
    await request(ofActiveKey);
    await request(ofRevokedKey);
    await decide(ofActiveKey, 'OperationRejected', 'system:key-revocation');
    await store.append(
      'apikey-k1',
      [
        {
          type: 'ApiKeyRevocationRequested',
          data: { keyID: 'k1', requestedBy: users.maker, reason: 'lost', requestedAt: '2026-01-02T00:00:00Z' },
        },
        { type: 'ApiKeyRevoked', data: { keyID: 'k1', approvedBy: users.checker, revokedAt: '2026-01-02T00:00:00Z' } },
      ],
      'any',
    );
    await decide(ofRevokedKey, 'OperationRejected', 'system:key-revocation');
    const report = await verify();
    const details = report.problems.filter((p) => p.check === 'maker-checker').map((p) => p.detail);
    expect(details).toEqual([
      `rejection of operation ${ofActiveKey.operationID} by system:key-revocation, but its API key k1 is active, not revoked, and not expired at ${now.toISOString()}`,
    ]);
  });

  it('when system:key-revocation rejects a pending operation of a key that has expired, then it is fine; before the expiry, then maker-checker fails; a checker approving after it is reported', async () => {
    await store.append(
      'apikey-k3',
      [
        {
          type: 'ApiKeyRequested',
          data: {
            keyID: 'k3',
            party,
            label: 'till',
            permissions: ['Perform Operations'],
            maxTransactionAmount: null,
            maxDailyVolume: null,
            allowedIPs: [],
            expiresInDays: 1,
            requestedBy: users.maker,
            requestedAt: '2026-01-01T00:00:00Z',
          },
        },
        {
          type: 'ApiKeyApproved',
          data: {
            keyID: 'k3',
            approvedBy: users.checker,
            approvedAt: '2026-01-01T09:00:00Z',
            expiresAt: '2026-01-02T09:00:00.000Z',
            secretHash: 'x',
          },
        },
      ],
      'no_stream',
    );
    const tooEarly = operation('1.00', { kind: 'distributor', id: 'd1' }, 'k3');
    const afterExpiry = operation('2.00', { kind: 'distributor', id: 'd1' }, 'k3');
    const approvedLate = operation('3.00', { kind: 'distributor', id: 'd1' }, 'k3');
    for (const op of [tooEarly, afterExpiry, approvedLate]) await request(op);
    now = new Date('2026-01-02T08:59:59.999Z');
    await decide(tooEarly, 'OperationRejected', 'system:key-revocation');
    now = new Date('2026-01-02T09:00:00.000Z');
    await decide(afterExpiry, 'OperationRejected', 'system:key-revocation');
    await decide(approvedLate, 'OperationApproved', users.checker);
    const report = await verify();
    expect(report.problems.filter((p) => p.check === 'maker-checker').map((p) => p.detail)).toEqual([
      `rejection of operation ${tooEarly.operationID} by system:key-revocation, but its API key k3 is active, not revoked, and not expired at 2026-01-02T08:59:59.999Z`,
      `approval of operation ${approvedLate.operationID} at 2026-01-02T09:00:00.000Z, after its API key k3 expired (2026-01-02T09:00:00.000Z)`,
    ]);
  });

  it('when an operation is completed twice, without approval, or after a rejection, then the state machine fails', async () => {
    const cashIn = await issueAndCashIn();
    await claim(cashIn); // not approved
    const rejected = operation('2.00', { kind: 'distributor', id: 'd1' }, 'k1');
    await request(rejected);
    await decide(rejected, 'OperationRejected', users.checker);
    await decide(rejected, 'OperationApproved', users.checker);
    const report = await verify();
    const details = report.problems.filter((p) => p.check === 'operation').map((p) => p.detail);
    expect(details).toEqual(
      expect.arrayContaining([
        expect.stringContaining('claimed while pending'),
        expect.stringContaining('it is rejected, not pending'),
      ]),
    );
  });

  it('when an operation is requested twice, with a key that never existed or a key of another party, or approved without a request, then the operation check names each', async () => {
    const twice = operation('1.00', { kind: 'distributor', id: 'd1' }, 'k1');
    await request(twice);
    await store.append(
      `operation-${twice.operationID}`,
      [{ type: 'OperationRequested', data: twice, metadata: { actor: 'apikey:k1' } }],
      'any',
    );
    const unknownKey = operation('1.00', { kind: 'distributor', id: 'd1' }, 'k9');
    await request(unknownKey);
    const elsewhere = {
      ...operation('1.00', { kind: 'distributor', id: 'd2' }, 'k1'),
      party: { type: 'distributor' as const, id: 'd2' },
    };
    await request(elsewhere);
    const never = operation('1.00');
    await decide(never, 'OperationApproved', users.checker);
    const report = await verify();
    expect(report.problems.filter((p) => p.check === 'operation').map((p) => p.detail)).toEqual([
      `operation ${twice.operationID} requested twice`,
      `operation ${unknownKey.operationID} created with API key k9, which does not exist`,
      `operation ${elsewhere.operationID} of distributor:d2 created with a key of distributor:d1`,
      `OperationApproved of operation ${never.operationID}, which was never requested`,
    ]);
  });

  it('when money moves that no operation moved, or more than it should, then the supply check names it', async () => {
    const cashIn = await issueAndCashIn();
    await decide(cashIn, 'OperationApproved', users.checker);
    await claim(cashIn);
    await complete(cashIn, { credit: '41.00' });
    await store.append(
      'wallet-distributor_d1',
      [
        {
          type: 'WalletCredited',
          data: { wallet: { kind: 'distributor', id: 'd1' }, operationID: 'test_x', amount: '5.00' },
        },
      ],
      'any',
    );
    const report = await verify();
    expect(report.problems.filter((p) => p.check === 'supply').map((p) => p.detail)).toEqual([
      expect.stringContaining('all wallets sum to 1.00 instead of 0'),
      expect.stringContaining('are not what it requested'),
      expect.stringContaining('all wallets sum to 6.00 instead of 0'),
      expect.stringContaining('money moved for operation test_x, which does not exist'),
    ]);
  });

  it('when a movement carries an amount that is not a decimal, then the wallet check names it', async () => {
    await store.append(
      'wallet-distributor_d1',
      [
        {
          type: 'WalletCredited',
          data: { wallet: { kind: 'distributor', id: 'd1' }, operationID: 'test_y', amount: '1,50' },
        },
      ],
      'any',
    );
    const report = await verify();
    expect(report.problems.filter((p) => p.check === 'wallet').map((p) => p.detail)).toEqual([
      'WalletCredited of distributor:d1: amount "1,50" is not a decimal',
    ]);
  });

  it('when a wallet is debited below zero, then the wallet check names it', async () => {
    const op = operation('10.00', { kind: 'distributor', id: 'd1' }, 'k1');
    await request(op);
    await decide(op, 'OperationApproved', users.checker);
    await claim(op);
    await complete(op, { skipLedger: true });
    const report = await verify();
    expect(report.problems).toContainEqual(
      expect.objectContaining({
        check: 'wallet',
        detail: expect.stringContaining('distributor:d1 goes below zero: -10.00'),
      }),
    );
    expect(report.problems).toContainEqual(
      expect.objectContaining({ check: 'ledger', detail: expect.stringContaining('has no ledger transaction') }),
    );
  });

  describe('operations recorded as failed whose money moved (the reconciliation report)', () => {
    async function fail(op: OperationRequested['data'], lastError: string): Promise<void> {
      await store.append(
        `operation-${op.operationID}`,
        [
          {
            type: 'OperationFailed',
            data: { operationID: op.operationID, lastError, failedAt: now.toISOString() },
            metadata: { actor: 'system:executor:e' },
          },
        ],
        'any',
      );
    }

    it("given an operation recorded as failed whose transfer exists on the ledger, when verified, then it is reported by id with its transaction, the client's retry and the way to settle it, and the CLI exits 1", async () => {
      const cashIn = await issueAndCashIn();
      await decide(cashIn, 'OperationApproved', users.checker);
      await claim(cashIn);
      // A paused executor's transfer lands after another executor recorded the failure.
      await fail(cashIn, 'gave up after 8 attempts: ledger busy');
      const tx = await executeOnLedger(cashIn);
      // The client, told "failed", pays again.
      const retry = { ...operation('40.00', { kind: 'distributor', id: 'd1' }, 'k1') };
      await request(retry);
      await decide(retry, 'OperationApproved', users.checker);
      await claim(retry);
      await complete(retry);

      const report = await verify();

      expect(report.ok).toBe(false);
      expect(report.failedButMoved).toEqual([
        {
          operationID: cashIn.operationID,
          operationType: 'cash-in',
          payer: 'distributor:d1',
          payee: 'individual:+2348000000001',
          amount: '40.00',
          fee: '0.00',
          failedAt: now.toISOString(),
          lastError: 'gave up after 8 attempts: ledger busy',
          ledgerTransaction: {
            sequenceNumber: tx.sequenceNumber,
            blockchainID: tx.blockchainID,
            createdAt: tx.createdAt,
            legs: tx.legs,
          },
          possibleRetries: [retry.operationID],
          settle: expect.stringContaining('docs/operations.md'),
        },
      ]);
      expect(report.problems).toEqual([
        expect.objectContaining({
          check: 'ledger',
          operationID: cashIn.operationID,
          detail: expect.stringContaining('recorded as failed'),
        }),
      ]);

      const cli = await verifyViaCli(dir.path);
      expect(cli.code).toBe(1);
      expect(cli.report.failedButMoved.map((entry) => entry.operationID)).toEqual([cashIn.operationID]);
    }, 30_000);

    /** A settlement as `ledger settle-failed` writes it: the request, then the approval with the wallet movements. */
    async function settle(
      op: OperationRequested['data'],
      tx: { sequenceNumber: number; blockchainID: string; legs: unknown },
      requestedBy: string,
      approvedBy: string,
    ): Promise<void> {
      for (const userID of new Set([requestedBy, approvedBy])) {
        await store.append(
          `user-${userID}`,
          [
            {
              type: 'UserAdded',
              data: {
                userID,
                party: null,
                email: `${userID}@x.test`,
                passwordHash: 'x',
                roles: [],
                platformAdmin: true,
                addedAt: '2026-01-01T00:00:00Z',
              },
              metadata: { actor: 'operator:test' },
            },
          ],
          'any',
        );
      }
      const at = now.toISOString();
      const settlement = {
        operationID: op.operationID,
        sequenceNumber: tx.sequenceNumber,
        blockchainID: tx.blockchainID,
        reason: 'audit',
      };
      await store.append(
        `operation-${op.operationID}`,
        [
          {
            type: 'OperationSettlementRequested',
            data: { ...settlement, requestedBy, requestedAt: at },
            metadata: { actor: `user:${requestedBy}` },
          },
        ],
        'any',
      );
      const actor = { actor: `user:${approvedBy}` };
      await store.appendMulti([
        {
          stream: `operation-${op.operationID}`,
          expectedRevision: 'any',
          events: [
            {
              type: 'OperationSettledFromLedger',
              data: { ...settlement, walletOperationID: 'wo_x', legs: tx.legs, requestedBy, approvedBy, settledAt: at },
              metadata: actor,
            },
          ],
        },
        {
          stream: `wallet-${op.payer.kind}_${op.payer.id}`,
          expectedRevision: 'any',
          events: [
            {
              type: 'WalletDebited',
              data: { wallet: op.payer, operationID: op.operationID, amount: op.amount, heldAmount: '0.00' },
              metadata: actor,
            },
          ],
        },
        {
          stream: `wallet-${op.payee.kind}_${op.payee.id}`,
          expectedRevision: 'any',
          events: [
            {
              type: 'WalletCredited',
              data: { wallet: op.payee, operationID: op.operationID, amount: op.amount },
              metadata: actor,
            },
          ],
        },
      ]);
    }

    it('given such an operation settled by one platform administrator asking and another approving, when verified, then it is completed: no problem, nothing to settle', async () => {
      const cashIn = await issueAndCashIn();
      await decide(cashIn, 'OperationApproved', users.checker);
      await claim(cashIn);
      await fail(cashIn, 'gave up after 8 attempts: ledger busy');
      await settle(cashIn, await executeOnLedger(cashIn), 'u-admin-a', 'u-admin-b');
      const report = await verify();
      expect(report.problems).toEqual([]);
      expect(report.failedButMoved).toEqual([]);
    });

    it('given a settlement approved by the administrator who asked for it, when verified, then it is a maker-checker problem', async () => {
      const cashIn = await issueAndCashIn();
      await decide(cashIn, 'OperationApproved', users.checker);
      await claim(cashIn);
      await fail(cashIn, 'gave up after 8 attempts: ledger busy');
      await settle(cashIn, await executeOnLedger(cashIn), 'u-admin-a', 'u-admin-a');
      const report = await verify();
      expect(report.problems).toEqual([
        expect.objectContaining({
          check: 'maker-checker',
          operationID: cashIn.operationID,
          detail: expect.stringContaining('who asked for it (maker and checker must differ)'),
        }),
      ]);
    });

    it('given operations failed without a ledger transaction, when verified, then none is reported', async () => {
      const cashIn = await issueAndCashIn();
      await decide(cashIn, 'OperationApproved', users.checker);
      await claim(cashIn);
      await ledger.void(cashIn.operationID);
      await fail(cashIn, 'insufficient funds');
      const report = await verify();
      expect(report.failedButMoved).toEqual([]);
      expect(report.problems).toEqual([]);
    });
  });

  it('given an execution in flight (on the ledger, not yet completed in the history), when verified, then it is listed, not a problem', async () => {
    const cashIn = await issueAndCashIn();
    await decide(cashIn, 'OperationApproved', users.checker);
    await claim(cashIn);
    await ledger.submit({
      operationID: cashIn.operationID,
      legs: [{ from: 'distributor:d1', to: 'individual:+2348000000001', amount: '40.00' }],
    });
    const report = await verify();
    expect(report.problems).toEqual([]);
    expect(report.inFlight).toEqual([cashIn.operationID]);
  });

  describe('operations stuck without an outcome', () => {
    it("given an operation executed on the ledger whose outcome is missing, when its claim's lease has run out, then it is a problem naming the operation, the delay and the transaction", async () => {
      const cashIn = await issueAndCashIn();
      await decide(cashIn, 'OperationApproved', users.checker);
      await claim(cashIn, 10_000);
      advance(1_000);
      const tx = await executeOnLedger(cashIn);
      advance(2 * MINUTE); // the executor died before recording the completion; its lease ran out long ago

      const report = await verify();

      expect(report.ok).toBe(false);
      expect(report.inFlight).toEqual([]);
      expect(outcomes(report)).toEqual([
        expect.objectContaining({ operationID: cashIn.operationID, stream: `operation-${cashIn.operationID}` }),
      ]);
      const [problem] = outcomes(report);
      expect(problem!.detail).toContain(
        `operation ${cashIn.operationID} approved 2 minutes ago, no outcome (it is executing)`,
      );
      expect(problem!.detail).toContain(
        `executed on the ledger as transaction ${tx.sequenceNumber} (blockchainID ${tx.blockchainID.slice(0, 16)}…)`,
      );
      expect(problem!.detail).toContain('the lease of its last claim (executor e, attempt 1) ran out 111 seconds ago');
      expect(report.stuck).toEqual([
        expect.objectContaining({
          operationID: cashIn.operationID,
          status: 'executing',
          approvedMsAgo: 2 * MINUTE + 1_000,
          ledgerTransaction: {
            sequenceNumber: tx.sequenceNumber,
            blockchainID: tx.blockchainID,
            createdAt: tx.createdAt,
          },
          lastClaim: expect.objectContaining({ executorID: 'e', attempt: 1 }),
        }),
      ]);
      expect(report.problems.filter((p) => p.check !== 'outcome')).toEqual([]);
    });

    it("given an operation executed on the ledger whose outcome is missing, when its claim's lease is still live, then it is in flight, not a problem", async () => {
      const cashIn = await issueAndCashIn();
      await decide(cashIn, 'OperationApproved', users.checker);
      await claim(cashIn, 10_000);
      advance(1_000);
      await executeOnLedger(cashIn);
      advance(2_000); // the executor is about to record the completion

      const report = await verify();

      expect(report.problems).toEqual([]);
      expect(report.ok).toBe(true);
      expect(report.inFlight).toEqual([cashIn.operationID]);
      expect(report.stuck).toEqual([]);
    });

    it('given an operation executed on the ledger whose last claim an executor a day ahead wrote, when it does not move for the lease, then it is stuck, not in flight for a day', async () => {
      const cashIn = await issueAndCashIn();
      await decide(cashIn, 'OperationApproved', users.checker);
      advance(86_400_000);
      await claim(cashIn, 10_000); // the fast executor's "now"
      const tx = await executeOnLedger(cashIn);
      advance(-86_400_000 + 2 * MINUTE); // the auditor's clock is right; the executor died two minutes ago

      const report = await verify({ claimWatchMs: 50 });

      expect(report.inFlight).toEqual([]);
      expect(outcomes(report)).toEqual([
        expect.objectContaining({
          operationID: cashIn.operationID,
          detail: expect.stringContaining(`transaction ${tx.sequenceNumber}`),
        }),
      ]);
      expect(outcomes(report)[0]!.detail).toMatch(/written by a clock running ahead of this one.*did not move/);
    });

    it('given a claim from a clock a day ahead, when the operation moves while it is watched, then it is in flight', async () => {
      const cashIn = await issueAndCashIn();
      await decide(cashIn, 'OperationApproved', users.checker);
      advance(86_400_000);
      await claim(cashIn, 10_000);
      await executeOnLedger(cashIn);
      advance(-86_400_000 + 2 * MINUTE);
      const watching = verify({ claimWatchMs: 500 });
      await new Promise((resolve) => setTimeout(resolve, 100));
      advance(86_400_000);
      await claim(cashIn, 10_000); // the live executor claims again: the stream moves
      advance(-86_400_000);
      const report = await watching;
      expect(report.inFlight).toEqual([cashIn.operationID]);
      expect(outcomes(report)).toEqual([]);
    });

    it('given an operation on the ledger that no executor claimed, when the transaction is older than the max age, then it is a problem; younger, in flight', async () => {
      const cashIn = await issueAndCashIn();
      await decide(cashIn, 'OperationApproved', users.checker);
      await executeOnLedger(cashIn);
      advance(MINUTE);
      expect((await verify()).inFlight).toEqual([cashIn.operationID]);

      const report = await verify({ maxApprovedAgeMs: 30_000 });

      expect(outcomes(report)).toEqual([
        expect.objectContaining({
          operationID: cashIn.operationID,
          detail: expect.stringContaining('no executor ever claimed it'),
        }),
      ]);
      expect(report.inFlight).toEqual([]);
    });

    it('given an operation approved 20 minutes ago, never claimed, with no outcome, when verified with the default max age, then it is a problem', async () => {
      const cashIn = await issueAndCashIn();
      await decide(cashIn, 'OperationApproved', users.checker);
      advance(20 * MINUTE);

      const report = await verify();

      expect(report.ok).toBe(false);
      expect(report.maxApprovedAgeMs).toBe(15 * MINUTE);
      expect(report.asOf).toBe(now.toISOString());
      expect(outcomes(report)).toEqual([
        expect.objectContaining({
          operationID: cashIn.operationID,
          detail: `operation ${cashIn.operationID} approved 20 minutes ago, no outcome (it is approved); not on the ledger; no executor ever claimed it`,
        }),
      ]);
      expect(report.stuck).toEqual([
        expect.objectContaining({
          operationID: cashIn.operationID,
          status: 'approved',
          approvedMsAgo: 20 * MINUTE,
          ledgerTransaction: null,
          lastClaim: null,
        }),
      ]);
      // A larger max age lets it wait.
      expect(outcomes(await verify({ maxApprovedAgeMs: 30 * MINUTE }))).toEqual([]);
    });

    it('given an operation approved 1 minute ago with no outcome, when verified, then it is not a problem', async () => {
      const cashIn = await issueAndCashIn();
      await decide(cashIn, 'OperationApproved', users.checker);
      advance(MINUTE);

      const report = await verify();

      expect(report.problems).toEqual([]);
      expect(report.ok).toBe(true);
      expect(report.stuck).toEqual([]);
    });

    it('given a completed operation, when verified long after, then it is fine', async () => {
      const cashIn = await issueAndCashIn();
      await decide(cashIn, 'OperationApproved', users.checker);
      await claim(cashIn);
      await complete(cashIn);
      advance(24 * 60 * MINUTE);

      const report = await verify();

      expect(report.problems).toEqual([]);
      expect(report.ok).toBe(true);
      expect(report.inFlight).toEqual([]);
      expect(report.stuck).toEqual([]);
    });
  });
});
