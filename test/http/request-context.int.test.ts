import express from 'express';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { requestContext, requestTraceparent } from '../../src/http/request-context.ts';

/** The request context middleware on its own: what a request's traceparent header becomes for its commands. */
describe('request traceparent', () => {
  let server: ReturnType<express.Express['listen']>;
  let baseUrl: string;

  beforeAll(async () => {
    const app = express();
    app.use(requestContext(createLogger('silent')));
    app.get('/', (_req, res) => void res.json({ traceparent: requestTraceparent(res) ?? null }));
    await new Promise<void>((resolve) => (server = app.listen(0, '127.0.0.1', () => resolve())));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const seen = async (headers: Record<string, string>) =>
    ((await (await fetch(baseUrl, { headers })).json()) as { traceparent: string | null }).traceparent;

  it('when a request sends a well-formed traceparent, then its commands get it as sent', async () => {
    expect(await seen({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' })).toBe(
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    );
  });

  it('when a request sends none, or a malformed one, then its commands get none (the request is served as usual)', async () => {
    expect(await seen({})).toBeNull();
    expect(await seen({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01' })).toBeNull();
    expect(await seen({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01, x' })).toBeNull();
    expect(await seen({ traceparent: '{"json":"in the hash chain"}' })).toBeNull();
  });
});
