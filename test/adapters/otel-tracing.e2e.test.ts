import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NodeSDKConfiguration } from '@opentelemetry/sdk-node';
import { startOtelTracing } from '../../src/adapters/otel-tracing.ts';
import { openTracing } from '../../src/adapters/tracing.ts';
import { noTracing, type Tracing } from '../../src/ports/tracing.ts';
import { streams } from '../../src/domain/streams.ts';
import { ALL_PARTS } from '../../src/wallet-ops.ts';
import { ConsoleClient } from '../console/console-client.ts';
import { approve, startPartsSystem, type PartsTestSystem } from '../support/executor-system.ts';
import { call, waitFor } from '../support/system.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { payingDistributor, registerEndpoint, type PayingParty } from '../support/webhooks.ts';

type SpanProcessor = NonNullable<NodeSDKConfiguration['spanProcessors']>[number];
type FinishedSpan = Parameters<SpanProcessor['onEnd']>[0];

/** The spans as they end, in this process (the in-memory exporter of the SDK, reduced to what is checked here). */
function collector(): { processor: SpanProcessor; spans: FinishedSpan[] } {
  const spans: FinishedSpan[] = [];
  return {
    spans,
    processor: {
      onStart: () => {},
      onEnd: (span) => void spans.push(span),
      forceFlush: async () => {},
      shutdown: async () => {},
    },
  };
}

const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_TRACEPARENT = `00-${CLIENT_TRACE}-00f067aa0ba902b7-01`;

/**
 * One operation's steps join one trace through the traceparent stored in the events: the create (a new trace
 * at the API edge, linked to the client's traceparent), the checker's approval in the console, the executor's pass and its ledger call,
 * and the webhook delivery, whose request carries the trace on to the receiver.
 */
