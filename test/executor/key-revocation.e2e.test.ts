import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideOnApiKey, findUserByEmail, requestApiKey } from '../../src/commands/back-office.ts';
import { approveAndCollectKey } from '../support/credentials.ts';
import { createOperation, type OperationDeps } from '../../src/commands/operation-handlers.ts';
import { PartyLookup } from '../../src/commands/party-lookup.ts';
import { InFlightStates, loadState } from '../../src/commands/pipeline.ts';
import { keyVolumeState } from '../../src/commands/wallet-state.ts';
import { loadConfig } from '../../src/config.ts';
import { streams } from '../../src/domain/streams.ts';
import {
  KEY_REVOCATION_ACTOR,
  KEY_REVOCATION_CHECKPOINT,
  KEY_REVOKED_REASON,
} from '../../src/executor/key-revocation.ts';
import { createLogger } from '../../src/logger.ts';
import type { ApiKeyRecord } from '../../src/projections/api-key-directory.ts';
import { KeyedMutex } from '../../src/shared/keyed-mutex.ts';
import { buildWalletOps } from '../../src/wallet-ops.ts';
import { runCliJson } from '../support/cli.ts';
import { approve, operationOf, waitUntilSettled, walletOf } from '../support/executor-system.ts';
import { startTestSystem, waitFor, WITHOUT_EXECUTOR, type TestParty, type TestSystem } from '../support/system.ts';
import {
  CHECKER_PASSWORD,
  ConsoleClient,
  createCashIn,
  fund,
  MAKER_PASSWORD,
  newPhone,
  waitForStatus,
} from '../console/console-client.ts';
import { testLedgerEnv } from '../support/test-ledger.ts';

/**
 * A revoked key leaves no traps: once its revocation is approved (in the console over HTTP, or with the CLI
 * with stores of its own), every operation it created that is still pending ends rejected by
 * `system:key-revocation` with the reason "API key revoked", and gives back what it held (the payer's funds,
 * the key's daily volume). Operations a checker approved before are not touched.
 */
let sys: TestSystem;
let dist: TestParty;
let phone: string;

beforeAll(async () => {
  sys = await startTestSystem();
  dist = await sys.party('distributor');
  phone = await sys.individual(newPhone());
  await fund(sys, dist.ref, '1000');
});

afterAll(async () => {
  await sys?.close();
});

async function consoleAs(email: string, password: string): Promise<ConsoleClient> {
  const client = new ConsoleClient(sys.baseUrl);
  await client.loginOk(email, password);
  return client;
}

async function revokeInConsole(keyID: string): Promise<void> {
  const maker = await consoleAs(dist.makerEmail, MAKER_PASSWORD);
  await maker.get(`/console/keys/${keyID}/revoke`);
  expect((await maker.post(`/console/keys/${keyID}/revoke`, { reason: 'device lost' })).status).toBe(303);
  const checker = await consoleAs(dist.checkerEmail, CHECKER_PASSWORD);
  await checker.get('/console/keys?tab=pending');
  expect((await checker.post(`/console/keys/${keyID}/revocation/approve`)).status).toBe(303);
}

async function revokeWithCli(keyID: string, dataDir = sys.config.DATA_DIR): Promise<void> {
  await runCliJson(['key', 'revoke', keyID, '--as', dist.makerEmail, '--reason', 'device lost', '--data-dir', dataDir]);
  expect(
    await runCliJson(['key', 'approve-revocation', keyID, '--as', dist.checkerEmail, '--data-dir', dataDir]),
  ).toMatchObject({ state: 'revoked' });
}

/** The rejection as the history records it. */
async function rejectionOf(subject: TestSystem, operationID: string) {
  const events = await subject.system.stores.eventStore.readStream(streams.operation(operationID));
  const rejected = events.find((event) => event.type === 'OperationRejected');
  return rejected && { data: rejected.data as Record<string, unknown>, actor: rejected.metadata.actor };
}

async function waitUntilRejected(subject: TestSystem, operationIDs: string[], timeoutMs = 15_000): Promise<void> {
  await waitFor(
    async () =>
      (await Promise.all(operationIDs.map((id) => operationOf(subject, id)))).every(
        (state) => state.status === 'rejected',
      ),
    timeoutMs,
  );
}

