import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addUser, findUserByEmail, onboardParty, requestApiKey } from '../../src/commands/back-office.ts';
import { approveAndCollectKey } from '../support/credentials.ts';
import { parseApiKey } from '../../src/domain/api-key-secrets.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { buildWalletOps, type WalletOps } from '../../src/wallet-ops.ts';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { call, waitFor } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';

/**
 * Which address a request comes from, behind proxies: TRUST_PROXY names how many proxies (or which ones)
 * stand in front of wallet-ops, and only what they appended to X-Forwarded-For counts. Whatever a client
 * writes into the header itself ("forged") must never pass a key's allow-list.
 *
 * The test server is reached from 127.0.0.1, which plays the last proxy. Each proxy appends the address it
 * received the request from, as nginx's $proxy_add_x_forwarded_for and every load balancer do: so the header
 * that arrives is `<whatever the client sent>, <client>, <proxy 1>, ...` for the proxies before the last one.
 */
const BIN = fileURLToPath(new URL('../../bin/wallet-ops.js', import.meta.url));
const CLIENT = '203.0.113.9'; // the real client: outside 10.0.0.0/8
const FIRST_PROXY = '192.0.2.10'; // a proxy in front of the last one, when there are two

/** The header as it reaches wallet-ops: what the client wrote, then one entry per proxy hop but the last. */
const arriving = (forged: string[], hops: number, client = CLIENT) =>
  [...forged, ...(hops >= 1 ? [client] : []), ...(hops >= 2 ? [FIRST_PROXY] : [])].join(', ');

/** What a client may write into X-Forwarded-For to pose as an allowed address (or as one of our proxies). */
const FORGERIES: string[][] = [
  ['10.1.2.3'],
  ['10.1.2.3', '10.1.2.3'],
  ['10.1.2.3', '127.0.0.1'],
  ['10.1.2.3', FIRST_PROXY],
  ['10.1.2.3', '127.0.0.1', FIRST_PROXY, '::1'],
  ['::ffff:10.1.2.3'],
  ['10.1.2.3:443'],
  ['unknown', '10.1.2.3'],
];

/** Every form TRUST_PROXY accepts, with the number of proxies the deployment it describes has. */
const ACCEPTED: Array<{ value: string; hops: number }> = [
  { value: 'false', hops: 0 },
  { value: '0', hops: 0 },
  { value: '1', hops: 1 },
  { value: '2', hops: 2 },
  { value: '127.0.0.1', hops: 1 },
  { value: '127.0.0.0/8', hops: 1 },
  { value: '::ffff:127.0.0.1', hops: 1 },
  { value: '127.0.0.1, 192.0.2.0/24', hops: 2 },
  { value: '::1/128, 127.0.0.0/8, 192.0.2.10', hops: 2 },
];

describe('TRUST_PROXY', () => {
  it('when TRUST_PROXY is true, then the configuration is refused with a message that says why and what to give instead', () => {
    for (const value of ['true', 'TRUE', 'True']) {
      expect(() => loadConfig({ TRUST_PROXY: value })).toThrow(ConfigError);
      expect(() => loadConfig({ TRUST_PROXY: value })).toThrow(
        /TRUST_PROXY: .*every X-Forwarded-For.*hop count.*addresses/,
      );
    }
  });

  it('when TRUST_PROXY is a named range or garbage, then it is refused too', () => {
    for (const value of ['loopback', 'uniquelocal', 'yes', '-1', '1.5', '300', '10.0.0.0/33']) {
      expect(() => loadConfig({ TRUST_PROXY: value }), value).toThrow(/TRUST_PROXY/);
    }
  });

  it('when each accepted form is loaded, then it becomes a hop count or a list of ranges', () => {
    expect(loadConfig({}).TRUST_PROXY).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'false' }).TRUST_PROXY).toBe(false);
    expect(loadConfig({ TRUST_PROXY: '0' }).TRUST_PROXY).toBe(0);
    expect(loadConfig({ TRUST_PROXY: '2' }).TRUST_PROXY).toBe(2);
    expect(loadConfig({ TRUST_PROXY: '127.0.0.1, 10.0.0.0/8' }).TRUST_PROXY).toEqual(['127.0.0.1', '10.0.0.0/8']);
  });

  it('when TRUST_PROXY is a hop count above 5 or a range as wide as everything, then it is refused too', () => {
    for (const value of ['6', '99', '0.0.0.0/0,::/0', '::/0', '0.0.0.0/0']) {
      expect(() => loadConfig({ TRUST_PROXY: value }), value).toThrow(
        /TRUST_PROXY: .*any client could choose its own address/,
      );
    }
  });

  // `true` and its spelling as the whole address space (which express's compile once met with a TypeError).
  for (const value of ['true', '0.0.0.0/0,::/0']) {
    it(`when wallet-ops serve starts with TRUST_PROXY=${value}, then it stops at once with exit 1 and says why, without a stack trace`, async () => {
      const dir = tempDir();
      try {
        // Killed after 60 s should it start after all (the defect), so no server outlives the test.
        const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
          execFile(
            process.execPath,
            [BIN, 'serve', 'read-api', '--data-dir', dir.path],
            { env: { ...process.env, TRUST_PROXY: value, PORT: '0', LOG_LEVEL: 'silent' }, timeout: 60_000 },
            (error, _stdout, stderr) =>
              resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stderr }),
          );
        });
        expect(result.code).toBe(1);
        expect(result.stderr).toMatch(/TRUST_PROXY/);
        expect(result.stderr).toMatch(/any client could choose its own address/);
        expect(result.stderr).not.toMatch(/TypeError|\n\s+at /);
      } finally {
        dir.cleanup();
      }
    }, 90_000);
  }
});

