/**
 * The system under test of bench/webhooks.bench.ts, in a process of its own so that the bench's receiver and
 * load generator do not share its event loop: `node --import tsx bench/support/webhook-system.ts '<json env>'`,
 * started with an IPC channel. It runs every part (APIs, projections, executor, webhooks) on the embedded stores
 * and ledger (startTestSystem: a temporary data directory, rate limits off, the rest the defaults plus the env
 * given) and answers the bench's requests over IPC: the setup's back-office commands, the checkers' approvals
 * (as the console would run them in this process), the deliveries' counts, and two floors measured here:
 *  - an event-store subscriber (subscribeToAll, OperationCompleted) in this process, as the outbox is, which
 *    records when it saw each completion: how soon anything in the system can know of a commit;
 *  - raw HTTP POSTs to the bench's receiver, with a fresh connection each as the dispatcher's sender makes them.
 * Times sent to the bench are wall-clock epoch ms with sub-millisecond precision (timeOrigin + performance.now()).
 */
import '../../test/support/fast-passwords.ts';
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { embeddedSecretsKey } from '../../src/adapters/secrets-key-file.ts';
import { actingUser, findUserByEmail, userContext } from '../../src/commands/back-office.ts';
import { decideOperation } from '../../src/commands/operation-handlers.ts';
import { requestWebhookEndpoint, type WebhookCommandDeps } from '../../src/commands/webhooks.ts';
import { approveAndCollectEndpoint } from '../../test/support/credentials.ts';
import type { WebhookEventType } from '../../src/domain/events.ts';
import {
  getRoute,
  WEBHOOK_COLLECTIONS,
  WEBHOOK_ATTEMPTS_COLLECTION,
  WEBHOOK_DELIVERIES_COLLECTION,
  type AttemptDoc,
  type DeliveryDoc,
} from '../../src/webhooks/deliveries.ts';
import { webhookEventID } from '../../src/webhooks/webhook-events.ts';
import { issue, waitUntilSettled } from '../../test/support/executor-system.ts';
import { startTestSystem, waitFor, type TestParty } from '../../test/support/system.ts';
import { spawnWalletOps, stopProcess } from '../../test/support/processes.ts';
import { ALL_PARTS } from '../../src/wallet-ops.ts';
import { inParallel } from './in-parallel.ts';

/** Wall-clock epoch ms, sub-millisecond. */
export const wallNow = () => performance.timeOrigin + performance.now();

/** One OperationCompleted as the in-process subscriber saw it. */
export interface SeenCompletion {
  /** The webhook event id its operation.completed delivery carries. */
  eventID: string;
  operationID: string;
  position: number;
  /** The stored createdAt (the envelope's createdAt), epoch ms. */
  createdAt: number;
  /** When the subscriber had it (wall clock). */
  seenAt: number;
}

export interface Meter {
  cpuMs: number;
  loopDelayMeanMs: number;
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
}

/** One delivery's way through the system, from its delivery log: epoch ms. */
export interface DeliveryTimeline {
  eventID: string;
  /** When the outbox queued it (the delivery's first nextAttemptAt: its clock before the commit). */
  queuedAt: number;
  /** When its first attempt started (before the signature and the POST). */
  attemptAt: number;
  /** The attempt's POST as the sender timed it: connection, request and response. */
  postMs: number;
}

export type Request =
  | { cmd: 'setup'; phones: number; float: string }
  | { cmd: 'endpoint'; url: string; eventTypes: WebhookEventType[] }
  | { cmd: 'approve'; operationID: string }
  | { cmd: 'approveAll'; operationIDs: string[]; inFlight: number }
  | { cmd: 'completions'; after: number }
  | { cmd: 'deliveries'; endpointID: string }
  | { cmd: 'timeline'; endpointID: string }
  | { cmd: 'postFloor'; url: string; n: number; rate: number; body: string }
  | { cmd: 'meterStart' }
  | { cmd: 'meterStop' }
  | { cmd: 'close' };

if (process.send === undefined) throw new Error('start with an IPC channel (bench/webhooks.bench.ts does)');
const send = process.send.bind(process);

const env = JSON.parse(process.argv[2] ?? '{}') as Record<string, string>;
/** `apart`: the webhooks part in a process of its own (`serve webhooks`, as compose runs it), every other part here. */
const apart = process.argv[3] === 'apart';
const sys = await startTestSystem(env, undefined, apart ? ALL_PARTS.filter((part) => part !== 'webhooks') : ALL_PARTS);
const webhooksProcess = apart ? spawnWalletOps(sys.config.DATA_DIR, ['webhooks'], env) : undefined;
// This process reads the delivery log either way: its collections must be known to its read-store handle.
if (apart) await sys.system.stores.readStore.defineCollections(WEBHOOK_COLLECTIONS);
const secretsKey = embeddedSecretsKey(sys.config.DATA_DIR);
const webhookDeps = (): WebhookCommandDeps => ({
  ...sys.backOffice,
  secretsKey,
  allowInsecureLocalhost: sys.config.WEBHOOK_ALLOW_INSECURE_LOCALHOST,
});

// The floor subscriber: every OperationCompleted, from the start, woken by appends as the outbox is.
const seen: SeenCompletion[] = [];
const subscription = sys.system.stores.eventStore.subscribeToAll({
  from: 'start',
  filter: { eventTypes: ['OperationCompleted'] },
});
void (async () => {
  for await (const event of subscription) {
    const seenAt = wallNow();
    seen.push({
      eventID: webhookEventID(event.id, 'operation.completed'),
      operationID: (event.data as { operationID: string }).operationID,
      position: event.position,
      createdAt: Date.parse(event.createdAt),
      seenAt,
    });
  }
})();

