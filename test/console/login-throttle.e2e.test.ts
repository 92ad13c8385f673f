import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { buildWalletOps, type WalletOps } from '../../src/wallet-ops.ts';
import { startTestSystem, type TestParty, type TestSystem } from '../support/system.ts';
import { CHECKER_PASSWORD, ConsoleClient, MAKER_PASSWORD } from './console-client.ts';

/**
 * Login throttling that holds: every attempt is counted in the shared read store before its password is
 * checked, so neither parallel requests nor a second server on the same data get past the limit.
 * Limits here: 5 attempts per email from one address, 20 per address (the defaults), a lockout of 10 minutes;
 * past 5 attempts on an email from all addresses, waits (1 s doubling, at most a minute), never a lock.
 */
let offsetMs = 0;
const clock = () => new Date(Date.now() + offsetMs);
const LOCKOUT_MS = 10 * 60_000;

let sys: TestSystem;
let second: { system: WalletOps; server: Server; baseUrl: string };

async function startSecondServer(): Promise<typeof second> {
  // Another wallet-ops serving the console on the same data directory, as behind a load balancer.
  const system = await buildWalletOps(sys.config, createLogger('silent'), clock, ['write-api']);
  const server = await new Promise<Server>((resolve) => {
    const s = system.app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return { system, server, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** A login with a fresh browser: its login form first (CSRF cookie and token), then the post. */
async function attempt(baseUrl: string, email: string, password: string) {
  return new ConsoleClient(baseUrl).login(email, password);
}

/** Fresh login forms, fetched first, so that the posts themselves leave at the same moment. */
async function readyClients(count: number, baseUrls: string[]): Promise<ConsoleClient[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const client = new ConsoleClient(baseUrls[i % baseUrls.length]!);
      await client.get('/console/login');
      return client;
    }),
  );
}

beforeAll(async () => {
  sys = await startTestSystem({ LOGIN_LOCKOUT_MS: String(LOCKOUT_MS) }, clock);
  second = await startSecondServer();
}, 60_000);

afterAll(async () => {
  if (second) {
    await new Promise<void>((resolve) => second.server.close(() => resolve()));
    second.server.closeAllConnections();
    await second.system.close();
  }
  await sys?.close();
});

describe('login throttling across parallel requests and processes', () => {
  let party: TestParty;
  beforeAll(async () => {
    party = await sys.party('distributor');
  });

  it('given 30 wrong logins for one email sent at once to two servers on the same data, when they are answered and the right password follows, then at most 5 were checked and the right one is refused while locked', async () => {
    const clients = await readyClients(30, [sys.baseUrl, second.baseUrl]);
    const answers = await Promise.all(
      clients.map((client, i) =>
        client.post('/console/login', { email: party.makerEmail, password: `wrong password ${i}` }),
      ),
    );
    const statuses = answers.map((page) => page.status);
    // 401 is answered only after a password check; 429 before any.
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(5);
    expect(statuses.filter((s) => s === 401).length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s !== 401 && s !== 429)).toEqual([]);

    for (const baseUrl of [sys.baseUrl, second.baseUrl]) {
      const right = new ConsoleClient(baseUrl);
      const refused = await right.login(party.makerEmail, MAKER_PASSWORD);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(LOCKOUT_MS / 1000);
      expect(right.cookies.has('wo_console')).toBe(false);
    }
  }, 120_000);

  it('given a locked email, when the lockout has passed, then the right password logs in on either server', async () => {
    offsetMs += LOCKOUT_MS + 1000;
    expect((await attempt(second.baseUrl, party.makerEmail, MAKER_PASSWORD)).status).toBe(303);
    expect((await attempt(sys.baseUrl, party.makerEmail, MAKER_PASSWORD)).status).toBe(303);
  });
});

