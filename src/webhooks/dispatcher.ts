import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { DomainError } from '../domain/errors.ts';
import { streams } from '../domain/streams.ts';
import { openWebhookSecret, signatureHeaders, signingAt, type EndpointSigning } from '../domain/webhook-secrets.ts';
import type { SealedWebhookSecret, WebhookSignatureScheme } from '../domain/events.ts';
import { loadState, StateCache } from '../commands/pipeline.ts';
import { disableWebhookEndpointBySystem } from '../commands/webhooks.ts';
import { endpointSigning, webhookEndpointDecider } from '../commands/webhook-endpoints.ts';
import type { Logger } from '../logger.ts';
import type { EventStore } from '../ports/event-store.ts';
import { noTracing, type Tracing } from '../ports/tracing.ts';
import type { ReadStore } from '../ports/read-store.ts';
import { supervise, type SessionContext, type SupervisedConsumer, type Supervision } from '../shared/follower.ts';
import { UnchangedWatch } from '../shared/unchanged-watch.ts';
import type { AddressRules, Resolver } from './address-guard.ts';
import {
  activeRoutes,
  getRoute,
  nextDelivery,
  WEBHOOK_ATTEMPTS_COLLECTION,
  WEBHOOK_DELIVERIES_COLLECTION,
  type AttemptDoc,
  type DeliveryDoc,
  type RouteDoc,
} from './deliveries.ts';
import { afterAttempt, type RetryPolicy } from './retry-policy.ts';
import { attemptDelivery, type AttemptResult } from './sender.ts';
import { EndpointLeases } from './endpoint-lease.ts';
import { attemptStep, endpointStep, loopStep, queueStep, type AttemptStep } from './delivery-workflow.ts';

/**
 * Sends the queued deliveries: a supervised consumer whose session runs, for each endpoint with a delivery due, one
 * worker that sends its deliveries one at a time in event order; a slow receiver holds up only its own queue.
 *
 * At least once: an attempt and the delivery's new state are recorded in one commit after the receiver answered (a
 * process killed between sends the same event again); a store error fails the session, retried after a backoff.
 * Across processes a worker holds its endpoint's heartbeat lease (endpoint-lease.ts), and records only under it.
 */
export { WEBHOOK_LEASES_COLLECTION } from './endpoint-lease.ts';

export interface WebhookDispatcherOptions {
  eventStore: EventStore;
  readStore: ReadStore;
  /** Opens the endpoints' sealed signing secrets. */
  secretsKey: Buffer;
  clock: () => Date;
  logger: Logger;
  assetScale: number;
  policy: RetryPolicy;
  /** Per attempt: connection, request and response together. */
  timeoutMs: number;
  /** Endpoints served at once by this process. */
  concurrency: number;
  /** How often the queues are looked at when nothing woke the dispatcher (deliveries queued by another process). */
  pollIntervalMs: number;
  leaseMs: number;
  rules: AddressRules;
  /** DNS (tests point a name at a private address through it). */
  resolve?: Resolver;
  random?: () => number;
  /** This process's monotonic clock (ms), which alone times the leases: performance.now() unless given (tests). */
  monotonicMs?: () => number;
  /** Told of every recorded attempt (metrics, benches). */
  onAttempt?: (delivery: DeliveryDoc, result: AttemptResult) => void;
  supervision?: Supervision;
  /** Tracing (src/ports/tracing.ts): each attempt continues its event's trace and sends it on. None: off. */
  tracing?: Tracing;
}

export class WebhookDispatcher {
  private readonly options: WebhookDispatcherOptions;
  readonly consumer: SupervisedConsumer;
  /** Endpoints with a worker running in this process. */
  private readonly working = new Map<string, Promise<void>>();
  /** Each endpoint's opened secrets and their schemes, as of the rotation its route names (`rotatedAt`). */
  private readonly secrets = new Map<string, { rotatedAt: string | null; signing: EndpointSigning<string> }>();
  private readonly cache = new StateCache();
  /** Aborted by a wake: cuts the loop's wait short. */
  private wakeSignal = new AbortController();
  private woken = false;
  /** The last pass left endpoints out: every worker slot was taken. */
  private starved = false;
  /** The next pass looks at every active endpoint (a poll), not only the ones woken by name. */
  private fullScan = true;
  /** Endpoints to look at on the next pass. */
  private readonly dirty = new Set<string>();
  /** The active endpoints as of the last full scan. */
  private routes = new Map<string, RouteDoc>();
  /** The endpoints' heartbeat leases, as this process holds or watches them. */
  private readonly leases: EndpointLeases;
  /** How long this process has seen each retrying delivery at its attempt count: its backoff runs from then. */
  private readonly backoffs: UnchangedWatch;
  /** When the earliest retry a worker waits for falls due (monotonic ms). */
  private retryDueMs = Infinity;
  /** A worker's failure, thrown by the session loop (the supervisor then restarts it). */
  private failure: Error | undefined;

