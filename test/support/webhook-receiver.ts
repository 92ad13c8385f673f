import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from './system.ts';

/**
 * A real HTTP server in the test process that receives webhook deliveries: it records every request and
 * answers what the test tells it to (a status, or a response held until the test releases it).
 */
export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  body: string;
  json: { id: string; type: string; createdAt: string; party: { type: string; id: string }; data: Record<string, any> };
  /** performance.now() when the request's body was complete. */
  receivedAt: number;
}

export type Responder = (request: ReceivedWebhook, index: number) => number | Promise<number>;

export interface WebhookReceiver {
  url: string;
  port: number;
  received: ReceivedWebhook[];
  /** Sets how the next requests are answered (default: 200). */
  respond(responder: Responder): void;
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

export async function startWebhookReceiver(path = '/hooks', port = 0): Promise<WebhookReceiver> {
  let responder: Responder = () => 200;
  const received: ReceivedWebhook[] = [];
  let server: Server | undefined;
  let boundPort = port;

  const listen = async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const request: ReceivedWebhook = { headers: req.headers, body, json: JSON.parse(body), receivedAt: performance.now() };
        const index = received.push(request) - 1;
        void Promise.resolve(responder(request, index)).then((status) => {
          if (!res.destroyed) res.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : `refused with ${status}`);
        });
      });
    });
    await new Promise<void>((resolve) => server!.listen(boundPort, '127.0.0.1', resolve));
    boundPort = (server!.address() as AddressInfo).port;
  };
  await listen();

  const close = async () => {
    if (!server) return;
    const closing = server;
    server = undefined;
    closing.closeAllConnections();
    await new Promise<void>((resolve) => closing.close(() => resolve()));
  };

  return {
    url: `http://127.0.0.1:${boundPort}${path}`,
    port: boundPort,
    received,
    respond: (next) => (responder = next),
    eventIDs: () => [...new Set(received.map((r) => r.json.id))],
    waitForRequests: (count, timeoutMs = 15_000) => waitFor(() => received.length >= count, timeoutMs),
    async waitForType(type, timeoutMs = 15_000) {
      await waitFor(() => received.some((r) => r.json.type === type), timeoutMs);
      return received.find((r) => r.json.type === type)!;
    },
    down: close,
    listen,
    close,
  };
}