describe('what the login page says', () => {
  let party: TestParty;
  beforeAll(async () => {
    offsetMs += LOCKOUT_MS + 1000; // whatever the address counted before has expired
    party = await sys.party('merchant');
  });

  it('when a login fails, then the page says how many attempts are left before a lockout, counted across both servers', async () => {
    const first = await attempt(sys.baseUrl, party.makerEmail, 'wrong password 1');
    expect(first.status).toBe(401);
    expect(first.text).toContain('The email or the password is wrong.');
    expect(first.text).toContain('4 attempts left before a 10-minute lockout.');
    const next = await attempt(second.baseUrl, party.makerEmail, 'wrong password 2');
    expect(next.text).toContain('3 attempts left before a 10-minute lockout.');
    await attempt(sys.baseUrl, party.makerEmail, 'wrong password 3');
    const last = await attempt(second.baseUrl, party.makerEmail, 'wrong password 4');
    expect(last.text).toContain('1 attempt left before a 10-minute lockout.');
    const locking = await attempt(sys.baseUrl, party.makerEmail, 'wrong password 5');
    expect(locking.status).toBe(401);
    expect(locking.text).toContain(
      'No attempts left: logins for this email from this address are locked for 10 minutes.',
    );
    const locked = await attempt(second.baseUrl, party.makerEmail, MAKER_PASSWORD);
    expect(locked.status).toBe(429);
    expect(locked.text).toContain('Too many failed attempts. Try again in 10 minutes.');
  }, 60_000);

  it('when a user logs in, then their email starts again with every attempt, and their address is not charged for the success', async () => {
    const other = await attempt(sys.baseUrl, party.checkerEmail, 'wrong password 1');
    expect(other.text).toContain('4 attempts left');
    expect((await attempt(second.baseUrl, party.checkerEmail, CHECKER_PASSWORD)).status).toBe(303);
    const after = await attempt(sys.baseUrl, party.checkerEmail, 'wrong password 2');
    expect(after.text).toContain('4 attempts left');
  });
});

describe('limits from the configuration', () => {
  it('given LOGIN_ATTEMPTS_PER_EMAIL=2 and LOGIN_ATTEMPTS_PER_ADDRESS=3, when logins fail, then the email locks after 2 and the address after 3', async () => {
    const strict = await startTestSystem({
      LOGIN_ATTEMPTS_PER_EMAIL: '2',
      LOGIN_ATTEMPTS_PER_ADDRESS: '3',
      LOGIN_LOCKOUT_MS: '60000',
    });
    try {
      const party = await strict.party('merchant');
      expect((await attempt(strict.baseUrl, party.makerEmail, 'wrong 1')).text).toContain(
        '1 attempt left before a 1-minute lockout.',
      );
      expect((await attempt(strict.baseUrl, party.makerEmail, 'wrong 2')).status).toBe(401);
      expect((await attempt(strict.baseUrl, party.makerEmail, MAKER_PASSWORD)).status).toBe(429);
      // The address has had 3 attempts now: every email is refused from it.
      const fromAddress = await attempt(strict.baseUrl, party.checkerEmail, CHECKER_PASSWORD);
      expect(fromAddress.status).toBe(429);
    } finally {
      await strict.close();
    }
  }, 60_000);
});

describe('the per-address limit behind a proxy', () => {
  it('given 40 addresses of one IPv6 /64, when each tries a wrong password, then they share one count (as the API counts them) and get 429 once the per-address limit is reached', async () => {
    const proxied = await startTestSystem({
      TRUST_PROXY: '1',
      LOGIN_ATTEMPTS_PER_ADDRESS: '20',
      LOGIN_LOCKOUT_MS: '60000',
    });
    try {
      const statuses: number[] = [];
      for (let i = 1; i <= 40; i++) {
        // A different email each time, so that only the address can be what locks.
        const client = new ConsoleClient(proxied.baseUrl, {
          headers: { 'x-forwarded-for': `2001:db8:7:8::${i.toString(16)}` },
        });
        statuses.push((await client.login(`nobody-${i}@test.example`, 'wrong password')).status);
      }
      expect(statuses.slice(0, 20)).toEqual(Array(20).fill(401));
      expect(statuses.slice(20)).toEqual(Array(20).fill(429));
      // Another /64 has its own count.
      const elsewhere = new ConsoleClient(proxied.baseUrl, { headers: { 'x-forwarded-for': '2001:db8:7:9::1' } });
      expect((await elsewhere.login('nobody-41@test.example', 'wrong password')).status).toBe(401);
    } finally {
      await proxied.close();
    }
  }, 120_000);
});

