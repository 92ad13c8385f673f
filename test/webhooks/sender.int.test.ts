import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newWebhookSecret, signWebhook, verifyWebhookSignature } from '../../src/domain/webhook-secrets.ts';
import type { Resolver } from '../../src/webhooks/address-guard.ts';
import { attemptDelivery, RESPONSE_BODY_LIMIT } from '../../src/webhooks/sender.ts';

/** One delivery attempt against a real receiving server on 127.0.0.1. */
interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

const received: Received[] = [];
let server: Server;
let base: string;
let port: number;
const routes: Record<string, (res: ServerResponse) => void> = {
  '/ok': (res) => res.writeHead(204).end(),
  '/redirect': (res) => res.writeHead(302, { location: '/ok' }).end(),
  '/error': (res) => res.writeHead(500, { 'content-type': 'text/plain' }).end('e'.repeat(5000)),
  // Answers only when the test ends (the server's close drops it): a receiver that hangs.
  '/hang': () => undefined,
};

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      (routes[req.url ?? ''] ?? ((r: ServerResponse) => r.writeHead(404).end()))(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const dev = { allowLoopback: true };
const body = JSON.stringify({ id: 'evt_1', type: 'operation.completed', data: { operationID: 'op_1' } });
const lastAt = (path: string): Received => [...received].reverse().find((r) => r.path === path)!;
const hits = (path: string) => received.filter((r) => r.path === path).length;

describe('a webhook delivery attempt', () => {
  it('when the receiver answers 2xx, then the attempt succeeds and the receiver can verify the signature', async () => {
    const secret = newWebhookSecret();
    const t = Math.floor(Date.now() / 1000);
    const result = await attemptDelivery({
      url: `${base}/ok`,
      body,
      headers: {
        'webhook-id': 'evt_1',
        'webhook-timestamp': String(t),
        'webhook-signature': signWebhook(secret, t, body),
      },
      timeoutMs: 5000,
      rules: dev,
    });
    expect(result).toMatchObject({ ok: true, statusCode: 204, error: null });
    const got = lastAt('/ok');
    expect(got.body).toBe(body);
    expect(got.headers['content-type']).toBe('application/json');
    expect(got.headers['webhook-id']).toBe('evt_1');
    expect(verifyWebhookSignature(secret, String(got.headers['webhook-signature']), got.body, t)).toBe(true);
  });

  it('when the receiver redirects, then the attempt fails and the redirect is not followed', async () => {
    const before = hits('/ok');
    const result = await attemptDelivery({ url: `${base}/redirect`, body, headers: {}, timeoutMs: 5000, rules: dev });
    expect(result).toMatchObject({ ok: false, statusCode: 302, error: 'redirect (302) not followed' });
    expect(hits('/ok')).toBe(before);
  });

  it('when the receiver fails with a long body, then the attempt fails keeping the first KiB of it', async () => {
    const result = await attemptDelivery({ url: `${base}/error`, body, headers: {}, timeoutMs: 5000, rules: dev });
    expect(result).toMatchObject({ ok: false, statusCode: 500, error: 'HTTP 500' });
    expect(result.responseBody).toBe('e'.repeat(RESPONSE_BODY_LIMIT));
  });

  it('when the receiver does not answer within the timeout, then the attempt fails as timed out', async () => {
    const result = await attemptDelivery({ url: `${base}/hang`, body, headers: {}, timeoutMs: 200, rules: dev });
    expect(result).toMatchObject({ ok: false, statusCode: null, error: 'timed out', detail: 'timed out after 200 ms' });
    expect(result.durationMs).toBeGreaterThanOrEqual(190);
  });

  it('when loopback is not allowed, then nothing is sent to 127.0.0.1', async () => {
    const before = received.length;
    const result = await attemptDelivery({
      url: `${base}/ok`,
      body,
      headers: {},
      timeoutMs: 5000,
      rules: { allowLoopback: false },
    });
    expect(result).toMatchObject({
      ok: false,
      statusCode: null,
      error: 'refused: address not allowed',
      detail: expect.stringMatching(/loopback/),
    });
    expect(received.length).toBe(before);
  });

  it('when the name resolves to a private address, then the attempt is refused before connecting', async () => {
    const privateResolver: Resolver = async () => [{ address: '10.20.30.40', family: 4 }];
    const result = await attemptDelivery({
      url: `http://hooks.internal.test:${port}/ok`,
      body,
      headers: {},
      timeoutMs: 5000,
      rules: dev,
      resolve: privateResolver,
    });
    // The maker sees the category; how the host resolved is for the operator's log only.
    expect(result).toMatchObject({
      ok: false,
      statusCode: null,
      error: 'refused: address not allowed',
      detail: expect.stringMatching(/10\.20\.30\.40 \(private\)/),
    });
  });

  it('when nothing listens at the address, then the attempt fails as "connection failed", without the address or the system error', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const result = await attemptDelivery({
      url: `http://receiver.test:${closedPort}/ok`,
      body,
      headers: {},
      timeoutMs: 5000,
      rules: dev,
      resolve: async () => [{ address: '127.0.0.1', family: 4 }],
    });
    expect(result).toMatchObject({
      ok: false,
      statusCode: null,
      error: 'connection failed',
      detail: expect.stringMatching(/ECONNREFUSED 127\.0\.0\.1/),
    });
  });

  it('when the name does not resolve, then the attempt fails as "host not found", without the resolver\'s message', async () => {
    const failing: Resolver = async () => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND hooks.corp.internal'), { code: 'ENOTFOUND' });
    };
    const result = await attemptDelivery({
      url: 'https://hooks.corp.internal/ok',
      body,
      headers: {},
      timeoutMs: 5000,
      rules: dev,
      resolve: failing,
    });
    expect(result).toMatchObject({
      ok: false,
      statusCode: null,
      error: 'host not found',
      detail: 'DNS: getaddrinfo ENOTFOUND hooks.corp.internal',
    });
  });

  it('when the receiver answers, then the error is its status, with nothing for the operator beyond it', async () => {
    const result = await attemptDelivery({ url: `${base}/error`, body, headers: {}, timeoutMs: 5000, rules: dev });
    expect(result).toMatchObject({ error: 'HTTP 500', detail: 'HTTP 500' });
  });

  it('when the name resolves to an allowed address, then the request goes to that address with the name as Host', async () => {
    const resolver: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];
    const result = await attemptDelivery({
      url: `http://receiver.test:${port}/ok`,
      body,
      headers: {},
      timeoutMs: 5000,
      rules: dev,
      resolve: resolver,
    });
    expect(result.ok).toBe(true);
    expect(lastAt('/ok').headers.host).toBe(`receiver.test:${port}`);
  });
});
