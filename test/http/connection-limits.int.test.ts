/**
 * The connection caps of the production HTTP server (src/http/connection-limits.ts through createHttpServer):
 * per peer address and in all, from the configuration. A second client uses another loopback address
 * (127.0.0.2: on Linux the whole 127.0.0.0/8 is the loopback interface).
 */
import type { Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import type { RefusedConnection } from '../../src/http/connection-limits.ts';
import { createHttpServer } from '../../src/server.ts';

const servers: Server[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function start(env: Record<string, string>) {
  const refused: RefusedConnection[] = [];
  const { server } = createHttpServer((_req, res) => res.end('ok'), loadConfig(env), {
    onRefusedConnection: (reason) => refused.push(reason),
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, refused };
}

/** Connects from `from`, sends a GET, and says whether it was answered or closed unanswered. */
async function request(port: number, from = '127.0.0.1'): Promise<'answered' | 'closed'> {
  const socket = connect({ port, host: '127.0.0.1', localAddress: from });
  sockets.push(socket);
  let received = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (received += chunk));
  socket.on('error', () => {});
  socket.once('connect', () => socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
  return new Promise((resolve) => {
    socket.on('data', () => received.includes('\r\n\r\nok') && resolve('answered'));
    socket.once('close', () => resolve(received.includes('200 OK') ? 'answered' : 'closed'));
  });
}

/** Opens a connection from `from` that sends nothing; resolves once it is connected. */
async function hold(port: number, from = '127.0.0.1'): Promise<Socket> {
  const socket = connect({ port, host: '127.0.0.1', localAddress: from });
  sockets.push(socket);
  socket.on('error', () => {});
  await new Promise((resolve) => socket.once('connect', resolve));
  return socket;
}

describe('connection caps', () => {
  it('given the default configuration, when loaded, then a process accepts 10,000 connections in all and 256 per address', () => {
    const config = loadConfig({});
    expect([config.HTTP_MAX_CONNECTIONS, config.HTTP_MAX_CONNECTIONS_PER_ADDRESS]).toEqual([10_000, 256]);
  });

  it('given TRUST_PROXY as a hop count, when loaded, then there is no per-address cap unless one is set (every connection may come from the proxy)', () => {
    expect(loadConfig({ TRUST_PROXY: '1' }).HTTP_MAX_CONNECTIONS_PER_ADDRESS).toBe(0);
    expect(
      loadConfig({ TRUST_PROXY: '1', HTTP_MAX_CONNECTIONS_PER_ADDRESS: '2000' }).HTTP_MAX_CONNECTIONS_PER_ADDRESS,
    ).toBe(2000);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.5' }).HTTP_MAX_CONNECTIONS_PER_ADDRESS).toBe(256);
    expect(() => loadConfig({ HTTP_MAX_CONNECTIONS_PER_ADDRESS: '-1' })).toThrow(/HTTP_MAX_CONNECTIONS_PER_ADDRESS/);
    expect(() => loadConfig({ HTTP_MAX_CONNECTIONS: 'many' })).toThrow(/HTTP_MAX_CONNECTIONS/);
  });

  it('given a per-address cap of 3, when one address holds 3 connections, then its 4th is closed unanswered while another address is served, and a freed slot is taken again', async () => {
    const { port, refused } = await start({ HTTP_MAX_CONNECTIONS_PER_ADDRESS: '3' });
    const held = [await hold(port), await hold(port), await hold(port)];
    expect(await request(port)).toBe('closed');
    expect(refused).toEqual(['per-address']);
    expect(await request(port, '127.0.0.2')).toBe('answered');

    held[0]!.destroy();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await request(port)).toBe('answered');
  });

  it('given a per-address cap of 0, when one address opens many connections, then none is refused', async () => {
    const { port, refused } = await start({ HTTP_MAX_CONNECTIONS_PER_ADDRESS: '0' });
    for (let i = 0; i < 300; i++) await hold(port);
    expect(await request(port)).toBe('answered');
    expect(refused).toEqual([]);
  });

  it('given TRUST_PROXY listing the proxy, when the proxy holds more connections than the per-address cap, then they are all served (only the total counts them)', async () => {
    const { port, refused } = await start({ TRUST_PROXY: '127.0.0.1', HTTP_MAX_CONNECTIONS_PER_ADDRESS: '2' });
    for (let i = 0; i < 3; i++) await hold(port);
    expect(await request(port)).toBe('answered');
    await hold(port, '127.0.0.2');
    await hold(port, '127.0.0.2');
    expect(await request(port, '127.0.0.2')).toBe('closed');
    expect(refused).toEqual(['per-address']);
  });

  it('given a total cap of 4, when 4 connections are open from several addresses, then the next one is closed unanswered, whatever its address', async () => {
    const { port, refused } = await start({ HTTP_MAX_CONNECTIONS: '4' });
    await hold(port);
    await hold(port);
    await hold(port, '127.0.0.2');
    await hold(port, '127.0.0.3');
    expect(await request(port, '127.0.0.4')).toBe('closed');
    expect(refused).toEqual(['total']);
  });
});