let distributor: TestParty | undefined;
let checker: Awaited<ReturnType<typeof findUserByEmail>> | undefined;

async function approve(operationID: string): Promise<void> {
  await decideOperation(
    sys.backOffice,
    actingUser(checker!),
    operationID,
    { type: 'approve' },
    userContext(checker!, randomUUID()),
  );
}

/** POSTs `body` to `url` as the dispatcher's sender does (agent: false: a connection per request); resolves with the round trip. */
function post(url: URL, body: string): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        agent: false,
        headers: {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          'x-sent-at': String(wallNow()),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(performance.now() - started)
            : reject(new Error(`floor POST answered ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

let meter: { cpu: NodeJS.CpuUsage; loop: ReturnType<typeof monitorEventLoopDelay> } | undefined;

async function handle(request: Request): Promise<unknown> {
  switch (request.cmd) {
    case 'setup': {
      distributor = await sys.party('distributor');
      const { apiKey } = await distributor.key();
      checker = await findUserByEmail(sys.backOffice, distributor.checkerEmail);
      const phones = await inParallel(Array.from({ length: request.phones }), 4, (_, i) =>
        sys.individual(`+2348125${String(200_000 + i)}`, `Bench ${i}`),
      );
      const funded = await waitUntilSettled(sys, await issue(sys, distributor.ref, request.float), 30_000);
      if (funded.status !== 'completed') throw new Error(`the distributor's float: ${funded.status}`);
      return { distributorID: distributor.ref.id, apiKey, phones, baseUrl: sys.baseUrl };
    }
    case 'endpoint': {
      const maker = await findUserByEmail(sys.backOffice, distributor!.makerEmail);
      const { endpointID } = await requestWebhookEndpoint(
        webhookDeps(),
        maker,
        { url: request.url, eventTypes: request.eventTypes },
        randomUUID(),
      );
      const secret = await approveAndCollectEndpoint(webhookDeps(), checker!, maker, endpointID);
      // Measured operations start once the outbox routes to it.
      await waitFor(async () => (await getRoute(sys.system.stores.readStore, endpointID))?.status === 'active', 15_000);
      return { endpointID, secret };
    }
    case 'approve':
      await approve(request.operationID);
      return null;
    case 'approveAll':
      await inParallel(request.operationIDs, request.inFlight, approve);
      return null;
    case 'completions':
      return seen.filter((s) => s.position > request.after);
    case 'deliveries': {
      const count = (status: string) =>
        sys.system.stores.readStore.count(WEBHOOK_DELIVERIES_COLLECTION.name, {
          where: { endpointID: request.endpointID, status },
        });
      return { pending: await count('pending'), delivered: await count('delivered'), failed: await count('failed') };
    }
    case 'timeline': {
      // Only for deliveries never retried: a retry moves nextAttemptAt.
      const where = { endpointID: request.endpointID };
      const deliveries = await sys.system.stores.readStore.find<DeliveryDoc>(WEBHOOK_DELIVERIES_COLLECTION.name, {
        where,
      });
      const firstAttempts = new Map(
        (
          await sys.system.stores.readStore.find<AttemptDoc>(WEBHOOK_ATTEMPTS_COLLECTION.name, {
            where: { ...where, attempt: 1 },
          })
        ).map((a) => [a.deliveryID, a]),
      );
      return deliveries
        .filter((d) => d.attempts === 1 && firstAttempts.has(d.id))
        .map((d): DeliveryTimeline => ({
          eventID: d.eventID,
          queuedAt: d.nextAttemptAt,
          attemptAt: Date.parse(firstAttempts.get(d.id)!.at),
          postMs: firstAttempts.get(d.id)!.durationMs,
        }));
    }
    case 'postFloor': {
      // Open loop at the rate, like the approvals: request i leaves at start + i / rate whatever the answers.
      const url = new URL(request.url);
      const roundTrips: Array<Promise<number>> = [];
      const started = performance.now();
      for (let i = 0; i < request.n; i++) {
        const due = started + (i * 1000) / request.rate;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        roundTrips.push(post(url, request.body));
      }
      return Promise.all(roundTrips);
    }
    case 'meterStart': {
      const loop = monitorEventLoopDelay({ resolution: 5 });
      loop.enable();
      meter = { cpu: process.cpuUsage(), loop };
      return null;
    }
    case 'meterStop': {
      const used = process.cpuUsage(meter!.cpu);
      meter!.loop.disable();
      const result: Meter = {
        cpuMs: (used.user + used.system) / 1000,
        loopDelayMeanMs: meter!.loop.mean / 1e6,
        loopDelayP99Ms: meter!.loop.percentile(99) / 1e6,
        loopDelayMaxMs: meter!.loop.max / 1e6,
      };
      meter = undefined;
      return result;
    }
    case 'close':
      await subscription.stop();
      if (webhooksProcess) await stopProcess(webhooksProcess);
      await sys.close();
      return null;
  }
}

process.on('message', (message: { id: number; request: Request }) => {
  handle(message.request).then(
    (result) => {
      send({ id: message.id, ok: true, result }, undefined, undefined, () => {
        if (message.request.cmd === 'close') process.disconnect();
      });
    },
    (error: unknown) =>
      send({
        id: message.id,
        ok: false,
        error: error instanceof Error ? (error.stack ?? error.message) : String(error),
      }),
  );
});
send({ ready: true, baseUrl: sys.baseUrl, pid: process.pid });
