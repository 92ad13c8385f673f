/**
 * `wallet-ops audit verify --max-approved-age` through the real CLI: an operation approved 20 minutes ago
 * (by the wall clock: the CLI's "now") that never got an outcome is a problem with the default age of
 * 15 minutes, not with a larger one, and a malformed duration is a usage error.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { withHashChain } from '../../src/audit/hash-chain.ts';
import type { OperationRequested } from '../../src/domain/events.ts';
import { runCli } from '../support/cli.ts';
import { tempDir } from '../support/temp-dir.ts';
import { verifyViaCli } from './support.ts';

describe('audit verify --max-approved-age', () => {
  const dir = tempDir('verify-stuck-');
  const dataDir = dir.path;
  const operationID = `op_${randomUUID().replaceAll('-', '')}`;

  beforeAll(async () => {
    const store = withHashChain(openSqliteEventStore({ file: join(dataDir, 'events.sqlite') }));
    try {
      const approvedAt = new Date(Date.now() - 20 * 60_000).toISOString();
      const requested: OperationRequested['data'] = {
        operationID,
        party: null,
        keyID: null,
        operationType: 'issue',
        amount: '100.00',
        fee: '0.00',
        payer: { kind: 'platform', id: 'issuance' },
        payee: { kind: 'distributor', id: 'd1' },
        payerName: 'Treasury',
        payerShortCode: null,
        counterparty: { kind: 'distributor', id: 'd1', name: 'D1' },
        memo: null,
        cashOutFulfillmentType: null,
        cashOutFulfillmentID: null,
        volumeDay: null,
        createdAt: approvedAt,
      };
      await store.append(
        `operation-${operationID}`,
        [
          { type: 'OperationRequested', data: requested, metadata: { actor: 'operator:treasury' } },
          {
            type: 'OperationApproved',
            data: { operationID, approvedBy: 'operator:treasury', approvedAt },
            metadata: { actor: 'operator:treasury' },
          },
        ],
        'no_stream',
      );
    } finally {
      await store.close();
    }
  });
  afterAll(() => dir.cleanup());

  it('given an operation approved 20 minutes ago with no outcome, when verified with the default age, then it fails naming the operation', async () => {
    const { code, report } = await verifyViaCli(dataDir);
    expect(code).toBe(1);
    expect(report.maxApprovedAgeMs).toBe(15 * 60_000);
    expect(report.problems).toEqual([
      expect.objectContaining({
        check: 'outcome',
        operationID,
        detail: expect.stringMatching(/approved (20|21) minutes ago, no outcome \(it is approved\)/),
      }),
    ]);

    const human = await runCli(['audit', 'verify', '--data-dir', dataDir]);
    expect(human.code).toBe(1);
    expect(human.stdout).toContain(
      `[outcome] position 2 operation-${operationID}: operation ${operationID} approved 2`,
    );
    expect(human.stderr).toContain('audit verify found 1 problem');
  });

  it('when verified with --max-approved-age 1h, or 3600s, then it may still wait', async () => {
    for (const age of ['1h', '3600s', String(60 * 60_000)]) {
      const result = await runCli(['audit', 'verify', '--json', '--max-approved-age', age, '--data-dir', dataDir]);
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({ ok: true, maxApprovedAgeMs: 60 * 60_000, stuck: [] });
    }
  });

  it('when the age is not a duration, then it is a usage error', async () => {
    const result = await runCli(['audit', 'verify', '--max-approved-age', 'soon', '--data-dir', dataDir]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--max-approved-age must be a duration');
  });
});
