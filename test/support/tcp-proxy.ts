import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy that forwards every connection to one target port and moves to another when told: what HAProxy with
 * a read-write check, or a virtual IP, does for the clients of a PostgreSQL primary that fails over. Moving ends
 * the connections open to the old target at once (HAProxy's `on-marked-down shutdown-sessions`; a virtual IP's
 * old connections end with a reset from the new machine); a connection the target refuses is closed.
 */
export interface TcpProxy {
  port: number;
  /** Where new connections go from now on; the open ones are ended. */
  moveTo(targetPort: number): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  let target = targetPort;
  const open = new Set<Socket>();
  const track = (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  };
  const server: Server = createServer((client) => {
    const upstream = connect(target, '127.0.0.1');
    track(client);
    track(upstream);
    // Either end failing or closing ends the other: a client sees its server go away as a reset or an end.
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    port,
    moveTo(targetPort) {
      target = targetPort;
      for (const socket of open) socket.destroy();
    },
    async close() {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
