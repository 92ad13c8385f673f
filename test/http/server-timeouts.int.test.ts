/**
 * The production HTTP server (src/server.ts, createHttpServer): its timeouts come from the configuration,
 * and draining lets the requests in flight finish while it refuses new connections and closes idle
 * keep-alive connections at once (with a 65 s keep-alive timeout, a drain that waited for them would outlast
 * any orchestrator's grace period). Each request here is held open by the test until it says so: no timing.
 */
import { Agent, request, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { createHttpServer } from '../../src/server.ts';
import { tryConnect } from '../support/tcp.ts';

const servers: Server[] = [];
const agents: Agent[] = [];
afterEach(async () => {
  for (const agent of agents.splice(0)) agent.destroy();
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A server whose /slow requests wait until the test releases them; every other request is answered at once. */
async function startServer() {
  const releases: Array<() => void> = [];
  const arrived: Array<() => void> = [];
  const { server, drain } = createHttpServer((req, res) => {
    if (req.url === '/slow') {
      releases.push(() => res.end('slow done'));
      arrived.shift()?.();
      return;
    }
    if (req.url === '/streaming') {
      // Its headers (keep-alive) are on their way before the drain begins: only closing the connection once
      // the response ends can keep the drain from waiting for the keep-alive timeout.
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('streaming…');
      releases.push(() => res.end('streaming done'));
      arrived.shift()?.();
      return;
    }
    res.end('ok');
  }, loadConfig({}));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  /** Resolves when the next /slow or /streaming request has reached the handler. */
  const nextSlowArrival = () => new Promise<void>((resolve) => arrived.push(resolve));
  return { server, drain, port, releaseAll: () => releases.splice(0).forEach((release) => release()), nextSlowArrival };
}

/** A GET on a kept-alive connection of its own (a keep-alive agent per request: the test watches each socket). */
function get(port: number, path: string): Promise<{ response: IncomingMessage; body: string; socket: Socket }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  agents.push(agent);
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent });
    req.once('error', reject);
    req.once('response', (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.once('end', () => resolve({ response, body, socket: req.socket! }));
    });
    req.end();
  });
}

const closed = (socket: Socket) =>
  socket.closed ? Promise.resolve() : new Promise<void>((resolve) => socket.once('close', () => resolve()));

describe('HTTP server timeouts', () => {
  it("given the default configuration, when the server is created, then idle keep-alive connections outlive a load balancer's 60 s idle timeout, and a client has 10 s to send its headers", () => {
    const { server } = createHttpServer(() => {}, loadConfig({}));
    expect(server.keepAliveTimeout).toBe(65_000);
    expect(server.headersTimeout).toBe(10_000);
    expect(server.requestTimeout).toBe(120_000);
  });

  it('given HTTP_KEEP_ALIVE_TIMEOUT_MS, HTTP_HEADERS_TIMEOUT_MS and HTTP_REQUEST_TIMEOUT_MS, when the server is created, then it has those timeouts', () => {
    const config = loadConfig({
      HTTP_KEEP_ALIVE_TIMEOUT_MS: '620000',
      HTTP_HEADERS_TIMEOUT_MS: '621000',
      HTTP_REQUEST_TIMEOUT_MS: '700000',
    });
    const { server } = createHttpServer(() => {}, config);
    expect([server.keepAliveTimeout, server.headersTimeout, server.requestTimeout]).toEqual([
      620_000, 621_000, 700_000,
    ]);
  });

  it('given only a longer keep-alive timeout, when loaded, then the headers timeout stays short (it does not time idle keep-alive connections)', () => {
    expect(loadConfig({ HTTP_KEEP_ALIVE_TIMEOUT_MS: '620000' }).HTTP_HEADERS_TIMEOUT_MS).toBe(10_000);
  });

  it('given a request timeout shorter than the headers timeout, when loaded, then it is refused naming the variable (Node would refuse the server later, less clearly)', () => {
    expect(() => loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '130000' })).toThrow(ConfigError);
    expect(() => loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '130000' })).toThrow(
      /HTTP_REQUEST_TIMEOUT_MS: must be at least HTTP_HEADERS_TIMEOUT_MS \(130000 ms/,
    );
    expect(() => loadConfig({ HTTP_REQUEST_TIMEOUT_MS: 'soon' })).toThrow(/HTTP_REQUEST_TIMEOUT_MS/);
  });
});

/**
 * Node times a request's headers from its first byte (a new connection's from the connection): a keep-alive
 * connection between two requests is not timed by it, only by the keep-alive timeout. These use a headers timeout
 * of half a second (below the 1 s the configuration accepts: what is checked scales with it, the server's check
 * interval too) and a keep-alive timeout far beyond the test, and wait real time. A close is expected no sooner
 * than the timeout and no later than 1.5 s past it: the slack a busy machine needs, whatever the timeout.
 */
