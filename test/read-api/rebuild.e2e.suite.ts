import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findUserByEmail } from '../../src/commands/back-office.ts';
import { releaseWrites } from '../../src/commands/operations.ts';
import { approveWebhookEndpoint, requestWebhookEndpoint } from '../../src/commands/webhooks.ts';
import type { OperationRequested } from '../../src/domain/events.ts';
import { streams } from '../../src/domain/streams.ts';
import type { EventStore, StreamAppend } from '../../src/ports/event-store.ts';
import { allProjections } from '../../src/projections/index.ts';
import { runCliJson, runCliProcess } from '../support/cli.ts';
import { completeOperation, failOperation, newOperationID, requestAppends } from '../support/given-events.ts';
import { call, startTestSystem, waitFor, type TestParty, type TestSystem } from '../support/system.ts';

/**
 * An operator rebuilds every read model (`wallet-ops projections rebuild`, in its own process, on the data
 * directory of the running system) while clients keep reading: each response during the rebuild is the
 * whole model as before, never a half-built one; afterwards the documents are the ones the live runners had
 * built, and the live runners carry on from the swapped-in checkpoints.
 *
 * Run by rebuild.e2e.test.ts on the embedded stores and ledger, by rebuild.on-postgres.e2e.test.ts on PostgreSQL.
 */