describe('a forged X-Forwarded-For never passes an allow-list, under any accepted TRUST_PROXY', () => {
  const dir = tempDir();
  let first: WalletOps;
  let balancePath: string;
  let tenKey: string;

  beforeAll(async () => {
    // One history for every configuration: a distributor with a key allowed for 10.0.0.0/8 only.
    first = await buildWalletOps(
      loadConfig({ DATA_DIR: dir.path, LOG_LEVEL: 'silent' }),
      createLogger('silent'),
      undefined,
      ['read-api'],
    );
    const backOffice = {
      store: first.stores.eventStore,
      clock: () => new Date(),
      assetScale: 2,
      credentials: first.credentials,
    };
    const ctx = () => ({ actor: 'operator:test', correlationId: randomUUID() });
    const { partyID } = await onboardParty(
      backOffice,
      { partyType: 'distributor', name: 'Proxied', shortCode: '5150' },
      ctx(),
    );
    const party = { type: 'distributor' as const, id: partyID };
    await addUser(
      backOffice,
      { party, email: 'maker@proxy.test', password: 'maker password 1', roles: ['maker'] },
      ctx(),
    );
    await addUser(
      backOffice,
      { party, email: 'checker@proxy.test', password: 'checker password 1', roles: ['checker'] },
      ctx(),
    );
    const maker = await findUserByEmail(backOffice, 'maker@proxy.test');
    const { keyID } = await requestApiKey(
      backOffice,
      maker,
      { label: 'ten', permissions: 'read-balance', allowedIPs: '10.0.0.0/8' },
      randomUUID(),
    );
    tenKey = await approveAndCollectKey(
      backOffice,
      await findUserByEmail(backOffice, 'checker@proxy.test'),
      maker,
      keyID,
    );
    balancePath = `/api/v1/distributors/${partyID}/balance`;
  });
  afterAll(async () => {
    await first?.close();
    dir.cleanup();
  });

  for (const { value, hops } of ACCEPTED) {
    it(`when TRUST_PROXY=${value} (${hops} prox${hops === 1 ? 'y' : 'ies'} in front) and a client forges the header, then the 10.0.0.0/8 key is refused with 403; a real client in 10.0.0.0/8 is let through`, async () => {
      const config = loadConfig({ DATA_DIR: dir.path, LOG_LEVEL: 'silent', TRUST_PROXY: value });
      const system = await buildWalletOps(config, createLogger('silent'), undefined, ['read-api']);
      const server: Server = await new Promise((resolve) => {
        const s = system.app.listen(0, '127.0.0.1', () => resolve(s));
      });
      try {
        const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
        await waitFor(() => system.directory.get(parseApiKey(tenKey)!.keyID)?.status === 'active');
        const get = (forwardedFor?: string) =>
          call(baseUrl, 'GET', balancePath, {
            apiKey: tenKey,
            headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
          });

        for (const forged of FORGERIES) {
          const header = arriving(forged, hops);
          const response = await get(header);
          expect(response.status, `X-Forwarded-For: ${header}`).toBe(403);
          expect(response.body.type).toBe('/problems/access-forbidden');
        }
        expect((await get()).status, 'no header: the last proxy (127.0.0.1) is the client').toBe(403);
        // The allow-list is not refusing everything: a client really in 10.0.0.0/8 behind the proxies passes.
        if (hops > 0) expect((await get(arriving([], hops, '10.1.2.3'))).status).toBe(200);
        // What a proxy passes on is read strictly: a lenient spelling of an address in 10.0.0.0/8 is no client address.
        if (hops > 0) {
          for (const lenient of ['10.1', '167837955', '0x0a010203', '010.1.2.3'])
            expect((await get(arriving([], hops, lenient))).status, lenient).toBe(403);
        }
      } finally {
        await new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections?.();
        await system.close();
      }
    });
  }
});
