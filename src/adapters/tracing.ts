import { noTracing, type Tracing } from '../ports/tracing.ts';

/**
 * What decides whether tracing runs, and how it names this process (src/config.ts: tracingEnabled, OTEL_SERVICE_NAME).
 */
export interface TracingSelection {
  enabled: boolean;
  serviceName: string;
}

/**
 * The process's tracing: off, nothing of OpenTelemetry is loaded (the import below is dynamic), so tracing
 * costs nothing until OTEL_* variables ask for it.
 */
export async function openTracing(selection: TracingSelection): Promise<Tracing> {
  if (!selection.enabled) return noTracing;
  const { startOtelTracing } = await import('./otel-tracing.ts');
  return startOtelTracing({ serviceName: selection.serviceName });
}