async function expectRejectedForRevocation(subject: TestSystem, operationIDs: string[]): Promise<void> {
  for (const operationID of operationIDs) {
    expect(await rejectionOf(subject, operationID)).toEqual({
      data: {
        operationID,
        rejectedBy: KEY_REVOCATION_ACTOR,
        reason: KEY_REVOKED_REASON,
        rejectedAt: expect.any(String),
      },
      actor: KEY_REVOCATION_ACTOR,
    });
  }
}

const volumeUsed = async (keyID: string, day: string) =>
  (await loadState({ store: sys.system.stores.eventStore }, streams.keyVolume(keyID, day), keyVolumeState)).state.total;

describe('when a key is revoked, its pending operations are rejected and their holds released', () => {
  it('when the revocation is approved in the console, then its pending operations end rejected by system:key-revocation, the payer’s available balance and the key’s volume come back, and an operation approved before is untouched', async () => {
    const { keyID, apiKey } = await dist.key({ label: 'till 1', maxDailyVolume: '500' });
    const approvedEarlier = await createCashIn(sys, dist.ref.id, apiKey, phone, '5.00', 'approved before');
    await approve(sys, dist, approvedEarlier);
    expect((await waitUntilSettled(sys, approvedEarlier)).status).toBe('completed');
    const before = await walletOf(sys, dist.wallet);

    const pending = [
      await createCashIn(sys, dist.ref.id, apiKey, phone, '10.00', 'trap 1'),
      await createCashIn(sys, dist.ref.id, apiKey, phone, '20.00', 'trap 2'),
    ];
    const held = await walletOf(sys, dist.wallet);
    expect(Number(held.available)).toBe(Number(before.available) - 30);
    const first = await operationOf(sys, pending[0]!);
    const day = first.status === 'none' ? '' : first.operation.volumeDay!;
    expect(Number(await volumeUsed(keyID, day))).toBe(35);

    await revokeInConsole(keyID);

    await waitUntilRejected(sys, pending);
    await expectRejectedForRevocation(sys, pending);
    expect(await walletOf(sys, dist.wallet)).toEqual(before);
    expect(Number(await volumeUsed(keyID, day))).toBe(5);
    for (const operationID of pending) await waitForStatus(sys, operationID, 'rejected');
    expect((await operationOf(sys, approvedEarlier)).status).toBe('completed');
  });

  it('when the revocation is requested and approved with the CLI, then its pending operations end rejected and the holds are released', async () => {
    const { keyID, apiKey } = await dist.key({ label: 'till 2' });
    const before = await walletOf(sys, dist.wallet);
    const pending = [
      await createCashIn(sys, dist.ref.id, apiKey, phone, '7.00', 'cli trap 1'),
      await createCashIn(sys, dist.ref.id, apiKey, phone, '8.00', 'cli trap 2'),
      await createCashIn(sys, dist.ref.id, apiKey, phone, '9.00', 'cli trap 3'),
    ];
    expect(Number((await walletOf(sys, dist.wallet)).available)).toBe(Number(before.available) - 24);

    await revokeWithCli(keyID);

    await waitUntilRejected(sys, pending);
    await expectRejectedForRevocation(sys, pending);
    expect(await walletOf(sys, dist.wallet)).toEqual(before);
  });

  it('when an operation is created with the key after its revocation (a process whose key directory had not caught up yet), then it is rejected too, though the consumer had read the key as standing before', async () => {
    const { keyID } = await dist.key({ label: 'till 3' });
    const record = sys.system.directory.get(keyID) as ApiKeyRecord;
    const before = await walletOf(sys, dist.wallet);
    const consumer = sys.system.consumers.find((watched) => watched.consumer.name === 'key-revocations')!.consumer;
    // What a lagging process would do: authenticate with the key as it still knew it, and create.
    const deps: OperationDeps = {
      store: sys.system.stores.eventStore,
      lookup: new PartyLookup(sys.system.stores.eventStore),
      clock: () => new Date(),
      assetScale: sys.config.ASSET_SCALE,
      feeSchedule: sys.config.FEE_SCHEDULE,
      volumeTimeZone: sys.config.VOLUME_TIME_ZONE,
      serialize: { mutex: new KeyedMutex(), inFlight: new InFlightStates() },
    };
    const create = async (memo: string) => {
      const outcome = await createOperation(
        deps,
        record,
        { operationType: 'cash-in', amount: '6.00', phoneTo: phone, memo },
        null,
        { actor: `apikey:${keyID}`, correlationId: randomUUID() },
      );
      if (outcome.kind !== 'created') throw new Error(`the create was not accepted: ${JSON.stringify(outcome)}`);
      return outcome.operation.operationID;
    };
    // The consumer checks the key of an operation created while it stands (and keeps it as standing).
    const earlier = await create('before the revocation');
    const createdAt = (await sys.system.stores.eventStore.readStream(streams.operation(earlier))).at(-1)!.position;
    await waitFor(() => (consumer.status().position ?? 0) >= createdAt);
    await revokeWithCli(keyID);
    // The consumer has dealt with the revocation: only the operation's own event can bring it to reject this one.
    const revokedAt = (await sys.system.stores.eventStore.readStream(streams.apiKey(keyID))).at(-1)!.position;
    await waitFor(() => (consumer.status().position ?? 0) >= revokedAt);

    const operationID = await create('after the revocation');

    await waitUntilRejected(sys, [earlier, operationID]);
    await expectRejectedForRevocation(sys, [earlier, operationID]);
    expect(await walletOf(sys, dist.wallet)).toEqual(before);
  });
});

