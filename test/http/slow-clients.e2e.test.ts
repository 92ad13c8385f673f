/**
 * Slow clients (slowloris) against the production HTTP server (createHttpServer, default configuration) in
 * front of the whole app: one address opens 5,000 connections, each sending a request line and then a header
 * byte now and then, never finishing its headers. Another address's /health and create are answered within
 * a second, and the process holds no more of the attacker's connections than the per-address cap.
 *
 * Resources: the attacker is a child process holding its 5,000 sockets (within this machine's `ulimit -n` of
 * 20,000; a lower limit would stop the attacker, not the server); the server holds at most the cap of them.
 * The reproduction that made /health unreachable ran the server under a lower limit, where the attacker's
 * connections took every descriptor; here the server's own count of the attacker's connections shows the cap.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpServer } from '../../src/server.ts';
import { startTestSystem, WITHOUT_EXECUTOR, type TestSystem } from '../support/system.ts';

const SLOW_CONNECTIONS = 5_000;
const ATTACKER = '127.0.0.1';
const CLIENT = '127.0.0.2'; // on Linux the whole 127.0.0.0/8 is loopback

/**
 * The slowloris client: opens COUNT connections from ADDRESS in batches below the listen backlog, sends each a
 * request line and one header, never the end of the headers, then a header line every half second on those
 * still open. Prints {"connected": n} once every connection has been made. Plain JavaScript for `node -e`.
 */
const ATTACKER_SCRIPT = `
const net = require('node:net');
const [port, address, count] = process.argv.slice(1);
const open = new Set();
let connected = 0;
async function main() {
  for (let batch = 0; batch < Number(count); batch += 500) {
    await Promise.all(Array.from({ length: 500 }, () => new Promise((resolve) => {
      const socket = net.connect({ port: Number(port), host: '127.0.0.1', localAddress: address });
      socket.on('error', () => resolve());
      socket.once('close', () => { open.delete(socket); resolve(); });
      socket.once('connect', () => {
        connected++;
        open.add(socket);
        socket.write('GET /health HTTP/1.1\\r\\nHost: wallet-ops\\r\\n', () => resolve());
      });
    })));
  }
  setInterval(() => open.forEach((socket) => socket.write('X-a: b\\r\\n')), 500);
  process.stdout.write(JSON.stringify({ connected }) + '\\n');
}
main();
`;

/** A request from CLIENT's address; resolves with its status, body and how long it took. */
function timed(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ status: number; body: string; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method, localAddress: CLIENT, headers, agent: false },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.once('end', () => resolve({ status: res.statusCode!, body: text, ms: performance.now() - started }));
      },
    );
    req.once('error', reject);
    req.end(body);
  });
}

describe('slow clients', () => {
  let sys: TestSystem;
  let server: Server;
  let port: number;
  let attacker: ChildProcess | undefined;

  beforeAll(async () => {
    sys = await startTestSystem({}, undefined, WITHOUT_EXECUTOR);
    ({ server } = createHttpServer(sys.system.app, sys.config));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    attacker?.kill('SIGKILL');
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    await sys?.close();
  });

  it(`given ${SLOW_CONNECTIONS.toLocaleString('en')} slow connections open from one address, when another address asks for /health and creates an operation, then each is answered within 1 s`, async () => {
    const distributor = await sys.party('distributor');
    await sys.credit(distributor.wallet, '1000');
    const { apiKey } = await distributor.key();
    const phone = await sys.individual('+2348123999001');

    // Warm: the first create of a process pays for its lazy start (code compiled, lookups filled), not for the attack.
    const create = () =>
      timed(
        port,
        'POST',
        `/api/v1/distributors/${distributor.ref.id}/operations`,
        {
          authorization: `Bearer ${apiKey}`,
          'content-type': 'application/json',
          'idempotency-key': randomUUID(),
        },
        JSON.stringify({ operationType: 'cash-in', amount: '10', phoneTo: phone }),
      );
    expect((await create()).status).toBe(200);

    // The attack, from a process of its own (as an attacker is: its sockets and its work are not the server's).
    attacker = spawn(process.execPath, ['-e', ATTACKER_SCRIPT, String(port), ATTACKER, String(SLOW_CONNECTIONS)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const report = await new Promise<string>((resolve, reject) => {
      let out = '';
      attacker!.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('\n')) resolve(out.trim());
      });
      attacker!.once('exit', (code) => reject(new Error(`the attacker exited (${code}) before it was ready: ${out}`)));
    });
    const { connected } = JSON.parse(report) as { connected: number };
    expect(connected).toBe(SLOW_CONNECTIONS); // every connection was accepted by the kernel, and got its request line
    await new Promise((resolve) => setTimeout(resolve, 500));

    const health = await timed(port, 'GET', '/health');
    expect(health.status).toBe(200);
    expect(health.ms, `/health took ${Math.round(health.ms)} ms`).toBeLessThan(1000);

    const created = await create();
    expect(created.status, created.body).toBe(200);
    expect(created.ms, `the create took ${Math.round(created.ms)} ms`).toBeLessThan(1000);

    // The process holds at most the per-address cap of the attacker's connections (plus the client's own).
    const held = await new Promise<number>((resolve, reject) =>
      server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
    );
    expect(held).toBeLessThanOrEqual(sys.config.HTTP_MAX_CONNECTIONS_PER_ADDRESS + 2);
  }, 60_000);
});
