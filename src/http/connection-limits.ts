import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { addressBucket } from '../domain/ip-address.ts';
import { compileAllowList } from '../domain/ip-allowlist.ts';

/** Why a connection was closed as soon as it was accepted. */
export type RefusedConnection = 'total' | 'per-address';

export interface ConnectionLimits {
  /** Open connections in all; 0: no cap. */
  total: number;
  /** Open connections from one peer address (IPv6: its /64); 0: no cap. */
  perAddress: number;
  /** Peers the per-address cap never counts (the proxies TRUST_PROXY lists: they carry every client). */
  exempt?: (address: string) => boolean;
  onRefused?: (reason: RefusedConnection) => void;
}

/**
 * Caps a server's open connections, in all and per peer address, so that one client holding thousands of slow
 * connections (slowloris) cannot take every socket and file descriptor of the process: a connection over a cap
 * is closed at once, before anything is read from it. Node enforces the total itself (server.maxConnections,
 * 'drop'); the per-address count is kept here, from 'connection' to 'close'.
 */
export function limitConnections(server: Server, limits: ConnectionLimits): void {
  if (limits.total > 0) {
    server.maxConnections = limits.total;
    server.on('drop', () => limits.onRefused?.('total'));
  }
  if (limits.perAddress <= 0) return;
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const peer = socket.remoteAddress;
    // A socket already gone has no address: nothing to count.
    if (peer === undefined || limits.exempt?.(peer)) return;
    const key = addressBucket(peer);
    const count = open.get(key) ?? 0;
    if (count >= limits.perAddress) {
      socket.destroy();
      limits.onRefused?.('per-address');
      return;
    }
    open.set(key, count + 1);
    socket.once('close', () => {
      const left = (open.get(key) ?? 1) - 1;
      if (left > 0) open.set(key, left);
      else open.delete(key);
    });
  });
}

/** The proxies TRUST_PROXY lists by address carry every client's connections: the per-address cap exempts them. */
export function trustedProxies(trustProxy: false | number | string[]): ((address: string) => boolean) | undefined {
  return Array.isArray(trustProxy) && trustProxy.length > 0 ? compileAllowList(trustProxy) : undefined;
}