describe('the consumer keeps its own checkpoint', () => {
  it('when the key was revoked while no executor part ran, then the first one to start rejects its pending operations, and a restart resumes from the saved checkpoint', async () => {
    const quiet = await startTestSystem({}, undefined, WITHOUT_EXECUTOR);
    try {
      const party = await quiet.party('distributor');
      await quiet.credit(party.wallet, '100.00');
      const individual = await quiet.individual(newPhone());
      const maker = await findUserByEmail(quiet.backOffice, party.makerEmail);
      const checker = await findUserByEmail(quiet.backOffice, party.checkerEmail);
      const { keyID } = await requestApiKey(
        quiet.backOffice,
        maker,
        { label: 'quiet', permissions: 'perform-operations' },
        randomUUID(),
      );
      const apiKey = await approveAndCollectKey(quiet.backOffice, checker, maker, keyID);
      await waitFor(() => quiet.system.directory.get(keyID)?.status === 'active');
      const pending = [
        await createCashIn(quiet, party.ref.id, apiKey, individual, '40.00', 'quiet 1'),
        await createCashIn(quiet, party.ref.id, apiKey, individual, '50.00', 'quiet 2'),
      ];
      await decideOnApiKey(
        quiet.backOffice,
        maker,
        keyID,
        { type: 'RequestApiKeyRevocation', reason: 'leaked' },
        randomUUID(),
      );
      await decideOnApiKey(quiet.backOffice, checker, keyID, { type: 'ApproveApiKeyRevocation' }, randomUUID());
      const revokedAt = (await quiet.system.stores.eventStore.readStream(streams.apiKey(keyID))).at(-1)!.position;
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await operationOf(quiet, pending[0]!)).status).toBe('pending'); // nobody follows revocations yet

      const config = loadConfig({
        DATA_DIR: quiet.config.DATA_DIR,
        LOG_LEVEL: 'silent',
        ...(await testLedgerEnv(quiet.config.DATA_DIR)),
      });
      const first = await buildWalletOps(config, createLogger('silent'), undefined, ['executor']);
      try {
        await waitUntilRejected(quiet, pending);
        await expectRejectedForRevocation(quiet, pending);
        expect(await walletOf(quiet, party.wallet)).toMatchObject({ held: '0', available: '100' });
      } finally {
        await first.close();
      }
      const saved = await quiet.system.stores.readStore.getCheckpoint(KEY_REVOCATION_CHECKPOINT);
      expect(saved).toBeGreaterThanOrEqual(revokedAt);

      const second = await buildWalletOps(config, createLogger('silent'), undefined, ['executor']);
      try {
        const consumer = second.consumers.find((watched) => watched.consumer.name === 'key-revocations')!.consumer;
        await waitFor(() => consumer.status().state === 'running');
        expect(consumer.status().position).toBeGreaterThanOrEqual(saved!);
      } finally {
        await second.close();
      }
    } finally {
      await quiet.close();
    }
  });
});