  constructor(options: WebhookDispatcherOptions) {
    this.options = options;
    // It follows the delivery queues the outbox fills, not the stream: of the follower it takes the supervision.
    this.leases = new EndpointLeases(options.readStore, options.leaseMs, options.monotonicMs);
    this.backoffs = new UnchangedWatch(() => this.monotonic(), 10_000);
    this.consumer = supervise(
      'webhook-deliveries',
      options.logger,
      (context) => this.session(context),
      options.supervision,
    );
  }

  start(): void {
    this.consumer.start();
  }

  stop(): Promise<void> {
    return this.consumer.stop();
  }

  /**
   * Deliveries were queued for these endpoints (or, without ids, anywhere): look at them now rather than at the
   * next poll. Naming the endpoints keeps a wake cheap however many endpoints exist.
   */
  wake(endpointIDs?: Iterable<string>): void {
    if (endpointIDs === undefined) this.fullScan = true;
    else for (const id of endpointIDs) this.dirty.add(id);
    this.woken = true;
    this.wakeSignal.abort();
  }

  private async session(context: SessionContext): Promise<void> {
    this.failure = undefined;
    this.fullScan = true;
    let caughtUp: (() => void) | undefined;
    context.own({ stop: async () => this.wake(), onCaughtUp: (listener) => (caughtUp = listener) });
    try {
      while (!context.stopping()) {
        this.woken = false;
        const routes = await this.routesToLookAt();
        this.starved = false;
        for (const route of routes) {
          if (this.working.has(route.id)) {
            this.dirty.add(route.id); // its worker may be past its last look: it wakes the loop when it ends
            continue;
          }
          if (this.working.size >= this.options.concurrency) {
            this.starved = true; // a worker that ends wakes the loop for the endpoints left out
            this.dirty.add(route.id);
            continue;
          }
          this.startWorker(route, context);
        }
        this.throwWorkerFailure();
        caughtUp?.(); // the read store answered: proof of health for an idle dispatcher
        // Even when woken meanwhile, let timers and I/O run first: the embedded store answers synchronously.
        await new Promise((resolve) => setImmediate(resolve));
        const next = loopStep(this.woken, this.options.pollIntervalMs, this.retryDueMs - this.monotonic());
        if (next.kind === 'wait' && !(await this.waitForWake(next.ms))) {
          this.fullScan = true; // a full scan finds every delivery due, and the workers of those still waiting say when
          this.retryDueMs = Infinity;
        }
      }
    } finally {
      await Promise.allSettled(this.working.values());
      await this.leases.releaseAll();
    }
  }

  /**
   * Every active endpoint at a poll (or after a failure or a retry timer), else only those woken by name: their
   * routes come from the last full scan, or from the store for an endpoint approved since.
   */
  private async routesToLookAt(): Promise<RouteDoc[]> {
    if (this.fullScan) {
      this.fullScan = false;
      this.dirty.clear();
      const routes = await activeRoutes(this.options.readStore);
      this.routes = new Map(routes.map((route) => [route.id, route]));
      return routes;
    }
    const ids = [...this.dirty];
    this.dirty.clear();
    const routes: RouteDoc[] = [];
    for (const id of ids) {
      let route = this.routes.get(id);
      if (route === undefined) {
        const found = await getRoute(this.options.readStore, id);
        if (found?.status !== 'active') continue;
        this.routes.set(id, (route = found));
      }
      routes.push(route);
    }
    return routes;
  }

  /** A method, not inline: the session's own `this.failure = undefined` would narrow an inline check to never. */
  private throwWorkerFailure(): void {
    if (this.failure !== undefined) throw this.failure;
  }

  private startWorker(route: RouteDoc, context: SessionContext): void {
    const work = this.serve(route, context)
      .catch((error: unknown) => {
        this.failure ??= error instanceof Error ? error : new Error('a webhook worker failed', { cause: error });
      })
      .finally(() => {
        this.working.delete(route.id);
        // A slot is free for those left out, new deliveries came for this endpoint meanwhile, or a failure must be
        // thrown.
        if (this.starved || this.dirty.has(route.id) || this.failure !== undefined) this.wake([]);
      });
    this.working.set(route.id, work);
  }

