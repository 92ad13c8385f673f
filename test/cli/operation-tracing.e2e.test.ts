/**
 * A checker's decision taken with the CLI joins the operation's trace, as one taken in the console does
 * (docs/operations.md, "Tracing"): with OTEL_* set, `wallet-ops operation approve` exports its span before it exits,
 * a child of the create's trace when the server traced the create, and the approval's event carries it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streams } from '../../src/domain/streams.ts';
import { runCliProcess } from '../support/cli.ts';
import { call, startTestSystem, WITHOUT_EXECUTOR, type TestParty, type TestSystem } from '../support/system.ts';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';

interface OtlpSpan {
  name: string;
  traceId: string;
  parentSpanId?: string;
  attributes: Array<{ key: string; value: { stringValue?: string } }>;
}

describe('wallet-ops operation approve, with tracing on', () => {
  let sys: TestSystem;
  let distributor: TestParty;
  let apiKey: string;
  let collector: Server;
  let collectorUrl: string;
  const spans: OtlpSpan[] = [];

  beforeAll(async () => {
    // An OTLP/HTTP receiver (JSON encoding) that keeps the spans it is sent.
    collector = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        if (req.url === '/v1/traces') {
          const parsed = JSON.parse(body) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }> };
          for (const resource of parsed.resourceSpans)
            for (const scope of resource.scopeSpans) spans.push(...scope.spans);
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', () => resolve()));
    collectorUrl = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
    sys = await startTestSystem({}, undefined, WITHOUT_EXECUTOR);
    distributor = await sys.party('distributor');
    ({ apiKey } = await distributor.key());
    await sys.credit(distributor.wallet, '100');
    await sys.individual('+2348123457101');
  }, 60_000);
  afterAll(async () => {
    await sys?.close();
    await new Promise<void>((resolve) => collector?.close(() => resolve()));
  });

  it("when a checker approves with the CLI, then its span reaches the collector and the approval's event carries its trace, never the API caller's", async () => {
    const created = await call(sys.baseUrl, 'POST', `/api/v1/distributors/${distributor.ref.id}/operations`, {
      apiKey,
      body: { operationType: 'cash-in', amount: '5', phoneTo: '+2348123457101' },
      headers: { traceparent: `00-${TRACE}-00f067aa0ba902b7-01` },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const operationID = created.body.operationID as string;

    const approved = await runCliProcess(
      [
        'operation',
        'approve',
        operationID,
        '--as',
        distributor.checkerEmail,
        '--data-dir',
        sys.config.DATA_DIR,
        '--json',
      ],
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: 'wallet-ops-cli',
      },
    );

    expect(approved.code, approved.stderr).toBe(0);
    expect(JSON.parse(approved.stdout)).toMatchObject({ operationID, state: 'approved' });
    const span = spans.find(
      (s) =>
        s.name === 'operation ApproveOperation' &&
        s.attributes.some((a) => a.key === 'wallet_ops.operation_id' && a.value.stringValue === operationID),
    );
    expect(span).toBeDefined();
    // The caller's trace stops at the API edge (only linked, never carried): this server traces nothing itself, so the
    // create recorded no trace, and the approval's span starts one that its event carries for the executor's pass.
    expect(span!.traceId).not.toBe(TRACE);
    const events = await sys.system.stores.eventStore.readStream(streams.operation(operationID));
    expect(events.find((event) => event.type === 'OperationApproved')?.metadata.traceparent).toMatch(
      new RegExp(`^00-${span!.traceId}-[0-9a-f]{16}-01$`),
    );
  });
});
