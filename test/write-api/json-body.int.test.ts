/**
 * The create route's own JSON reader (src/write-api/json-body.ts) against body-parser, which it replaces for the
 * usual request: the same body, sent once as `application/json` (read by jsonBody) and once as
 * `application/json; charset="utf-8"` (a quoted charset, which it leaves to body-parser), must end the same way.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type ErrorRequestHandler } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonBody } from '../../src/write-api/json-body.ts';

type Outcome = { body: unknown } | { status: number; type: string };

const utf8 = new TextDecoder('utf-8', { fatal: true });
const bodyParser = express.json({
  limit: '16kb',
  strict: true,
  inflate: false,
  type: () => true,
  verify: (_req, _res, buffer) => void utf8.decode(buffer),
});
let server: Server;
let port: number;
let readers: string[] = [];
let lastError: Promise<Outcome> = new Promise(() => {});
let errorSeen: (outcome: Outcome) => void = () => {};

beforeAll(async () => {
  const app = express();
  const fallback: express.RequestHandler = (req, res, next) => {
    readers.push('body-parser');
    bodyParser(req, res, next);
  };
  app.post('/', jsonBody(16 * 1024, [fallback]), (req, res) => {
    res.json({ body: req.body as unknown });
  });
  const onError: ErrorRequestHandler = (error: { status: number; type: string }, _req, res, _next) => {
    errorSeen({ status: error.status, type: error.type });
    res.status(error.status).json({ status: error.status, type: error.type });
  };
  app.use(onError);
  server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function post(body: Buffer, contentType: string): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const req = request(
      { port, host: '127.0.0.1', method: 'POST', headers: { 'content-type': contentType } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve(JSON.parse(text) as Outcome));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

describe('the create route JSON reader', () => {
  it.each([
    ['an object', Buffer.from('{"a":"1","b":[1,2]}')],
    ['an array', Buffer.from('[1]')],
    ['an object after whitespace', Buffer.from(' \r\n\t{"a":1}')],
    ['an object after a BOM', Buffer.concat([BOM, Buffer.from('{"a":1}')])],
    ['only whitespace', Buffer.from('   ')],
    ['a string at the top', Buffer.from('"a"')],
    ['null at the top', Buffer.from('null')],
    ['malformed JSON', Buffer.from('{"a":')],
    ['bytes that are not UTF-8', Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d])],
    ['an object as long as the limit', Buffer.from(`{"a":"${'x'.repeat(16 * 1024 - 8)}"}`)],
  ])('when the body is %s, then it ends as body-parser ends it', async (_name, body) => {
    readers = [];
    const fast = await post(body, 'application/json');
    const slow = await post(body, 'application/json; charset="utf-8"');
    expect(readers).toEqual(['body-parser']);
    expect(fast).toEqual(slow);
  });

  it('when a body is over the limit, then body-parser refuses it with a 413', async () => {
    readers = [];
    expect(await post(Buffer.from(`{"a":"${'x'.repeat(16 * 1024)}"}`), 'application/json')).toEqual({
      status: 413,
      type: 'entity.too.large',
    });
    expect(readers).toEqual(['body-parser']);
  });

  it('when the client stops sending before the Content-Length, then the request ends as aborted', async () => {
    lastError = new Promise((resolve) => (errorSeen = resolve));
    const req = request({
      port,
      host: '127.0.0.1',
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': '100' },
    });
    req.on('error', () => {});
    req.write('{"a":', () => req.destroy());
    expect(await lastError).toEqual({ status: 400, type: 'request.aborted' });
  });
});
