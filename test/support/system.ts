import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { loadConfig, type Config } from '../../src/config.ts';
import { testStoreEnv } from './test-stores.ts';
import { testLedgerEnv } from './test-ledger.ts';
import type { DestinationStream } from 'pino';
import { createLogger } from '../../src/logger.ts';
import { ALL_PARTS, buildWalletOps, type BuildOptions, type Part, type WalletOps } from '../../src/wallet-ops.ts';
import {
  addUser,
  findUserByEmail,
  onboardParty,
  registerIndividual,
  requestApiKey,
  type RotationDeps,
} from '../../src/commands/back-office.ts';
import { approveAndCollectKey } from './credentials.ts';
import type { KeyTermsInput } from '../../src/domain/api-key-terms.ts';
import type { WalletRef } from '../../src/domain/events.ts';
import type { PartyRef } from '../../src/domain/parties.ts';
import { streams } from '../../src/domain/streams.ts';
import { tempDir } from './temp-dir.ts';
import { answerClientErrors } from '../../src/http/client-errors.ts';
import { buildWithFollowersThread, followersThreadSplit } from '../../src/followers-thread.ts';

/**
 * The whole system in this process on a temporary data directory, listening on a free port: what the
 * HTTP tests drive. Parties, users and keys are made through the same back-office commands the CLI uses.
 */
export interface TestSystem {
  baseUrl: string;
  config: Config;
  system: WalletOps;
  backOffice: RotationDeps;
  /** A distributor or merchant with a maker and a checker. */
  party(type: PartyRef['type'], options?: { name?: string; shortCode?: string }): Promise<TestParty>;
  individual(phone: string, name?: string): Promise<string>;
  /**
   * Given money on the write side's wallet: a WalletCredited event as the executor records it, but with no
   * ledger transfer behind it, so only for systems without the executor (WITHOUT_EXECUTOR).
   */
  credit(wallet: WalletRef, amount: string): Promise<void>;
  close(): Promise<void>;
}

export interface TestParty {
  ref: PartyRef;
  shortCode: string;
  name: string;
  makerEmail: string;
  checkerEmail: string;
  /** The maker requests a key, the checker approves it, the maker collects it: returns the API key as clients send it. */
  key(terms?: Partial<KeyTermsInput>): Promise<{ keyID: string; apiKey: string }>;
  wallet: WalletRef;
}

let shortCodeSeed = 100_000 + Math.floor(Math.random() * 100_000);

/**
 * The write side's tests fund wallets with `credit()` (WalletCredited events without a ledger transfer) and
 * look at operations as the checker left them: they run every part but the executor.
 */
export const WITHOUT_EXECUTOR: readonly Part[] = ALL_PARTS.filter((part) => part !== 'executor');

/**
 * What startTestSystem passes to buildWalletOps, and where the system's logs go (stdout unless given). With
 * `followersThread`, the system is laid out as `npm start` runs it: the projections, executor and webhooks on a
 * worker thread (src/followers-thread.ts), whose read store `hooks`' `decorateReadStore` wraps (a module the thread
 * loads: `decorateReadStore` does not cross to it).
 */
export type TestSystemOptions = BuildOptions & { logs?: DestinationStream; followersThread?: { hooks?: URL } };

