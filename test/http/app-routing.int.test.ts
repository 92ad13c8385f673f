import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import { Router } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/http/app.ts';
import { createLogger } from '../../src/logger.ts';

/**
 * How createApp routes (src/http/app.ts): the probes before a corrupted store is refused, the API's routers in
 * order, express's matching and automatic answers kept (any case and a trailing slash, HEAD with GET, OPTIONS with
 * Allow), although everything before the error handlers is one layer and a router of routes alone is entered only
 * by the methods its routes answer.
 */
let server: Server;
let base: string;
let corrupted: Error | null = null;
const entered: string[] = [];

beforeAll(async () => {
  const writes = Router();
  writes.post('/api/v1/things/:id', (req, res) => void res.status(201).json({ created: req.params.id }));
  writes.post('/api/v1/things/:id/fail', (_req, _res, next) => next(new Error('a bug')));
  const reads = Router();
  reads.get(
    '/api/v1/things/:id',
    (_req, _res, next) => {
      entered.push('reads');
      next();
    },
    (req, res) => void res.json({ read: req.params.id }),
  );
  reads.get('/api/v1/rejects', async () => {
    await Promise.resolve();
    throw new Error('a rejected promise');
  });
  // A router with middleware of its own sees every request that reaches it, whatever its method.
  const watched = Router();
  watched.use((req, _res, next) => {
    // (The tests' fetch also asks for the API's description, which passes here too.)
    if (req.path !== '/api/v1/openapi.json') entered.push(`watched ${req.method}`);
    next();
  });
  watched.put('/api/v1/watched', (_req, res) => void res.status(204).end());
  const app = createApp({
    logger: createLogger('silent'),
    clock: () => new Date('2026-11-28T10:00:00Z'),
    trustProxy: false,
    routers: [writes, reads, watched],
    readiness: async () => ({ ready: true }),
    corrupted: () => corrupted,
  });
  server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const send = (method: string, path: string) => fetch(`${base}${path}`, { method });

describe('createApp routing', () => {
  it('when a probe is asked in another case or with a trailing slash, then it answers as express matches it', async () => {
    for (const path of ['/health', '/HEALTH', '/health/', '/Ready']) {
      const response = await send('GET', path);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('x-request-id'), path).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it('when a probe path is asked with another method, then nothing is served there (404)', async () => {
    const response = await send('POST', '/health');
    expect(response.status).toBe(404);
    expect(((await response.json()) as { type: string }).type).toBe('/problems/not-found');
  });

  it('when a GET comes for a path a POST-only router serves, then the next router answers it', async () => {
    entered.length = 0;
    const response = await send('GET', '/api/v1/things/t1');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ read: 't1' });
    expect(entered).toEqual(['reads']);
  });

  it('when a POST comes, then the router of its route answers it', async () => {
    const response = await send('POST', '/api/v1/things/t1');
    expect(response.status).toBe(201);
    expect(await response.json()).toEqual({ created: 't1' });
  });

  it('when a HEAD comes for a GET route, then the route answers it without a body', async () => {
    const response = await send('HEAD', '/api/v1/things/t1');
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('');
  });

  it("when an OPTIONS comes for a route's path, then express answers with the methods allowed there", async () => {
    const response = await send('OPTIONS', '/api/v1/things/t1');
    expect(response.status).toBe(200);
    expect(response.headers.get('allow')).toBe('POST');
  });

  it('when a router has middleware of its own, then every request reaching it passes it, whatever the method', async () => {
    entered.length = 0;
    expect((await send('DELETE', '/api/v1/nothing')).status).toBe(400);
    expect((await send('PUT', '/api/v1/watched')).status).toBe(204);
    expect(entered).toEqual(['watched DELETE', 'watched PUT']);
  });

  it('when a handler fails by next(error) or a rejected promise, then the problem handler answers 500', async () => {
    for (const [method, path] of [
      ['POST', '/api/v1/things/t1/fail'],
      ['GET', '/api/v1/rejects'],
    ] as const) {
      const response = await send(method, path);
      expect(response.status, path).toBe(500);
      expect(response.headers.get('content-type'), path).toMatch(/^application\/problem\+json/);
    }
  });

  it('given a corrupted store, when the API is asked, then it is refused, while the probes still answer', async () => {
    corrupted = new Error('bad page');
    try {
      expect((await send('GET', '/api/v1/things/t1')).status).toBe(500);
      expect((await send('GET', '/health')).status).toBe(200);
    } finally {
      corrupted = null;
    }
  });
});
