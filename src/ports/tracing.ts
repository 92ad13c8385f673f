/**
 * Tracing, opt-in (docs/operations.md, "Tracing"). The trace context travels as a W3C `traceparent` string,
 * passed by hand: in a request's header, in the metadata of the events a command appends, in a webhook
 * delivery's header. Each step on an operation (its create, its approval, its execution, its ledger call, each
 * webhook delivery) starts its span as a child of the traceparent stored in the event it handles, so that the
 * steps join one trace whichever processes run them.
 */

/**
 * `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`, lowercase (W3C Trace Context, version 00); neither
 * id all zeros. Anything else is dropped, never repaired: event metadata is hash-chained, so only a value
 * that means something may enter it.
 */
const TRACEPARENT = /^00-(?!0{32}-)[0-9a-f]{32}-(?!0{16}-)[0-9a-f]{16}-[0-9a-f]{2}$/;

/** The value when it is a well-formed traceparent, else undefined. */
export function validTraceparent(value: unknown): string | undefined {
  return typeof value === 'string' && TRACEPARENT.test(value) ? value : undefined;
}

export type SpanKindName = 'server' | 'client' | 'producer' | 'consumer' | 'internal';
export type SpanAttributes = Record<string, string | number | boolean>;

export interface SpanOptions {
  /** The traceparent this span continues (a child of it); none: a new trace. Ill-formed values are ignored. */
  parent?: string | undefined;
  /** Other traces this span relates to (the approval request's own trace, for instance). */
  links?: Array<string | undefined>;
  kind?: SpanKindName;
  attributes?: SpanAttributes;
}

/** The span a step runs in. */
export interface ActiveSpan {
  /** What the step writes into the events it appends and the requests it sends: this span, or what it continues. */
  readonly traceparent: string | undefined;
  setAttribute(key: string, value: string | number | boolean): void;
  /** Marks the span as failed (a thrown error marks it by itself). */
  fail(message: string): void;
}

export interface Tracing {
  /** False when no SDK is loaded: spans cost nothing and the traceparent is passed on unchanged. */
  readonly enabled: boolean;
  /** Runs `fn` in a new span, ended when `fn` settles; an error thrown is recorded on it and thrown on. */
  span<T>(name: string, options: SpanOptions, fn: (span: ActiveSpan) => Promise<T>): Promise<T>;
  /** Exports what is buffered (at shutdown). */
  shutdown(): Promise<void>;
}

/**
 * Tracing off: no span is made, and a step passes on the traceparent it continues unchanged, so that a process
 * without tracing still lets the processes after it join the trace.
 */
export const noTracing: Tracing = {
  enabled: false,
  span: (_name, options, fn) =>
    fn({ traceparent: validTraceparent(options.parent), setAttribute: () => {}, fail: () => {} }),
  shutdown: async () => {},
};

/** A command context with the traceparent of the span it runs in (none: left out, never written as undefined). */
export function withTraceparent<C extends object>(context: C, traceparent: string | undefined): C {
  const { traceparent: _previous, ...rest } = context as C & { traceparent?: string };
  return (traceparent === undefined ? rest : { ...rest, traceparent }) as C;
}