describe('the headers timeout', () => {
  const TIMEOUT_MS = 500;
  const LATE_MS = TIMEOUT_MS + 1500;
  async function startShort() {
    const config = { ...loadConfig({}), HTTP_HEADERS_TIMEOUT_MS: TIMEOUT_MS, HTTP_REQUEST_TIMEOUT_MS: TIMEOUT_MS };
    const { server } = createHttpServer((_req, res) => res.end('ok'), config);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  }
  /** A raw connection that records what it receives and when it closed (ms after it connected). */
  async function rawConnection(port: number) {
    const socket = connect(port, '127.0.0.1');
    const started = Date.now();
    await new Promise((resolve) => socket.once('connect', resolve));
    const state = { received: '', closedAfterMs: undefined as number | undefined, socket };
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (state.received += chunk));
    socket.on('error', () => {});
    socket.once('close', () => (state.closedAfterMs = Date.now() - started));
    return state;
  }
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('given a short headers timeout, when a keep-alive connection stays idle three times longer between two requests, then it is not closed and answers the second request', async () => {
    const port = await startShort();
    const connection = await rawConnection(port);
    connection.socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await sleep(3 * TIMEOUT_MS);
    expect(connection.closedAfterMs).toBeUndefined();
    expect(connection.received).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*Connection: keep-alive/);
    connection.socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await sleep(200);
    expect(connection.received.match(/HTTP\/1\.1 200 OK/g)).toHaveLength(2);
    expect(connection.closedAfterMs).toBeUndefined();
    connection.socket.destroy();
  });

  it('given a short headers timeout, when a kept-alive connection starts its next request and stalls in its headers, then it gets 408 and is closed within about the timeout from that first byte', async () => {
    const port = await startShort();
    const connection = await rawConnection(port);
    connection.socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await sleep(1.5 * TIMEOUT_MS); // idle longer than the timeout: it must not count
    const firstByte = Date.now();
    connection.socket.write('GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    await new Promise((resolve) => connection.socket.once('close', resolve));
    const after = Date.now() - firstByte;
    expect(after).toBeGreaterThanOrEqual(0.9 * TIMEOUT_MS);
    expect(after).toBeLessThan(LATE_MS);
    expect(connection.received).toMatch(/HTTP\/1\.1 408 Request Timeout/);
  });

  it('given a short headers timeout, when a client connects and sends nothing, then it is closed within about the timeout', async () => {
    const port = await startShort();
    const connection = await rawConnection(port);
    await new Promise((resolve) => connection.socket.once('close', resolve));
    expect(connection.closedAfterMs).toBeGreaterThanOrEqual(0.9 * TIMEOUT_MS);
    expect(connection.closedAfterMs).toBeLessThan(LATE_MS);
  });
});

describe('draining the HTTP server', () => {
  it('given a request in flight, when the server drains, then new connections are refused, the request completes (closing its connection), and only then is the drain done', async () => {
    const { drain, port, releaseAll, nextSlowArrival } = await startServer();
    const arrived = nextSlowArrival();
    const slow = get(port, '/slow');
    await arrived;

    let drained = false;
    const draining = drain().then(() => (drained = true));
    expect(await tryConnect(port)).toBe('refused');
    expect(drained).toBe(false);

    releaseAll();
    const { response, body, socket } = await slow;
    expect(response.statusCode).toBe(200);
    expect(body).toBe('slow done');
    expect(response.headers.connection).toBe('close');
    await closed(socket);
    await draining;
    expect(drained).toBe(true);
  });

  it('given an idle keep-alive connection, when the server drains, then the connection is closed at once and the drain completes (not after the 65 s keep-alive timeout)', async () => {
    const { drain, port } = await startServer();
    const { response, socket } = await get(port, '/');
    expect(response.headers.connection).toBe('keep-alive');
    expect(socket.destroyed).toBe(false);

    await drain();
    await closed(socket);
  });

  for (const [path, headers] of [
    ['/slow', 'not yet sent'],
    ['/streaming', 'already sent'],
  ] as const) {
    it(`given a keep-alive connection whose request is in flight (headers ${headers}), when the server drains and the request then completes, then its now idle connection is closed and the drain completes`, async () => {
      const { drain, port, releaseAll, nextSlowArrival } = await startServer();
      // The connection has served one request already and is kept alive; its second request is in flight.
      const socket = connect(port, '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      let received = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (received += chunk));
      socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
      const arrived = nextSlowArrival();
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
      await arrived;

      const draining = drain();
      releaseAll();
      await closed(socket);
      await draining;
      expect(received).toContain(`${path.slice(1)} done`);
    });
  }
});