  /**
   * Sends the endpoint's due deliveries in order, each under this process's lease on the endpoint, until none is due.
   */
  private async serve(route: RouteDoc, context: SessionContext): Promise<void> {
    const { readStore } = this.options;
    let delivery = await nextDelivery(readStore, route.id);
    while (delivery !== null && !context.stopping()) {
      const queued = queueStep(delivery, this.backoffs.unchangedForMs(delivery.id, delivery.attempts));
      if (queued.kind === 'wait') return this.retryAt(this.monotonic() + queued.ms);
      this.backoffs.forget(delivery.id);
      // The endpoint as it is now, not as the last scan saw it: a disabling stops its queue before the next send.
      const endpoint = endpointStep(await getRoute(readStore, route.id));
      if (endpoint.kind === 'drop-endpoint') {
        this.routes.delete(route.id);
        await this.leases.release(route.id);
        return;
      }
      // One attempt, and margin for a slow commit: a lease running shorter than that is renewed by a beat first.
      // another process sends this endpoint's queue
      if (!(await this.leases.hold(route.id, 2 * this.options.timeoutMs))) return;
      const step = await this.attempt(endpoint.route, delivery);
      // a failure waits for its retry; a give-up disabled the endpoint; a lost lease stops
      if (step.kind !== 'next') return;
      delivery = await nextDelivery(readStore, route.id);
    }
  }

  private async attempt(route: RouteDoc, delivery: DeliveryDoc): Promise<AttemptStep> {
    const startedAt = this.now();
    const startedMs = this.monotonic();
    const signing = await this.signingOf(route, new Date(startedAt).toISOString());
    const attempt = delivery.attempts + 1;
    const attributes = {
      'wallet_ops.endpoint_id': route.id,
      'wallet_ops.webhook_event_id': delivery.eventID,
      'wallet_ops.webhook_event_type': delivery.eventType,
      'wallet_ops.attempt': attempt,
    };
    // A child of the span that appended the event; the receiver gets it as `traceparent` (not signed: a hint, not a
    // claim).
    const result: AttemptResult = await (this.options.tracing ?? noTracing).span(
      'webhook deliver',
      { kind: 'producer', parent: delivery.traceparent, attributes },
      async (span) => {
        const sent: AttemptResult =
          signing === null
            ? {
                ok: false,
                statusCode: null,
                durationMs: 0,
                responseBody: null,
                error: 'not sent: signing secret unavailable',
                detail: 'the signing secret cannot be opened with this process’s SECRETS_KEY: nothing was sent',
              }
            : await attemptDelivery({
                url: route.url,
                body: delivery.body,
                headers: {
                  'user-agent': 'wallet-ops-webhooks/1',
                  // webhook-id is the event id, the same at every attempt; the timestamp is this attempt's.
                  ...signatureHeaders(
                    signing.scheme,
                    signing.secrets,
                    delivery.eventID,
                    Math.floor(startedAt / 1000),
                    delivery.body,
                  ),
                  ...(span.traceparent ? { traceparent: span.traceparent } : {}),
                },
                timeoutMs: this.options.timeoutMs,
                rules: this.options.rules,
                ...(this.options.resolve ? { resolve: this.options.resolve } : {}),
              });
        if (sent.statusCode !== null) span.setAttribute('http.response.status_code', sent.statusCode);
        if (!sent.ok) span.fail(sent.error ?? 'failed');
        return sent;
      },
    );
    const outcome = afterAttempt(delivery, result, startedAt, this.options.policy, this.options.random);
    // The delivery log keeps the category that makers may see; the operator's log keeps what happened.
    if (!result.ok)
      this.options.logger.warn(
        {
          endpointID: route.id,
          eventID: delivery.eventID,
          attempt,
          statusCode: result.statusCode,
          error: result.error,
          detail: result.detail,
        },
        'webhook delivery attempt failed',
      );
    const at = new Date(startedAt).toISOString();
    const record: AttemptDoc = {
      id: `${delivery.id}:${attempt}`,
      deliveryID: delivery.id,
      endpointID: delivery.endpointID,
      eventID: delivery.eventID,
      eventType: delivery.eventType,
      attempt,
      at,
      ok: result.ok,
      statusCode: result.statusCode,
      durationMs: result.durationMs,
      responseBody: result.responseBody,
      error: result.error,
    };
    const patch: Partial<DeliveryDoc> = {
      attempts: attempt,
      lastAttemptAt: at,
      lastStatusCode: result.statusCode,
      lastError: result.error,
    };
    if (outcome.kind === 'delivered')
      Object.assign(patch, {
        status: 'delivered',
        failingSince: null,
        deliveredAt: new Date(this.now()).toISOString(),
      });
    else if (outcome.kind === 'retry')
      Object.assign(patch, { nextAttemptAt: outcome.nextAttemptAt, failingSince: outcome.failingSince });
    else Object.assign(patch, { status: 'failed', failingSince: outcome.failingSince });
    const recorded = await this.leases.commitUnder(route.id, [
      { op: 'upsert', collection: WEBHOOK_ATTEMPTS_COLLECTION.name, doc: record },
      { op: 'patch', collection: WEBHOOK_DELIVERIES_COLLECTION.name, id: delivery.id, patch },
    ]);
    const step = attemptStep(outcome, recorded, startedAt);
    if (step.kind === 'lost') {
      // Paused or slow past the lease: another process holds the queue now and records its own attempts.
      this.options.logger.warn(
        { endpointID: route.id, eventID: delivery.eventID, attempt, ok: result.ok },
        'webhook endpoint lease lost during an attempt; its result is not recorded (the event may reach the ' +
          'receiver twice)',
      );
      return step;
    }
    this.options.onAttempt?.({ ...delivery, ...patch }, result);
    if (step.kind === 'wait') {
      this.backoffs.see(delivery.id, attempt, startedMs);
      this.retryAt(startedMs + step.ms);
    }
    if (step.kind === 'give-up') await this.disable(route, delivery, result.error);
    return step;
  }

