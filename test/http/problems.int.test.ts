import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import { Router } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainError } from '../../src/domain/errors.ts';
import { createApp } from '../../src/http/app.ts';
import { authenticate } from '../../src/http/authenticate.ts';
import { createLogger } from '../../src/logger.ts';
import { EventStoreUnavailableError } from '../../src/ports/event-store.ts';
import { StoreCorruptedError } from '../../src/ports/store-corrupted.ts';
import { ApiKeyDirectory } from '../../src/projections/api-key-directory.ts';

/**
 * Every problem response the HTTP layer writes (src/http/problems.ts), 4xx and 5xx, in-process on port 0: each
 * names its request in a `requestId` member equal to the X-Request-Id header, so that a client who logs the
 * body alone can still quote it to support.
 */
let server: Server;
let base: string;

beforeAll(async () => {
  const router = Router();
  router.get(
    '/api/v1/authenticated',
    authenticate(new ApiKeyDirectory(), () => new Date()),
    (_req, res) => void res.json({}),
  );
  router.get('/api/v1/refused', () => {
    throw new DomainError('DAILY_VOLUME_EXCEEDED', 'over the day');
  });
  router.get('/api/v1/unavailable', () => {
    throw new EventStoreUnavailableError('down');
  });
  router.get('/api/v1/corrupted', () => {
    throw new StoreCorruptedError('event store', 'bad page');
  });
  router.get('/api/v1/broken', () => {
    throw new Error('a bug');
  });
  const app = createApp({
    logger: createLogger('silent'),
    clock: () => new Date(),
    trustProxy: false,
    routers: [router],
    readiness: async () => ({ ready: true }),
  });
  server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const CASES: Array<[string, string, number]> = [
  ['a path of the API that is no endpoint', '/api/v1/nothing-here', 400],
  ['an address outside the API', '/elsewhere', 404],
  ['a request without credentials', '/api/v1/authenticated', 401],
  ['a refusal of a rule', '/api/v1/refused', 403],
  ['an unexpected error', '/api/v1/broken', 500],
  ['a store that cannot be reached', '/api/v1/unavailable', 503],
  ['a corrupted store', '/api/v1/corrupted', 503],
];

describe('problem responses name their request', () => {
  for (const [what, path, status] of CASES) {
    it(`when the answer is ${status} for ${what}, then the problem body carries the request id of the X-Request-Id header`, async () => {
      const ours = await fetch(base + path);
      expect(ours.status).toBe(status);
      expect(ours.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const body = (await ours.json()) as Record<string, unknown>;
      expect(body.requestId).toBe(ours.headers.get('x-request-id'));
      expect(body.requestId).toMatch(/^[0-9a-f-]{36}$/);

      const theirs = await fetch(base + path, { headers: { 'X-Request-Id': 'client-req.42' } });
      expect(((await theirs.json()) as Record<string, unknown>).requestId).toBe('client-req.42');
    });
  }
});
