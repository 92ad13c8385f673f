import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { waitFor } from './system.ts';

/**
 * A real HTTP server in the test process that receives webhook deliveries: it records every request and
 * answers what the test tells it to (a status, or a response held until the test releases it).
 *
 * The test oracle for signatures: once it trusts a secret (registerEndpoint trusts the one of every endpoint it
 * registers at this receiver's URL), it verifies every request with the `standardwebhooks` library, exactly as
 * an integrator following Standard Webhooks would, and keeps those that no trusted secret verifies in
 * `unverified`; `close()` then fails, so no suite ends with a delivery that such an integrator would refuse.
 */
export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  body: string;
  json: { id: string; type: string; createdAt: string; party: { type: string; id: string }; data: Record<string, any> };
  /** performance.now() when the request's body was complete. */
  receivedAt: number;
  /** The trusted secret that verified it with the standardwebhooks library (null: none did; undefined: none trusted). */
  verifiedWith?: string | null;
}

export interface ReceiverOptions {
  /** The receiver's clock for the library's 5-minute window (the test's fake clock; default the real one). */
  now?: () => Date;
  /** False: trust nothing, verify nothing (a test of deliveries signed by a process whose clock is wrong on purpose). */
  oracle?: boolean;
}

/** The receivers listening now, by URL: registerEndpoint tells the one at an endpoint's URL its secret. */
const listening = new Map<string, WebhookReceiver>();
export const receiverAt = (url: string): WebhookReceiver | undefined => listening.get(url);

/** The library's own verify, with Date.now at the receiver's clock for that synchronous call only. */
function verifiedWith(
  secrets: readonly string[],
  body: string,
  headers: IncomingHttpHeaders,
  now: (() => Date) | undefined,
): string | null {
  const flat = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, String(value)]));
  const realNow = Date.now;
  if (now) Date.now = () => now().getTime();
  try {
    for (const secret of secrets) {
      try {
        new Webhook(secret).verify(body, flat);
        return secret;
      } catch {
        // the next trusted secret
      }
    }
    return null;
  } finally {
    Date.now = realNow;
  }
}

export type Responder = (request: ReceivedWebhook, index: number) => number | Promise<number>;

export interface WebhookReceiver {
  url: string;
  port: number;
  received: ReceivedWebhook[];
  /** Sets how the next requests are answered (default: 200). */
  respond(responder: Responder): void;
  /** From now on every request must verify, with the standardwebhooks library, with one of the trusted secrets. */
  trust(secret: string): void;
  /** The requests received while a secret was trusted that none verified. */
  unverified: ReceivedWebhook[];
  /** Distinct event ids in the order of their first arrival. */
  eventIDs(): string[];
  /** Waits until at least `count` requests arrived. */
  waitForRequests(count: number, timeoutMs?: number): Promise<void>;
  /** Waits until an event of this type arrived, and returns its first delivery. */
  waitForType(type: string, timeoutMs?: number): Promise<ReceivedWebhook>;
  /** Stops listening (connections are refused) until `listen()` again, on the same port. */
  down(): Promise<void>;
  listen(): Promise<void>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(
  path = '/hooks',
  port = 0,
  options: ReceiverOptions = {},
): Promise<WebhookReceiver> {
  let responder: Responder = () => 200;
  const received: ReceivedWebhook[] = [];
  const trusted: string[] = [];
  const unverified: ReceivedWebhook[] = [];
  let server: Server | undefined;
  let boundPort = port;

  const listen = async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const request: ReceivedWebhook = {
          headers: req.headers,
          body,
          json: JSON.parse(body),
          receivedAt: performance.now(),
        };
        if (trusted.length > 0) {
          request.verifiedWith = verifiedWith(trusted, body, req.headers, options.now);
          if (request.verifiedWith === null) unverified.push(request);
        }
        const index = received.push(request) - 1;
        void Promise.resolve(responder(request, index)).then((status) => {
          if (!res.destroyed)
            res.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : `refused with ${status}`);
        });
      });
    });
    await new Promise<void>((resolve) => server!.listen(boundPort, '127.0.0.1', resolve));
    boundPort = (server!.address() as AddressInfo).port;
  };
  await listen();

  const url = `http://127.0.0.1:${boundPort}${path}`;
  const stop = async () => {
    if (!server) return;
    const closing = server;
    server = undefined;
    closing.closeAllConnections();
    await new Promise<void>((resolve) => closing.close(() => resolve()));
  };
  const close = async () => {
    if (listening.get(url) === receiver) listening.delete(url);
    await stop();
    if (unverified.length > 0)
      throw new Error(
        `${unverified.length} webhook deliveries at ${url} failed Standard Webhooks verification with the endpoint's secret: ${unverified
          .slice(0, 3)
          .map((r) => `${r.json.id} ${JSON.stringify(r.headers['webhook-signature'])}`)
          .join('; ')}`,
      );
  };

  const receiver: WebhookReceiver = {
    url,
    port: boundPort,
    received,
    unverified,
    respond: (next) => (responder = next),
    trust: (secret) => {
      if (options.oracle !== false) trusted.push(secret);
    },
    eventIDs: () => [...new Set(received.map((r) => r.json.id))],
    waitForRequests: (count, timeoutMs = 15_000) => waitFor(() => received.length >= count, timeoutMs),
    async waitForType(type, timeoutMs = 15_000) {
      await waitFor(() => received.some((r) => r.json.type === type), timeoutMs);
      return received.find((r) => r.json.type === type)!;
    },
    down: stop,
    listen,
    close,
  };
  listening.set(url, receiver);
  return receiver;
}