  /** A day of failures: the endpoint is disabled by the system, with the reason its users see. */
  private async disable(route: RouteDoc, delivery: DeliveryDoc, lastError: string | null): Promise<void> {
    const hours = Math.round(this.options.policy.giveUpAfterMs / 3_600_000);
    const reason = `deliveries failed for ${
      hours >= 1 ? `${hours} h` : `${this.options.policy.giveUpAfterMs} ms`
    }; last error: ${lastError ?? 'unknown'}`.slice(0, 500);
    try {
      await disableWebhookEndpointBySystem(
        {
          store: this.options.eventStore,
          cache: this.cache,
          clock: this.options.clock,
          assetScale: this.options.assetScale,
        },
        route.id,
        reason,
        {
          actor: 'system:webhooks',
          correlationId: randomUUID(),
          causationId: delivery.eventID,
        },
      );
      this.options.logger.warn(
        { endpointID: route.id, eventID: delivery.eventID },
        'webhook endpoint disabled after a day of failed deliveries',
      );
    } catch (error) {
      // Someone disabled it meanwhile: the outcome we wanted.
      if (!(error instanceof DomainError && error.code === 'WRONG_STATE')) throw error;
    }
  }

  /**
   * How a delivery at `now` is signed: the scheme and the secrets, current first, the previous one too while a
   * rotation's overlap lasts (null: the current one cannot be opened). Opened from the endpoint's events once per
   * rotation.
   */
  private async signingOf(
    route: RouteDoc,
    now: string,
  ): Promise<{ scheme: WebhookSignatureScheme; secrets: string[] } | null> {
    const endpointID = route.id;
    const rotatedAt = route.rotatedAt ?? null;
    let cached = this.secrets.get(endpointID);
    // While the previous secret would sign, its stream is read again at each send: a departure may have ended it
    // (WebhookEndpointPreviousSecretEnded) before the outbox moved the route, and nothing may be signed with it after.
    const overlapping = cached !== undefined && signingAt(cached.signing, now).secrets.length > 1;
    if (cached === undefined || cached.rotatedAt !== rotatedAt || overlapping) {
      const { state } = await loadState(
        { store: this.options.eventStore, cache: this.cache },
        streams.webhookEndpoint(endpointID),
        webhookEndpointDecider,
      );
      const open = (sealed: SealedWebhookSecret | null) =>
        sealed === null ? null : openWebhookSecret(this.options.secretsKey, endpointID, sealed);
      const current = state.status === 'none' ? null : open(state.secret);
      if (state.status === 'none' || current === null) {
        this.options.logger.error({ endpointID }, 'webhook signing secret cannot be opened: was SECRETS_KEY changed?');
        return null;
      }
      cached = { rotatedAt, signing: { ...endpointSigning(state), current, previous: open(state.previousSecret) } };
      this.secrets.set(endpointID, cached);
    }
    return signingAt(cached.signing, now);
  }

  /** A worker waits for a retry due at `dueMs` (monotonic): a wait of the loop's running longer is cut short. */
  private retryAt(dueMs: number): void {
    if (dueMs >= this.retryDueMs) return;
    this.retryDueMs = dueMs;
    this.wake([]);
  }

  /** Resolves true when woken, false when the time ran out. */
  private async waitForWake(ms: number): Promise<boolean> {
    this.wakeSignal = new AbortController();
    return delay(ms, undefined, { signal: this.wakeSignal.signal }).then(
      () => false,
      () => true,
    );
  }

  private now(): number {
    return this.options.clock().getTime();
  }

  private monotonic(): number {
    return this.options.monotonicMs?.() ?? performance.now();
  }
}
