import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Link,
  type SpanContext,
} from '@opentelemetry/api';
import { NodeSDK, type NodeSDKConfiguration } from '@opentelemetry/sdk-node';
import { validTraceparent, type SpanKindName, type Tracing } from '../ports/tracing.ts';

/**
 * The OpenTelemetry tracing: the Node SDK, configured by the standard OTEL_* variables (exporter, endpoint,
 * sampler, resource), traces only. Loaded by a dynamic import (src/adapters/tracing.ts) when tracing is on,
 * never otherwise. Spans are parented by hand, from the traceparent strings the steps pass on, not from an
 * ambient context: a step's parent is the event it handles, which may come from another process.
 */
export interface OtelTracingOptions {
  serviceName: string;
  /** Tests: where spans go instead of the exporters OTEL_TRACES_EXPORTER names. */
  spanProcessors?: NodeSDKConfiguration['spanProcessors'];
}

const KINDS: Record<SpanKindName, SpanKind> = {
  server: SpanKind.SERVER,
  client: SpanKind.CLIENT,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
  internal: SpanKind.INTERNAL,
};

export function startOtelTracing(options: OtelTracingOptions): Tracing {
  const sdk = new NodeSDK({
    serviceName: options.serviceName,
    // Traces only: metrics are Prometheus' (src/metrics), logs are pino's.
    metricReaders: [],
    logRecordProcessors: [],
    ...(options.spanProcessors ? { spanProcessors: options.spanProcessors } : {}),
  });
  sdk.start();
  const tracer = trace.getTracer('wallet-ops');
  return {
    enabled: true,
    async span(name, spanOptions, fn) {
      const parent = spanContextOf(spanOptions.parent);
      const links: Link[] = (spanOptions.links ?? []).flatMap((link) => {
        const linked = spanContextOf(link);
        return linked ? [{ context: linked }] : [];
      });
      const span = tracer.startSpan(
        name,
        {
          kind: KINDS[spanOptions.kind ?? 'internal'],
          ...(spanOptions.attributes ? { attributes: spanOptions.attributes } : {}),
          links,
          root: parent === undefined,
        },
        parent ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT,
      );
      const own = span.spanContext();
      // A span the sampler dropped still passes on its trace (flags 00), so that later steps stay in it.
      const traceparent =
        validTraceparent(`00-${own.traceId}-${own.spanId}-${own.traceFlags.toString(16).padStart(2, '0')}`) ??
        validTraceparent(spanOptions.parent);
      try {
        return await fn({
          traceparent,
          setAttribute: (key, value) => void span.setAttribute(key, value),
          fail: (message) => void span.setStatus({ code: SpanStatusCode.ERROR, message }),
        });
      } catch (error) {
        span.recordException(error instanceof Error ? error : String(error));
        span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
        throw error;
      } finally {
        span.end();
      }
    },
    async shutdown() {
      await sdk.shutdown();
      // The SDK registered itself globally; a process (a test) that starts tracing again must be able to.
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

function spanContextOf(traceparent: string | undefined): SpanContext | undefined {
  const valid = validTraceparent(traceparent);
  if (valid === undefined) return undefined;
  const [, traceId, spanId, flags] = valid.split('-') as [string, string, string, string];
  return { traceId, spanId, traceFlags: Number.parseInt(flags, 16), isRemote: true };
}