describe('tracing an operation end to end', () => {
  const { processor, spans } = collector();
  let tracing: Tracing;
  let sys: PartsTestSystem;
  let receiver: WebhookReceiver;
  let distributor: PayingParty;

  beforeAll(async () => {
    tracing = startOtelTracing({ serviceName: 'wallet-ops-test', spanProcessors: [processor] });
    sys = await startPartsSystem(
      { WEBHOOK_ALLOW_INSECURE_LOCALHOST: 'true', WEBHOOK_POLL_INTERVAL_MS: '100' },
      ALL_PARTS,
      { tracing },
    );
    receiver = await startWebhookReceiver();
    distributor = await payingDistributor(sys, '+2348125900001', '1000');
    await registerEndpoint(sys, distributor, receiver.url, ['operation.completed']);
  }, 60_000);
  afterAll(async () => {
    await receiver?.close();
    await sys?.close();
    await tracing?.shutdown();
  });

  const create = async (headers: Record<string, string>) => {
    const r = await call(sys.baseUrl, 'POST', `/api/v1/distributors/${distributor.ref.id}/operations`, {
      apiKey: distributor.apiKey,
      body: { operationType: 'cash-in', amount: '1', phoneTo: distributor.phone },
      headers,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.operationID as string;
  };
  const metadataOf = async (operationID: string) =>
    (await sys.system.stores.eventStore.readStream(streams.operation(operationID))).map((event) => ({
      type: event.type,
      traceparent: event.metadata.traceparent,
    }));
  const spanOf = (name: string, operationID: string) =>
    spans.find((span) => span.name === name && span.attributes['wallet_ops.operation_id'] === operationID);
  const idsOf = (span: FinishedSpan | undefined) => ({
    trace: span?.spanContext().traceId,
    span: span?.spanContext().spanId,
    parent: span?.parentSpanContext?.spanId,
  });

  it("when a create with a traceparent is approved in the console, executed and its webhook delivered, then the spans form one trace of their own, each the child of the step before, the caller's trace only linked and never sent on", async () => {
    const operationID = await create({ traceparent: CLIENT_TRACEPARENT });
    const checker = new ConsoleClient(sys.baseUrl);
    await checker.loginOk(distributor.checkerEmail, 'checker password 1');
    await checker.get('/console/operations');
    expect((await checker.post(`/console/operations/${operationID}/approve`)).status).toBe(303);

    const webhook = await receiver.waitForType('operation.completed', 15_000);
    expect(webhook.json.data.operation.operationID).toBe(operationID);
    await waitFor(() => spans.some((span) => span.name === 'webhook deliver'));

    const createdSpan = spanOf('operation CreateOperation', operationID);
    const created = idsOf(createdSpan);
    const approved = idsOf(spanOf('operation ApproveOperation', operationID));
    const executed = idsOf(spanOf('operation execute', operationID));
    const ledger = idsOf(spanOf('ledger submit', operationID) ?? spanOf('ledger lookup-then-submit', operationID));
    const delivered = idsOf(
      spans.find(
        (span) => span.name === 'webhook deliver' && span.attributes['wallet_ops.webhook_event_id'] === webhook.json.id,
      ),
    );
    // The API edge starts a trace of its own: the caller's is a link of the create's span, not its parent.
    expect(created.trace).toMatch(/^[0-9a-f]{32}$/);
    expect(created.trace).not.toBe(CLIENT_TRACE);
    expect(created.parent).toBeUndefined();
    expect(createdSpan!.links.map((link) => [link.context.traceId, link.context.spanId])).toEqual([
      [CLIENT_TRACE, '00f067aa0ba902b7'],
    ]);
    expect([approved.trace, executed.trace, ledger.trace, delivered.trace]).toEqual(Array(4).fill(created.trace));
    expect(approved.parent).toBe(created.span);
    expect(executed.parent).toBe(approved.span);
    expect(ledger.parent).toBe(executed.span);
    // The delivery continues the span that appended the event it reports: the execution's, which recorded the completion.
    expect(delivered.parent).toBe(executed.span);
    expect(webhook.headers.traceparent).toBe(`00-${created.trace}-${delivered.span}-01`);
    expect(JSON.stringify(webhook.headers)).not.toContain(CLIENT_TRACE);

    // What crossed between the steps is what the events carry: each step's own span, never the caller's trace.
    const stored = await metadataOf(operationID);
    expect(stored.find((e) => e.type === 'OperationRequested')?.traceparent).toBe(
      `00-${created.trace}-${created.span}-01`,
    );
    expect(stored.find((e) => e.type === 'OperationApproved')?.traceparent).toBe(
      `00-${created.trace}-${approved.span}-01`,
    );
    expect(stored.find((e) => e.type === 'OperationCompleted')?.traceparent).toBe(
      `00-${created.trace}-${executed.span}-01`,
    );
    expect(JSON.stringify(stored)).not.toContain(CLIENT_TRACE);
  }, 30_000);

  it('when a create comes with a malformed traceparent, then it is dropped: the event does not carry it and the create starts a trace of its own', async () => {
    const malformed = `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`;
    const operationID = await create({ traceparent: malformed });
    const [requested] = await metadataOf(operationID);
    const created = idsOf(spanOf('operation CreateOperation', operationID));
    expect(created.parent).toBeUndefined();
    expect(created.trace).not.toBe('0'.repeat(32));
    expect(requested!.traceparent).toBe(`00-${created.trace}-${created.span}-01`);
    const garbage = await create({ traceparent: 'not a traceparent' });
    expect((await metadataOf(garbage))[0]!.traceparent).not.toContain('not a traceparent');
  });
});

describe('tracing off', () => {
  it('when no OTEL_ variable turns it on, then openTracing loads nothing', async () => {
    expect(await openTracing({ enabled: false, serviceName: 'wallet-ops' })).toBe(noTracing);
  });

  it("when a create with a traceparent is approved, executed and its webhook delivered, then neither the events nor the delivery carry the caller's trace", async () => {
    const sys = await startPartsSystem(
      { WEBHOOK_ALLOW_INSECURE_LOCALHOST: 'true', WEBHOOK_POLL_INTERVAL_MS: '100' },
      ALL_PARTS,
    );
    const receiver = await startWebhookReceiver();
    try {
      const distributor = await payingDistributor(sys, '+2348125900002', '1000');
      await registerEndpoint(sys, distributor, receiver.url, ['operation.completed']);
      const r = await call(sys.baseUrl, 'POST', `/api/v1/distributors/${distributor.ref.id}/operations`, {
        apiKey: distributor.apiKey,
        body: { operationType: 'cash-in', amount: '1', phoneTo: distributor.phone },
        headers: { traceparent: CLIENT_TRACEPARENT },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const operationID = r.body.operationID as string;
      await approve(sys, distributor, operationID);
      const webhook = await receiver.waitForType('operation.completed', 15_000);
      expect(webhook.json.data.operation.operationID).toBe(operationID);
      expect(webhook.headers.traceparent).toBeUndefined();
      expect(JSON.stringify(webhook.headers)).not.toContain(CLIENT_TRACE);
      const stored = await sys.system.stores.eventStore.readStream(streams.operation(operationID));
      expect(stored.map((event) => event.type)).toContain('OperationCompleted');
      expect(JSON.stringify(stored.map((event) => event.metadata))).not.toContain(CLIENT_TRACE);
    } finally {
      await receiver.close();
      await sys.close();
    }
  }, 60_000);
});