describe('guesses from other addresses never lock the owner out', () => {
  // Clients named by X-Forwarded-For (TRUST_PROXY=1), each its own address. The clock stands still but for the
  // waits the test skips, so that a slow run (a busy machine) cannot serve a wait on its own.
  let skewMs = 0;
  const frozen = Date.now();
  const later = () => new Date(frozen + skewMs);
  let proxied: TestSystem;
  let other: { system: WalletOps; server: Server; baseUrl: string };
  const from = (baseUrl: string, address: string) =>
    new ConsoleClient(baseUrl, { headers: { 'x-forwarded-for': address } });
  let addressSeq = 1;
  const freshAddress = () => `198.51.${100 + Math.floor(addressSeq / 250)}.${(addressSeq++ % 250) + 1}`;

  beforeAll(async () => {
    proxied = await startTestSystem({ TRUST_PROXY: '1', LOGIN_LOCKOUT_MS: String(LOCKOUT_MS) }, later);
    const system = await buildWalletOps(proxied.config, createLogger('silent'), later, ['write-api']);
    const server = await new Promise<Server>((resolve) => {
      const s = system.app.listen(0, '127.0.0.1', () => resolve(s));
    });
    other = { system, server, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
  }, 60_000);
  afterAll(async () => {
    if (other) {
      await new Promise<void>((resolve) => other.server.close(() => resolve()));
      other.server.closeAllConnections();
      await other.system.close();
    }
    await proxied?.close();
  });

  /** `count` wrong logins for `email`, `perAddress` from each of fresh addresses, sent at once to both servers. */
  async function guessesAtOnce(email: string, count: number, perAddress = 1): Promise<number[]> {
    const addresses = Array.from({ length: Math.ceil(count / perAddress) }, freshAddress);
    const clients = await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const client = from(i % 2 === 0 ? proxied.baseUrl : other.baseUrl, addresses[Math.floor(i / perAddress)]!);
        await client.get('/console/login');
        return client;
      }),
    );
    const pages = await Promise.all(
      clients.map((client, i) => client.post('/console/login', { email, password: `wrong password ${i}` })),
    );
    return pages.map((page) => page.status);
  }

  it('given six wrong logins from six addresses, when the owner logs in from a seventh, then they are asked to wait a moment (429, Retry-After), never locked, and then logged in', async () => {
    const party = await proxied.party('distributor');
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++)
      statuses.push(
        (await from(proxied.baseUrl, freshAddress()).login(party.makerEmail, `wrong password ${i}`)).status,
      );
    // Five checked; the sixth address, past the account's five, is asked to wait first.
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);

    const owner = from(other.baseUrl, freshAddress());
    const slowed = await owner.login(party.makerEmail, MAKER_PASSWORD);
    expect(slowed.status).toBe(429);
    expect(slowed.text).toContain('Logins for this email are slowed down after many failed attempts from elsewhere.');
    const wait = Number(slowed.headers.get('retry-after'));
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(60);
    skewMs += wait * 1000;
    const loggedIn = await owner.login(party.makerEmail, MAKER_PASSWORD);
    expect(loggedIn.status).toBe(303);
    expect(owner.cookies.has('wo_console')).toBe(true);
  }, 60_000);

  it('given 60 wrong logins sent at once from 30 addresses to two servers, then at most 5 are checked; and while guesses go on, the owner from a fresh address waits at most a minute, then logs in', async () => {
    const party = await proxied.party('merchant');
    const storm = await guessesAtOnce(party.makerEmail, 60, 2);
    expect(storm.filter((status) => status !== 401 && status !== 429)).toEqual([]);
    expect(storm.filter((status) => status === 401).length).toBeGreaterThan(0);
    expect(storm.filter((status) => status === 401).length).toBeLessThanOrEqual(5);

    // The guessers keep at it, from fresh addresses, each coming back when told: every guess checked makes the wait grow.
    const waits: number[] = [];
    for (let round = 0; round < 8; round++) {
      const guessers = Array.from({ length: 2 }, () => from(proxied.baseUrl, freshAddress()));
      const told = await Promise.all(
        guessers.map((guesser) => guesser.login(party.makerEmail, `wrong again ${round}`)),
      );
      expect(told.map((page) => page.status)).toEqual([429, 429]);
      const wait = Math.max(...told.map((page) => Number(page.headers.get('retry-after'))));
      waits.push(wait);
      skewMs += wait * 1000;
      for (const guesser of guessers)
        expect([401, 429]).toContain((await guesser.login(party.makerEmail, `wrong again ${round}`)).status);
    }
    expect(waits.at(-1)).toBeGreaterThan(waits[0]!);
    expect(Math.max(...waits)).toBeLessThanOrEqual(60);

    const owner = from(other.baseUrl, freshAddress());
    const first = await owner.login(party.makerEmail, MAKER_PASSWORD);
    expect(first.status).toBe(429);
    let waited = Number(first.headers.get('retry-after'));
    expect(waited).toBeLessThanOrEqual(60);
    skewMs += waited * 1000;
    // More guesses from fresh addresses, at once, while the owner waits: each is told to wait, none is checked.
    expect(await guessesAtOnce(party.makerEmail, 20)).toEqual(Array(20).fill(429));
    let again = await owner.login(party.makerEmail, MAKER_PASSWORD);
    while (again.status === 429 && waited < 60) {
      const more = Number(again.headers.get('retry-after'));
      waited += more;
      skewMs += more * 1000;
      again = await owner.login(party.makerEmail, MAKER_PASSWORD);
    }
    expect(again.status).toBe(303);
    expect(waited).toBeLessThanOrEqual(60);
  }, 120_000);
});
