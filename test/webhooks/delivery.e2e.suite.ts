import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { actingUser, decideOnApiKey, findUserByEmail, userContext } from '../../src/commands/back-office.ts';
import { decideOperation } from '../../src/commands/operation-handlers.ts';
import { disableWebhookEndpoint } from '../../src/commands/webhooks.ts';
import type { WebhookEventType } from '../../src/domain/events.ts';
import { Webhook } from 'standardwebhooks';
import { attemptsOfDelivery, deliveriesOfEndpoint, getRoute } from '../../src/webhooks/deliveries.ts';
import {
  approve,
  startPartsSystem,
  waitUntilSettled,
  type PartsTestSystem,
  type RunningExecutor,
} from '../support/executor-system.ts';
import { verifyViaCli } from '../audit/support.ts';
import { runCli, runCliJson } from '../support/cli.ts';
import { parsePrometheusText, sampleValue } from '../support/prometheus-text.ts';
import { call, waitFor, type TestParty } from '../support/system.ts';
import { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from '../support/webhook-receiver.ts';
import {
  cashIn as createCashIn,
  completedCashIn as completeCashIn,
  payingDistributor,
  registerEndpoint,
  webhookDeps,
  type PayingParty,
} from '../support/webhooks.ts';

/**
 * Webhook deliveries end to end: real operations created over HTTP, approved by checkers, executed by an
 * executor on the embedded ledger, and delivered by the system's outbox and dispatcher to real HTTP servers in
 * this process. Retries are fast here (20 ms base); the schedule itself is tested in retry-policy.test.ts.
 *
 * Run by delivery.e2e.test.ts on the embedded stores and ledger, by delivery.on-postgres.e2e.test.ts on PostgreSQL.
 */
export function deliveryEndToEnd(): void {
  const ENV = {
    WEBHOOK_ALLOW_INSECURE_LOCALHOST: 'true',
    WEBHOOK_RETRY_BASE_MS: '20',
    WEBHOOK_RETRY_MAX_MS: '200',
    WEBHOOK_POLL_INTERVAL_MS: '100',
    WEBHOOK_TIMEOUT_MS: '5000',
  };

  type Keyed = TestParty & { apiKey: string; keyID: string };

  describe('webhook deliveries', () => {
    let sys: PartsTestSystem;
    let executor: RunningExecutor;
    let distributor: PayingParty;
    const receivers: WebhookReceiver[] = [];

    // internal.partner.example resolves to a private address: the SSRF guard must refuse it (DNS is an edge we stub).
    const resolver = async (hostname: string) =>
      hostname === 'internal.partner.example'
        ? [{ address: '10.1.2.3', family: 4 }]
        : [{ address: '127.0.0.1', family: 4 }];

    beforeAll(async () => {
      sys = await startPartsSystem(ENV, undefined, { webhookResolver: resolver });
      executor = await sys.startExecutor();
      distributor = await payingDistributor(sys, '+2348125100001', '100000');
    }, 60_000);
    afterAll(async () => {
      await Promise.all(receivers.map((r) => r.close()));
      await sys?.close();
    });
    afterEach(() => {
      for (const r of receivers) r.respond(() => 200);
    });

    async function keyed(type: 'distributor' | 'merchant'): Promise<Keyed> {
      const party = await sys.party(type);
      const { apiKey, keyID } = await party.key();
      return { ...party, apiKey, keyID };
    }

    async function receiver(): Promise<WebhookReceiver> {
      const r = await startWebhookReceiver();
      receivers.push(r);
      return r;
    }

    const endpoint = (party: TestParty, url: string, eventTypes: WebhookEventType[]) =>
      registerEndpoint(sys, party, url, eventTypes);
    const cashIn = (body?: Record<string, unknown>) => createCashIn(sys, distributor, body);
    const completedCashIn = (body?: Record<string, unknown>) => completeCashIn(sys, distributor, body);

    const operationIDOf = (r: ReceivedWebhook) => r.json.data.operation?.operationID as string | undefined;

    /** Verified as an integrator would, with the standardwebhooks library (the receivers also check every delivery so). */
    function expectSigned(r: ReceivedWebhook, secret: string): void {
      const headers = {
        'webhook-id': String(r.headers['webhook-id']),
        'webhook-timestamp': String(r.headers['webhook-timestamp']),
        'webhook-signature': String(r.headers['webhook-signature']),
      };
      expect(new Webhook(secret).verify(r.body, headers)).toEqual(r.json);
      expect(() => new Webhook(secret).verify(`${r.body} `, headers)).toThrow('No matching signature');
      expect(r.verifiedWith).toBe(secret);
      expect(r.headers['webhook-id']).toBe(r.json.id);
      expect(r.json.id).toMatch(/^evt_[A-Za-z0-9_-]{24}$/);
    }

    it('every event type arrives signed and verifiable, carrying the object the GET endpoints return', async () => {
      const merchant = await keyed('merchant');
      const toDistributor = await receiver();
      const toMerchant = await receiver();
      const d = await endpoint(distributor, toDistributor.url, [
        'operation.approved',
        'operation.rejected',
        'operation.completed',
        'operation.failed',
        'api_key.revoked',
      ]);
      const m = await endpoint(merchant, toMerchant.url, ['payment.received']);

      // Given a completed cash-in to the merchant, a rejected one, a failed one and a revoked key
      const completed = await completedCashIn({ merchantToShortCode: merchant.shortCode, memo: 'till 4' });
      const rejected = await cashIn();
      const checker = await findUserByEmail(sys.backOffice, distributor.checkerEmail);
      await decideOperation(
        sys.backOffice,
        actingUser(checker),
        rejected,
        { type: 'reject', reason: 'wrong phone' },
        userContext(checker, randomUUID()),
      );
      await executor.stop();
      const refusing = await sys.startExecutor({ LEDGER_REJECTION_RATE: '1' });
      const failed = await cashIn();
      await approve(sys, distributor, failed);
      expect((await waitUntilSettled(sys, failed)).status).toBe('failed');
      await refusing.stop();
      executor = await sys.startExecutor();
      const spare = await distributor.key();
      const maker = await findUserByEmail(sys.backOffice, distributor.makerEmail);
      await decideOnApiKey(
        sys.backOffice,
        maker,
        spare.keyID,
        { type: 'RequestApiKeyRevocation', reason: 'till stolen' },
        randomUUID(),
      );
      await decideOnApiKey(sys.backOffice, checker, spare.keyID, { type: 'ApproveApiKeyRevocation' }, randomUUID());

      // Then each arrives, signed with its endpoint's secret
      const revoked = await toDistributor.waitForType('api_key.revoked');
      const payment = await toMerchant.waitForType('payment.received');
      await waitFor(() => toDistributor.received.filter((r) => r.json.type.startsWith('operation.')).length >= 5);
      for (const r of toDistributor.received) expectSigned(r, d.secret);
      expectSigned(payment, m.secret);
      expect(() => expectSigned(payment, d.secret)).toThrow();

      const byType = (type: string, operationID: string) =>
        toDistributor.received.find((r) => r.json.type === type && operationIDOf(r) === operationID)?.json;
      expect(byType('operation.approved', completed)?.data.operation).toMatchObject({
        operationID: completed,
        status: 'approved',
      });
      expect(byType('operation.rejected', rejected)?.data.operation).toMatchObject({
        operationID: rejected,
        status: 'rejected',
      });
      expect(byType('operation.approved', failed)).toBeDefined();
      expect(byType('operation.failed', failed)?.data.operation).toMatchObject({
        operationID: failed,
        status: 'failed',
      });
      expect(revoked.json).toMatchObject({
        type: 'api_key.revoked',
        party: distributor.ref,
        data: { apiKey: { keyID: spare.keyID, status: 'revoked' } },
      });

      // The completed operation is the object GET /operations returns, field for field
      const list = await call(sys.baseUrl, 'GET', `/api/v1/distributors/${distributor.ref.id}/operations?limit=100`, {
        apiKey: distributor.apiKey,
      });
      const listed = (list.body as Array<{ operationID: string }>).find((op) => op.operationID === completed);
      expect(byType('operation.completed', completed)?.data.operation).toEqual(listed);
      const payments = await call(sys.baseUrl, 'GET', `/api/v1/merchants/${merchant.ref.id}/payments?limit=100`, {
        apiKey: merchant.apiKey,
      });
      expect(payment.json.data.payment).toEqual(payments.body[0]);
      expect(payment.json).toMatchObject({ type: 'payment.received', party: merchant.ref });
      // Nothing the merchant did not subscribe to, and nothing of another party
      expect(toMerchant.received.every((r) => r.json.type === 'payment.received')).toBe(true);
    }, 60_000);

    it('when a receiver fails the first 3 attempts, then the 4th brings the same event with the same id, and the log keeps all four', async () => {
      const attemptsMetric = async (outcome: string) =>
        sampleValue(
          parsePrometheusText(await (await fetch(`${sys.baseUrl}/metrics`)).text()),
          'wallet_ops_webhook_attempts_total',
          { outcome },
        ) ?? 0;
      const retriesBefore = await attemptsMetric('retry');
      const r = await receiver();
      r.respond((_request, index) => (index < 3 ? 500 : 200));
      const { endpointID, secret } = await endpoint(distributor, r.url, ['operation.completed']);
      const operationID = await completedCashIn();

      await r.waitForRequests(4);
      expect(r.received.slice(0, 4).map((x) => x.json.id)).toEqual(Array(4).fill(r.received[0]!.json.id));
      expect(r.received.slice(0, 4).map((x) => x.body)).toEqual(Array(4).fill(r.received[0]!.body));
      expect(operationIDOf(r.received[3]!)).toBe(operationID);
      expectSigned(r.received[3]!, secret);

      let log: Awaited<ReturnType<typeof deliveriesOfEndpoint>>;
      await waitFor(
        async () =>
          (log = await deliveriesOfEndpoint(sys.system.stores.readStore, endpointID, { limit: 10 })).deliveries[0]
            ?.status === 'delivered',
      );
      const [delivery] = log!.deliveries;
      expect(delivery).toMatchObject({
        eventID: r.received[0]!.json.id,
        attempts: 4,
        lastStatusCode: 200,
        failingSince: null,
      });
      const attempts = await attemptsOfDelivery(sys.system.stores.readStore, delivery!.id);
      expect(attempts.map((a) => [a.attempt, a.ok, a.statusCode])).toEqual([
        [1, false, 500],
        [2, false, 500],
        [3, false, 500],
        [4, true, 200],
      ]);
      expect(attempts[0]!.responseBody).toBe('refused with 500');
      expect(attempts[0]!.error).toBe('HTTP 500');
      // The scrape counts them (other tests' endpoints may add more retries meanwhile, never fewer)
      expect((await attemptsMetric('retry')) - retriesBefore).toBeGreaterThanOrEqual(3);
      expect(await attemptsMetric('delivered')).toBeGreaterThanOrEqual(1);
    }, 30_000);

    it('when a receiver is down for a while, then it receives the backlog in event order once it is back', async () => {
      const r = await receiver();
      const { endpointID } = await endpoint(distributor, r.url, ['operation.completed']);
      await r.down();
      const operations: string[] = [];
      for (let i = 0; i < 6; i++) operations.push(await completedCashIn());
      // Refused connections are recorded as failed attempts of the first event only: the others wait behind it.
      await waitFor(
        async () =>
          (await deliveriesOfEndpoint(sys.system.stores.readStore, endpointID, { limit: 10 })).deliveries.some(
            (d) => d.attempts >= 2,
          ),
        15_000,
      );
      const { deliveries } = await deliveriesOfEndpoint(sys.system.stores.readStore, endpointID, { limit: 10 });
      expect(deliveries.filter((d) => d.attempts > 0).map((d) => d.position)).toEqual([
        Math.min(...deliveries.map((d) => d.position)),
      ]);
      // A category for the maker: not the system error, which names the address and port that refused.
      expect(deliveries.find((d) => d.attempts > 0)?.lastError).toBe('connection failed');

      await r.listen();
      await r.waitForRequests(6);
      expect(r.received.map(operationIDOf)).toEqual(operations);
    }, 60_000);

    it('when one receiver is slow, then another endpoint’s deliveries do not wait for it', async () => {
      const merchant = await keyed('merchant');
      const slow = await receiver();
      const fast = await receiver();
      let release!: () => void;
      const held = new Promise<number>((resolve) => (release = () => resolve(200)));
      slow.respond(() => held);
      await endpoint(distributor, slow.url, ['operation.completed']);
      await endpoint(merchant, fast.url, ['payment.received']);

      await completedCashIn();
      await slow.waitForRequests(1); // its response is held from here on
      await completedCashIn({ merchantToShortCode: merchant.shortCode });
      await fast.waitForType('payment.received');
      expect(slow.received).toHaveLength(1); // still waiting for its first answer
      release();
      await slow.waitForRequests(2);
    }, 30_000);

    it('when the URL resolves to a private address, then nothing is sent and the attempt says it was refused, without the address', async () => {
      const { endpointID } = await endpoint(distributor, 'https://internal.partner.example/hooks', [
        'operation.completed',
      ]);
      await completedCashIn();
      let attempts: Awaited<ReturnType<typeof attemptsOfDelivery>> = [];
      await waitFor(async () => {
        const [delivery] = (await deliveriesOfEndpoint(sys.system.stores.readStore, endpointID, { limit: 1 }))
          .deliveries;
        attempts = delivery ? await attemptsOfDelivery(sys.system.stores.readStore, delivery.id) : [];
        return attempts.length > 0;
      });
      // How the name resolved is for the operator's log, never for the maker's delivery log.
      expect(attempts[0]).toMatchObject({ ok: false, statusCode: null, error: 'refused: address not allowed' });
      expect(JSON.stringify(attempts[0])).not.toMatch(/10\.1\.2\.3/);
    }, 30_000);

    it('when an endpoint is disabled, then it receives nothing more, while another endpoint of the party still does', async () => {
      const disabled = await receiver();
      const control = await receiver();
      const { endpointID } = await endpoint(distributor, disabled.url, ['operation.completed']);
      await endpoint(distributor, control.url, ['operation.completed']);
      const before = await completedCashIn();
      await disabled.waitForRequests(1);
      expect(operationIDOf(disabled.received[0]!)).toBe(before);

      const maker = await findUserByEmail(sys.backOffice, distributor.makerEmail);
      await disableWebhookEndpoint(webhookDeps(sys), maker, endpointID, 'moving to a new URL', randomUUID());
      const after = await completedCashIn();
      await waitFor(() => control.received.some((r) => operationIDOf(r) === after));
      await waitFor(async () => (await getRoute(sys.system.stores.readStore, endpointID))?.status === 'disabled');
      expect(disabled.received.map(operationIDOf)).toEqual([before]);
      const { deliveries } = await deliveriesOfEndpoint(sys.system.stores.readStore, endpointID, { limit: 10 });
      expect(deliveries.map((d) => d.eventType)).toEqual(['operation.completed']);
    }, 30_000);

    it('when a maker redelivers one event, or every event since a time, through the CLI, then the receiver gets them again with the same ids; a checker may not', async () => {
      const r = await receiver();
      const { endpointID } = await endpoint(distributor, r.url, ['operation.approved', 'operation.completed']);
      const start = new Date().toISOString();
      await completedCashIn();
      await r.waitForRequests(2);
      const [approved, completed] = r.received.map((x) => x.json.id);
      const data = ['--data-dir', sys.config.DATA_DIR];
      // The receiver has each request before the sender records its answer: wait for the records to settle.
      await waitFor(
        async () =>
          (await deliveriesOfEndpoint(sys.system.stores.readStore, endpointID, { limit: 2 })).deliveries.filter(
            (d) => d.status === 'delivered',
          ).length === 2,
        10_000,
      );

      const log = await runCliJson<{
        total: number;
        deliveries: Array<{ eventID: string; status: string; attemptLog: Array<{ statusCode: number }> }>;
      }>(['webhook', 'deliveries', endpointID, '--attempts', ...data]);
      expect(log.total).toBe(2);
      expect(log.deliveries.map((d) => [d.eventID, d.status, d.attemptLog.map((a) => a.statusCode)])).toEqual([
        [completed, 'delivered', [200]],
        [approved, 'delivered', [200]],
      ]);

      const refused = await runCli([
        'webhook',
        'redeliver',
        endpointID,
        '--as',
        distributor.checkerEmail,
        '--event',
        approved!,
        '--json',
        ...data,
      ]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/maker role/);

      expect(
        await runCliJson([
          'webhook',
          'redeliver',
          endpointID,
          '--as',
          distributor.makerEmail,
          '--event',
          approved!,
          ...data,
        ]),
      ).toEqual({ endpointID, queued: 1 });
      await r.waitForRequests(3);
      expect(r.received[2]!.json.id).toBe(approved);
      expect(r.received[2]!.body).toBe(r.received[0]!.body);
      // Settled before the next redelivery: one still being sent is not queued again.
      await waitFor(
        async () =>
          (await deliveriesOfEndpoint(sys.system.stores.readStore, endpointID, { limit: 2 })).deliveries.filter(
            (d) => d.status === 'delivered',
          ).length === 2,
        10_000,
      );

      expect(
        await runCliJson([
          'webhook',
          'redeliver',
          endpointID,
          '--as',
          distributor.makerEmail,
          '--since',
          start,
          ...data,
        ]),
      ).toEqual({ endpointID, queued: 2 });
      await r.waitForRequests(5);
      expect(r.received.slice(3).map((x) => x.json.id)).toEqual([approved, completed]);
      // The receiver has the request before the sender records its answer: wait for the record to settle.
      const latestOf = async () =>
        (await deliveriesOfEndpoint(sys.system.stores.readStore, endpointID, { limit: 1 })).deliveries[0];
      await waitFor(
        async () => (await latestOf())?.status === 'delivered' && (await latestOf())?.attempts === 2,
        10_000,
      );
      expect(await latestOf()).toMatchObject({
        status: 'delivered',
        attempts: 2,
        redeliveredBy: (await findUserByEmail(sys.backOffice, distributor.makerEmail)).userID,
      });
    }, 60_000);
  });

  describe('webhook deliveries that keep failing', () => {
    it('when an endpoint fails for the whole give-up time, then the delivery is given up and the system disables the endpoint, saying why', async () => {
      const sys = await startPartsSystem({ ...ENV, WEBHOOK_DISABLE_AFTER_MS: '300' });
      const r = await startWebhookReceiver();
      try {
        const executor = await sys.startExecutor();
        const distributor = await payingDistributor(sys, '+2348125100002', '100');
        r.respond(() => 503);
        const { endpointID } = await registerEndpoint(sys, distributor, r.url, ['operation.approved']);
        await approve(sys, distributor, await createCashIn(sys, distributor));

        await waitFor(
          async () => (await getRoute(sys.system.stores.readStore, endpointID))?.status === 'disabled',
          15_000,
        );
        const [delivery] = (await deliveriesOfEndpoint(sys.system.stores.readStore, endpointID, { limit: 1 }))
          .deliveries;
        expect(delivery).toMatchObject({ status: 'failed', lastStatusCode: 503 });
        expect(delivery!.attempts).toBeGreaterThanOrEqual(2);
        // What the console and `webhook list` show, once the read model has caught up
        let shown: Record<string, unknown> | null = null;
        await waitFor(
          async () =>
            (shown = await sys.system.stores.readStore.get('webhook_endpoints', endpointID))?.status === 'disabled',
        );
        expect(shown).toMatchObject({
          status: 'disabled',
          disabledBy: 'system',
          reason: expect.stringMatching(/^deliveries failed for 300 ms; last error: HTTP 503/),
        });
        const attemptsBefore = r.received.length;
        // Nothing more is tried: a new event for it is not even queued.
        const second = await completeCashIn(sys, distributor);
        const approval = (await sys.system.stores.eventStore.readStream(`operation-${second}`)).find(
          (e) => e.type === 'OperationApproved',
        )!;
        const outbox = sys.system.consumers.find((c) => c.consumer.name === 'webhook-outbox')!.consumer;
        await waitFor(() => (outbox.status().position ?? 0) >= approval.position);
        expect((await deliveriesOfEndpoint(sys.system.stores.readStore, endpointID, { limit: 5 })).total).toBe(1);
        expect(r.received.length).toBe(attemptsBefore);
        await executor.stop();
        // The system's disabling is a recorded decision the audit accepts
        const audit = await verifyViaCli(sys.config.DATA_DIR);
        expect(audit.code, JSON.stringify(audit.report.problems ?? audit.report).slice(0, 2000)).toBe(0);
      } finally {
        await r.close();
        await sys.close();
      }
    }, 60_000);
  });
}
