/**
 * Requests Node's parser refuses before the app sees them (src/http/client-errors.ts): answered with a
 * problem body and an X-Request-Id like every other refusal, on the production server (createHttpServer).
 */
import type { Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { createHttpServer } from '../../src/server.ts';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function startServer(): Promise<number> {
  const { server } = createHttpServer((_req, res) => res.end('ok'), loadConfig({}));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** Sends raw bytes and resolves with everything the server wrote until it closed the connection. */
function raw(port: number, bytes: string): Promise<{ status: number; headers: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = received.split('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), headers: head, body });
    });
    socket.write(bytes);
  });
}

describe('when a request is refused by the HTTP parser', () => {
  it.each([
    ['a header', `GET /api/v1/merchants/m/balance HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`],
    ['the URL', `GET /api/v1/merchants/${'m'.repeat(20_000)}/balance HTTP/1.1\r\nHost: x\r\n\r\n`],
  ])(
    'when %s is larger than the maximum header size, then it gets 431 with a problem body and a request id',
    async (_what, bytes) => {
      const port = await startServer();
      const response = await raw(port, bytes);
      expect(response.status).toBe(431);
      expect(response.headers).toMatch(/^Content-Type: application\/problem\+json/im);
      const requestId = /^X-Request-Id: ([0-9a-f-]{36})$/im.exec(response.headers)?.[1];
      expect(requestId).toBeDefined();
      expect(JSON.parse(response.body)).toEqual({
        type: '/problems/request-header-fields-too-large',
        status: 431,
        title: 'Request Header Fields Too Large',
        detail: expect.stringMatching(/larger than/),
        requestId,
      });
    },
  );

  it('when the request is not HTTP, then it gets 400 with a validation problem', async () => {
    const port = await startServer();
    const response = await raw(port, 'HELLO\r\n\r\n');
    expect(response.status).toBe(400);
    expect(JSON.parse(response.body)).toMatchObject({
      type: '/problems/input-validation-problems',
      status: 400,
      errors: [{ field: 'request' }],
    });
  });
});
