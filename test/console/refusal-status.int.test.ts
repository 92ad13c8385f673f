import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConsoleServices } from '../../src/console/context.ts';
import { consoleErrorHandler } from '../../src/console/error-page.ts';
import { DOMAIN_ERROR_CODES, DomainError, type DomainErrorCode } from '../../src/domain/errors.ts';
import { problemHandler } from '../../src/http/problems.ts';
import { createLogger } from '../../src/logger.ts';

/**
 * One refusal, one status: a DomainError answers the same status on a console page as in the API's problem
 * response. Both error handlers, the real ones, behind a route that throws the code of the path.
 */
const logger = createLogger('silent');
// A page for a visitor without a session reads nothing from the services; only an unexpected error logs.
const services = { deps: { logger } } as unknown as ConsoleServices;

function throwing(): express.Router {
  const router = express.Router();
  router.get('/:code', (req) => {
    throw new DomainError(req.params.code as DomainErrorCode, 'refused for the test');
  });
  return router;
}

let server: Server;
let baseUrl: string;

beforeAll(async () => {
  const app = express();
  app.use('/console', throwing(), consoleErrorHandler(services));
  app.use('/api', throwing(), problemHandler(logger));
  server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('the status of a refusal', () => {
  for (const code of DOMAIN_ERROR_CODES) {
    it(`when the domain refuses with ${code}, then the console page has the API problem's status`, async () => {
      const api = await fetch(`${baseUrl}/api/${code}`);
      const page = await fetch(`${baseUrl}/console/${code}`);
      expect((await api.json()).status).toBe(api.status);
      expect(page.status).toBe(api.status);
      expect(await page.text()).toContain('Refused for the test.');
    });
  }
});