export function rebuildEndToEnd(): void {
  type Keyed = TestParty & { apiKey: string };
  type RequestedData = OperationRequested['data'];

  const PROJECTIONS = allProjections(2);
  const NAMES = PROJECTIONS.map((p) => p.name).sort();

  let sys: TestSystem;
  let store: EventStore;
  let distributor: Keyed;
  let merchant: Keyed;
  let payer: Keyed;
  const phones = ['+2348123200001', '+2348123200002', '+2348123200003'];

  const get = (path: string, apiKey: string) => call(sys.baseUrl, 'GET', path, { apiKey });
  /** What the test reads over and over: [name, path, key]. */
  let reads: Array<[string, string, string]>;
  const snapshot = new Map<string, unknown>();
  let seeded: Awaited<ReturnType<typeof seed>>;

  async function readAll(): Promise<Map<string, { status: number; body: unknown }>> {
    const responses = await Promise.all(reads.map(async ([name, path, key]) => [name, await get(path, key)] as const));
    return new Map(responses.map(([name, r]) => [name, { status: r.status, body: r.body }]));
  }

  /** Every document of every projection's collection, by id. */
  async function documents(): Promise<Record<string, unknown[]>> {
    const entries = await Promise.all(
      PROJECTIONS.map(
        async (p) =>
          [
            p.collection.name,
            await sys.system.stores.readStore.find(p.collection.name, { sort: [['id', 'asc']] }),
          ] as const,
      ),
    );
    return Object.fromEntries(entries);
  }
  const checkpoints = async () =>
    Object.fromEntries(
      await Promise.all(
        PROJECTIONS.map(async (p) => [p.name, await sys.system.stores.readStore.getCheckpoint(p.name)] as const),
      ),
    );

  async function caughtUp(): Promise<void> {
    await waitFor(async () => {
      const r = await call(sys.baseUrl, 'GET', '/ready');
      return r.status === 200 && (r.body.projections as Array<{ lagEvents: number }>).every((p) => p.lagEvents === 0);
    }, 15_000);
  }

  // Seeding ----------------------------------------------------------------------------------------------------
  const base = Date.now() - 86_400_000;
  let seq = 0;
  function operation(
    kind:
      | 'cash-in-phone'
      | 'cash-in-merchant'
      | 'pay-merchant-out'
      | 'pay-individual'
      | 'pay-merchant-in'
      | 'individual-payment',
  ): RequestedData {
    const i = seq++;
    const phone = phones[i % phones.length]!;
    const common = {
      operationID: newOperationID(),
      amount: `${10 + (i % 17)}.${String(i % 100).padStart(2, '0')}`,
      fee: '0.00',
      memo: i % 4 === 0 ? null : `Invoice ${i} rent`,
      cashOutFulfillmentType: null,
      cashOutFulfillmentID: null,
      volumeDay: null,
      createdAt: new Date(base + i * 1000).toISOString(),
    };
    const m = (party: TestParty) => ({
      kind: 'merchant' as const,
      id: party.ref.id,
      name: party.name,
      shortCode: party.shortCode,
    });
    switch (kind) {
      case 'cash-in-phone':
        return {
          ...common,
          operationType: 'cash-in',
          party: distributor.ref,
          keyID: null,
          payer: distributor.wallet,
          payee: { kind: 'individual', id: phone },
          payerName: distributor.name,
          payerShortCode: distributor.shortCode,
          counterparty: { kind: 'individual', id: phone, name: 'Test Individual' },
        };
      case 'cash-in-merchant':
        return {
          ...common,
          operationType: 'cash-in',
          party: distributor.ref,
          keyID: null,
          payer: distributor.wallet,
          payee: merchant.wallet,
          payerName: distributor.name,
          payerShortCode: distributor.shortCode,
          counterparty: m(merchant),
        };
      case 'pay-merchant-out':
        return {
          ...common,
          operationType: 'pay-merchant',
          fee: '0.50',
          party: merchant.ref,
          keyID: null,
          payer: merchant.wallet,
          payee: payer.wallet,
          payerName: merchant.name,
          payerShortCode: merchant.shortCode,
          counterparty: m(payer),
        };
      case 'pay-individual':
        return {
          ...common,
          operationType: 'pay-individual',
          fee: '0.25',
          party: merchant.ref,
          keyID: null,
          payer: merchant.wallet,
          payee: { kind: 'individual', id: phone },
          payerName: merchant.name,
          payerShortCode: merchant.shortCode,
          counterparty: { kind: 'individual', id: phone, name: 'Test Individual' },
        };
      case 'pay-merchant-in':
        return {
          ...common,
          operationType: 'pay-merchant',
          fee: '0.50',
          party: payer.ref,
          keyID: null,
          payer: payer.wallet,
          payee: merchant.wallet,
          payerName: payer.name,
          payerShortCode: payer.shortCode,
          counterparty: m(merchant),
        };
      case 'individual-payment':
        return {
          ...common,
          operationType: 'individual-payment',
          party: null,
          keyID: null,
          payer: { kind: 'individual', id: phone },
          payee: merchant.wallet,
          payerName: 'Test Individual',
          payerShortCode: null,
          counterparty: m(merchant),
        };
    }
  }

  /** A checker's rejection, as the write side appends it: the rejection and the release of the hold. */
  async function reject(data: RequestedData): Promise<void> {
    const { operationID } = data;
    await store.appendMulti([
      {
        stream: streams.operation(operationID),
        events: [
          {
            type: 'OperationRejected',
            data: { operationID, rejectedBy: 'user-checker', reason: 'not ours', rejectedAt: new Date().toISOString() },
          },
        ],
        expectedRevision: 0,
      },
      ...releaseWrites(data, 'rejected', 2).map((w): StreamAppend => ({
        stream: w.stream,
        events: w.events,
        expectedRevision: w.expectedRevision ?? 'any',
      })),
    ]);
  }

  /** A few hundred operations of every kind, in every state: pending, rejected, completed, failed, and approved (left to the executor). */
  async function seed(): Promise<{ all: RequestedData[]; completed: Set<string> }> {
    const kinds = [
      ['cash-in-phone', 80],
      ['cash-in-merchant', 50],
      ['pay-merchant-out', 40],
      ['pay-individual', 30],
      ['pay-merchant-in', 50],
      ['individual-payment', 50],
    ] as const;
    const all = kinds.flatMap(([kind, count]) => Array.from({ length: count }, () => operation(kind)));
    // One append per operation, as the write side does; they go in concurrently and are group-committed.
    for (let i = 0; i < all.length; i += 50)
      await Promise.all(all.slice(i, i + 50).map((data) => store.appendMulti(requestAppends(data))));
    const approved: string[] = [];
    await Promise.all(
      all.map(async (data, i) => {
        switch (i % 6) {
          case 1:
            return reject(data);
          case 2:
          case 5:
            return completeOperation(store, data.operationID);
          case 3:
            return failOperation(store, data.operationID, `ledger refused #${i}`);
          case 4:
            approved.push(data.operationID);
            return store.append(
              streams.operation(data.operationID),
              [
                {
                  type: 'OperationApproved',
                  data: {
                    operationID: data.operationID,
                    approvedBy: 'user-checker',
                    approvedAt: new Date().toISOString(),
                  },
                },
              ],
              0,
            );
          default:
            return undefined; // pending
        }
      }),
    );
    // The executor settles the approved ones (the ledger holds no funds for these payers: they fail).
    await waitFor(async () => {
      const last = await Promise.all(
        approved.map(async (id) => (await store.readStream(streams.operation(id))).at(-1)?.type),
      );
      return last.every((type) => type === 'OperationCompleted' || type === 'OperationFailed');
    }, 15_000);
    return {
      all,
      completed: new Set(all.filter((_, i) => i % 6 === 2 || i % 6 === 5).map((data) => data.operationID)),
    };
  }

  beforeAll(async () => {
    sys = await startTestSystem();
    store = sys.system.stores.eventStore;
    const keyed = async (type: 'distributor' | 'merchant'): Promise<Keyed> => {
      const party = await sys.party(type);
      return { ...party, apiKey: (await party.key()).apiKey };
    };
    distributor = await keyed('distributor');
    merchant = await keyed('merchant');
    payer = await keyed('merchant');
    for (const phone of phones) await sys.individual(phone);
    await sys.credit(distributor.wallet, '1000000');
    await sys.credit(merchant.wallet, '1000000');
    await sys.credit(payer.wallet, '1000000');
    for (const phone of phones) await sys.credit({ kind: 'individual', id: phone }, '1000000');
    seeded = await seed();
    // Every read model has something to rebuild: a webhook endpoint, registered and approved.
    const webhooks = { ...sys.backOffice, secretsKey: Buffer.alloc(32, 7), allowInsecureLocalhost: false };
    const { endpointID } = await requestWebhookEndpoint(
      webhooks,
      await findUserByEmail(sys.backOffice, merchant.makerEmail),
      { url: 'https://shop.example/hooks', eventTypes: 'payment.received' },
      'seed',
    );
    await approveWebhookEndpoint(
      webhooks,
      await findUserByEmail(sys.backOffice, merchant.checkerEmail),
      endpointID,
      'seed',
    );
    await caughtUp();

    const d = `/api/v1/distributors/${distributor.ref.id}`;
    const m = `/api/v1/merchants/${merchant.ref.id}`;
    reads = [
      ['distributor operations', `${d}/operations?limit=1000`, distributor.apiKey],
      ['distributor operations, page 2', `${d}/operations?limit=25&offset=25`, distributor.apiKey],
      ['merchant operations', `${m}/operations?limit=1000`, merchant.apiKey],
      ['merchant payments', `${m}/payments?limit=1000`, merchant.apiKey],
      ['merchant payments, search', `${m}/payments?search=rent`, merchant.apiKey],
      ['distributor balance', `${d}/balance`, distributor.apiKey],
      ['merchant balance', `${m}/balance`, merchant.apiKey],
    ];
    for (const [name, r] of await readAll()) {
      expect(r.status, name).toBe(200);
      snapshot.set(name, r.body);
    }
  }, 60_000);
  afterAll(async () => sys?.close());

  describe('projections rebuild while the API serves reads', () => {
    let before: Record<string, unknown[]>;
    let checkpointsBefore: Record<string, number | null>;

    it('given the seeded models, then every list holds what was seeded (the snapshot is worth comparing)', async () => {
      const { all, completed } = seeded;
      const received = all.filter(
        (o) => o.payee.kind === 'merchant' && o.payee.id === merchant.ref.id && o.operationType !== 'pay-individual',
      );
      const length = (name: string) => (snapshot.get(name) as unknown[]).length;
      expect(length('distributor operations')).toBe(all.filter((o) => o.party?.id === distributor.ref.id).length);
      expect(length('distributor operations, page 2')).toBe(25);
      expect(length('merchant operations')).toBe(
        all.filter((o) => o.party?.id === merchant.ref.id).length +
          received.filter((o) => o.operationType === 'cash-in').length, // received cash-ins listed from their request (issue 18)
      );
      expect(length('merchant payments')).toBe(received.filter((o) => completed.has(o.operationID)).length);
      expect(length('merchant payments, search')).toBe(
        received.filter((o) => completed.has(o.operationID) && o.memo !== null).length,
      );
      expect(length('merchant payments')).toBeGreaterThan(40);
      expect((snapshot.get('distributor balance') as { balance: string }).balance).not.toBe('1000000.00');
      before = await documents();
      checkpointsBefore = await checkpoints();
      for (const name of NAMES) expect(checkpointsBefore[name], name).toEqual(expect.any(Number));
    });

    it('when an operator rebuilds every projection in another process, then every response during the rebuild is the whole model as before, and so are the documents after', async () => {
      const { readStore } = sys.system.stores;
      const generations = () => Promise.all(PROJECTIONS.map((p) => readStore.getGeneration(p.name)));
      const generationsBefore = await generations();
      let finished = false;
      const rebuild = runCliProcess(['projections', 'rebuild', '--json', '--data-dir', sys.config.DATA_DIR]).finally(
        () => (finished = true),
      );
      const mismatches: string[] = [];
      let rounds = 0;
      let roundsDuringReplay = 0;
      while (!finished) {
        // How far the rebuild is: promoted (a projection's generation raised) or replaying (its shadow's checkpoint).
        const promoted = async () => (await generations()).map((g, i) => g > generationsBefore[i]!);
        const replaying = async () =>
          (await Promise.all(PROJECTIONS.map((p) => readStore.getCheckpoint(`${p.name}__rebuild`)))).some(
            (c) => c !== null,
          );
        // The round overlapped the rebuild when it began before every projection was promoted and, when it ended,
        // some replay had begun: on a busy machine one round may span a whole replay, seen by neither look.
        const unfinishedAtStart = (await promoted()).some((p) => !p);
        for (const [name, r] of await readAll()) {
          if (r.status !== 200) mismatches.push(`${name}: status ${r.status}`);
          else if (!isEqual(r.body, snapshot.get(name))) {
            mismatches.push(
              `${name}: ${Array.isArray(r.body) ? `${r.body.length} items` : JSON.stringify(r.body)} instead of ${describeBody(snapshot.get(name))}`,
            );
          }
        }
        rounds++;
        const begunAtEnd = (await promoted()).some(Boolean) || (await replaying());
        if (unfinishedAtStart && begunAtEnd) roundsDuringReplay++;
      }
      const result = await rebuild;
      expect(result.code, result.stderr).toBe(0);
      const rebuilt = JSON.parse(result.stdout) as Array<{
        projection: string;
        events: number;
        position: number;
        seconds: number;
        eventsPerSecond: number;
      }>;
      expect(rebuilt.map((r) => r.projection).sort()).toEqual(NAMES);
      for (const r of rebuilt) {
        expect(r.events, r.projection).toBeGreaterThan(0);
        expect(r.position, r.projection).toBe(checkpointsBefore[r.projection]);
      }

      expect(mismatches).toEqual([]);
      expect(rounds).toBeGreaterThan(0);
      expect(roundsDuringReplay, 'no read overlapped the replay').toBeGreaterThan(0);

      for (const [name, r] of await readAll()) expect(r.body, name).toEqual(snapshot.get(name));
      const after = await documents();
      for (const projection of PROJECTIONS) {
        const name = projection.collection.name;
        expect(after[name], name).toEqual(before[name]);
      }
      expect(await checkpoints()).toEqual(checkpointsBefore);
      for (const projection of PROJECTIONS)
        expect(await sys.system.stores.readStore.getCheckpoint(`${projection.name}__rebuild`)).toBeNull();
    });

    it('when operations are created and completed after the swap, then the live runners list them and move the balances', async () => {
      const created = await call(sys.baseUrl, 'POST', `/api/v1/distributors/${distributor.ref.id}/operations`, {
        apiKey: distributor.apiKey,
        body: {
          operationType: 'cash-in',
          amount: '123.45',
          merchantToShortCode: merchant.shortCode,
          memo: 'after the rebuild',
        },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const id = created.body.operationID as string;
      const d = `/api/v1/distributors/${distributor.ref.id}`;
      const m = `/api/v1/merchants/${merchant.ref.id}`;
      await waitFor(async () => (await get(`${d}/operations?limit=1`, distributor.apiKey)).body[0]?.operationID === id);

      const done = await completeOperation(store, id);
      await waitFor(
        async () =>
          (await get(`${m}/payments?limit=1`, merchant.apiKey)).body[0]?.operationID === done.walletOperationID,
      );
      await waitFor(async () =>
        (await get(`${m}/operations?limit=1000`, merchant.apiKey)).body.some(
          (o: { operationID: string; status: string }) => o.operationID === id && o.status === 'completed',
        ),
      );
      const balanceBefore = Number((snapshot.get('merchant balance') as { balance: string }).balance);
      await waitFor(
        async () => (await get(`${m}/balance`, merchant.apiKey)).body.balance === (balanceBefore + 123.45).toFixed(2),
      );
    });

    it('when the status is asked once caught up, then every projection reports its position and a lag of 0, and the running process its consumers', async () => {
      await caughtUp();
      const head = await store.headPosition();
      type Status = {
        checkpoints: Array<{
          projection: string;
          position: number | null;
          head: number;
          lagEvents: number;
          lagSeconds: number;
        }>;
        server: { url: string; consumers?: Array<{ name: string; state: string }> };
      };
      const { checkpoints: rows, server } = await runCliJson<Status>([
        'projections',
        'status',
        '--server',
        sys.baseUrl,
        '--data-dir',
        sys.config.DATA_DIR,
      ]);
      const status = rows.filter((s) => s.projection !== 'executor' && s.projection !== 'key-revocations');
      expect(status.map((s) => s.projection).sort()).toEqual(NAMES);
      const current = await checkpoints();
      for (const s of status) {
        expect(s).toEqual({
          projection: s.projection,
          position: current[s.projection],
          head,
          lagEvents: 0,
          lagSeconds: 0,
        });
        expect(s.position).toEqual(expect.any(Number));
      }
      expect(rows.map((s) => s.projection)).toEqual(expect.arrayContaining(['executor', 'key-revocations']));
      const names = server.consumers!.map((c) => c.name);
      expect(names).toEqual(
        expect.arrayContaining(['api-key-directory', 'sealer', ...NAMES.map((name) => `projection:${name}`)]),
      );
      for (const consumer of server.consumers!) expect(consumer.state, consumer.name).toBe('running');
    });
  });

  function isEqual(a: unknown, b: unknown): boolean {
    try {
      expect(a).toEqual(b);
      return true;
    } catch {
      return false;
    }
  }
  const describeBody = (body: unknown) => (Array.isArray(body) ? `${body.length} items` : JSON.stringify(body));
}