export async function startTestSystem(
  env: Record<string, string> = {},
  clock?: () => Date,
  parts: readonly Part[] = ALL_PARTS,
  testOptions: TestSystemOptions = {},
): Promise<TestSystem> {
  const { logs, followersThread, ...options } = testOptions;
  const dir = tempDir();
  // Rate limits off unless a test asks for them: most tests send far more than a client would.
  const ledgerEnv = await testLedgerEnv(env.DATA_DIR ?? dir.path);
  const storeEnv = await testStoreEnv(env.DATA_DIR ?? dir.path);
  const systemEnv = {
    DATA_DIR: dir.path,
    LOG_LEVEL: 'silent',
    API_KEY_RATE_LIMIT: '0',
    AUTH_FAILURE_LIMIT: '0',
    ...ledgerEnv,
    ...storeEnv,
    ...env,
  };
  const config = loadConfig(systemEnv);
  const logger = createLogger(config.LOG_LEVEL, logs);
  const split = followersThread && followersThreadSplit({ FOLLOWERS_THREAD: true }, parts);
  if (split && (clock || options.decorateReadStore))
    throw new Error('a clock or a read store decorator does not cross to the followers thread: use hooks');
  const system = split
    ? await buildWithFollowersThread(systemEnv, config, logger, split, {
        ...options,
        ...(followersThread.hooks ? { hooks: followersThread.hooks } : {}),
      })
    : await buildWalletOps(config, logger, clock, parts, options);
  const server: Server = await new Promise((resolve) => {
    const s = system.app.listen(0, '127.0.0.1', () => resolve(s));
  });
  answerClientErrors(server);
  const { port } = server.address() as AddressInfo;
  const backOffice: RotationDeps = {
    store: system.stores.eventStore,
    clock: clock ?? (() => new Date()),
    assetScale: config.ASSET_SCALE,
    credentials: system.credentials,
    secretRotationOverlapHours: config.SECRET_ROTATION_OVERLAP_HOURS,
    apiKeyEnvironment: config.API_KEY_ENVIRONMENT,
  };
  const operator = () => ({ actor: 'operator:test', correlationId: randomUUID() });

  return {
    baseUrl: `http://127.0.0.1:${port}`,
    config,
    system,
    backOffice,
    async party(type, options = {}) {
      const shortCode = options.shortCode ?? String(shortCodeSeed++);
      const name = options.name ?? `${type} ${shortCode}`;
      const { partyID } = await onboardParty(backOffice, { partyType: type, name, shortCode }, operator());
      const ref = { type, id: partyID };
      const makerEmail = `maker-${shortCode}@test.example`;
      const checkerEmail = `checker-${shortCode}@test.example`;
      await addUser(
        backOffice,
        { party: ref, email: makerEmail, password: 'maker password 1', roles: ['maker'] },
        operator(),
      );
      await addUser(
        backOffice,
        { party: ref, email: checkerEmail, password: 'checker password 1', roles: ['checker'] },
        operator(),
      );
      return {
        ref,
        shortCode,
        name,
        makerEmail,
        checkerEmail,
        wallet: { kind: type, id: partyID },
        async key(terms = {}) {
          const maker = await findUserByEmail(backOffice, makerEmail);
          const { keyID } = await requestApiKey(
            backOffice,
            maker,
            {
              label: 'test key',
              permissions: 'read-balance,read-transactions,perform-operations',
              ...terms,
            },
            randomUUID(),
          );
          const checker = await findUserByEmail(backOffice, checkerEmail);
          const apiKey = await approveAndCollectKey(backOffice, checker, maker, keyID);
          await waitFor(() => system.directory.get(keyID)?.status === 'active');
          return { keyID, apiKey };
        },
      };
    },
    async individual(phone, name = 'Test Individual') {
      return (await registerIndividual(backOffice, { phone, name }, operator())).phone;
    },
    async credit(wallet, amount) {
      await system.stores.eventStore.append(
        streams.wallet(wallet),
        [
          {
            type: 'WalletCredited',
            data: { wallet, operationID: `test_${randomUUID()}`, amount },
            metadata: { actor: 'operator:test' },
          },
        ],
        'any',
      );
    },
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections?.();
      await system.close();
      dir.cleanup();
    },
  };
}

/** Polls until the condition holds (the live subscriptions are asynchronous), or fails after a while. */
export async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  // Asked again at once at first, then less and less often: what settles in a few ms is seen in a few ms, and a
  // condition that takes seconds (a lease running out, 1,000 operations settling) is not asked 200 times a second.
  for (let pause = 5; !(await condition()); pause = Math.min(pause * 1.5, 100)) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/**
 * A JSON request to the system; returns status, headers and the parsed body. Like every fetch of the suites, its
 * response is checked against the OpenAPI document when the document describes the request
 * (openapi-fetch-check.ts): an undeclared status, a missing required header or a body outside its schema throws.
 */
export async function call(
  baseUrl: string,
  method: string,
  path: string,
  options: { apiKey?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; body: any }> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.apiKey !== undefined) headers.authorization = `Bearer ${options.apiKey}`;
  let body: string | undefined;
  if (options.rawBody !== undefined) body = options.rawBody;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(`${baseUrl}${path}`, { method, headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: keep the text
  }
  // Checked against the OpenAPI document by fetch itself (openapi-fetch-check.ts, a setup file of every suite).
  return { status: response.status, headers: response.headers, body: parsed };
}

/**
 * A data directory seeded for processes the test spawns on it: a distributor with an API key and 1,000,000 in its
 * wallet, and an individual to pay. Made in this process, which then lets go of the files.
 */
export async function seedPayingDistributor(
  dataDir: string,
  phone: string,
): Promise<{ distributor: TestParty; apiKey: string; phone: string }> {
  const setup = await startTestSystem({ DATA_DIR: dataDir }, undefined, ['projections']);
  try {
    const distributor = await setup.party('distributor');
    const { apiKey } = await distributor.key();
    await setup.individual(phone);
    await setup.credit(distributor.wallet, '1000000');
    return { distributor, apiKey, phone };
  } finally {
    await setup.close();
  }
}
