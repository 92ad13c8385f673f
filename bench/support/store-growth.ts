/**
 * Memory against history, for bench:store. One embedded data directory is grown step by step (1M events,
 * then 3M, ...: BENCH_GROWTH_EVENTS) with the realistic history of bench/support/history.ts; at each step the
 * read models are built through the real projections (one pass, what `projections rebuild` runs), the history
 * is sealed, and then the real server (src/main.ts: write API, read API, projections, executor, webhooks) is
 * started on the directory in a child process. Once ready, it is measured idle, then after load (creates with
 * Idempotency-Keys on many keys, balance and list reads), with garbage collected first (memory-probe.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStores, type Stores } from '../../src/adapters/open-stores.ts';
import { lastSeal, startSealer } from '../../src/audit/sealer.ts';
import { addUser, findUserByEmail, requestApiKey, type CredentialDeps } from '../../src/commands/back-office.ts';
import { approveAndCollectKey, credentialsOn } from '../../test/support/credentials.ts';
import type { WalletRef } from '../../src/domain/events.ts';
import { streams } from '../../src/domain/streams.ts';
import { EXECUTOR_CHECKPOINT } from '../../src/executor/executor.ts';
import { KEY_REVOCATION_CHECKPOINT } from '../../src/executor/key-revocation.ts';
import { allProjections } from '../../src/projections/index.ts';
import { rebuildProjections } from '../../src/projections/rebuild.ts';
import { WEBHOOK_OUTBOX_CHECKPOINT } from '../../src/webhooks/deliveries.ts';
import { tempDir } from '../../test/support/temp-dir.ts';
import { distributors, HistoryGenerator, phones } from './history.ts';
import type { LoadResult, LoadSpec } from './load-generator.ts';
import type { MemorySample } from './memory-probe.ts';
import { runLoad } from './run-load.ts';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
const PROBE = fileURLToPath(new URL('./memory-probe.ts', import.meta.url));
/** Keys (of as many distributors of the history) that the load runs on. */
export const LOAD_KEYS = 12;
/** Distinct creates per key in one load: cycled, so the later rounds replay their Idempotency-Keys. */
const CREATES_PER_KEY = 100;
export const LOAD_CONNECTIONS = 16;

export interface GrowthStep {
  events: number;
  operations: number;
  /** Appending this step's events. */
  appendSeconds: number;
  /** The read models over the whole history (one pass) and sealing what was not sealed yet. */
  readModelSeconds: number;
  sealSeconds: number;
  storeBytes: number;
  /** From spawning the server to its first 200 on /ready. */
  readySeconds: number;
  idle: MemorySample;
  afterLoad: MemorySample;
  afterSecondLoad: MemorySample;
  load: LoadResult;
  secondLoad: LoadResult;
  /** Creates the two loads appended (the rest of their creates were replays). */
  created: number;
}

interface Client {
  distributorID: string;
  apiKey: string;
}

const operator = () => ({ actor: 'operator:bench', correlationId: randomUUID() });

/** Users and an approved key on the first LOAD_KEYS distributors of the history, their wallets funded. */
async function seedClients(stores: Stores): Promise<Client[]> {
  const backOffice: CredentialDeps = {
    store: stores.eventStore,
    clock: () => new Date(),
    assetScale: 2,
    credentials: await credentialsOn(stores.readStore),
  };
  const clients: Client[] = [];
  for (const party of distributors.slice(0, LOAD_KEYS)) {
    const ref = { type: 'distributor' as const, id: party.id };
    const makerEmail = `maker-${party.shortCode}@bench.example`;
    const checkerEmail = `checker-${party.shortCode}@bench.example`;
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
    const maker = await findUserByEmail(backOffice, makerEmail);
    const { keyID } = await requestApiKey(
      backOffice,
      maker,
      { label: 'bench', permissions: 'read-balance,read-transactions,perform-operations' },
      randomUUID(),
    );
    const apiKey = await approveAndCollectKey(
      backOffice,
      await findUserByEmail(backOffice, checkerEmail),
      maker,
      keyID,
    );
    const wallet: WalletRef = { kind: 'distributor', id: party.id };
    // Funds on the write side, so that creates are accepted whatever the history debited.
    await stores.eventStore.append(
      streams.wallet(wallet),
      [
        {
          type: 'WalletCredited',
          data: { wallet, operationID: `bench_${randomUUID()}`, amount: '1000000000.00' },
          metadata: { actor: 'operator:bench' },
        },
      ],
      'any',
    );
    clients.push({ distributorID: party.id, apiKey });
  }
  return clients;
}

/** Seals the history up to its head, as the server's sealer would have done while it ran. */
async function sealToHead(stores: Stores): Promise<void> {
  const head = await stores.eventStore.headPosition();
  const sealer = startSealer({ eventStore: stores.eventStore, idleMs: 200 });
  try {
    for (;;) {
      const seal = await lastSeal(stores.eventStore);
      if (seal && seal.data.toPosition >= head) return;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } finally {
    await sealer.stop();
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

class Server {
  readonly child: ChildProcess;
  readonly url: string;
  private readonly memoryFile: string;
  private readonly exited: Promise<number | null>;
  private constructor(child: ChildProcess, url: string, memoryFile: string, exited: Promise<number | null>) {
    this.child = child;
    this.url = url;
    this.memoryFile = memoryFile;
    this.exited = exited;
  }

  static async start(dataDir: string, logFile: string): Promise<{ server: Server; readySeconds: number }> {
    const port = await freePort();
    const memoryFile = join(dataDir, 'bench-memory.json');
    rmSync(memoryFile, { force: true }); // the previous server's samples
    const log = openSync(logFile, 'a');
    const started = performance.now();
    const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', '--import', PROBE, MAIN], {
      env: {
        ...process.env,
        DATA_DIR: dataDir,
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        EVENT_STORE: 'embedded',
        READ_STORE: 'embedded',
        LEDGER: 'embedded',
        API_KEY_RATE_LIMIT: '0',
        AUTH_FAILURE_LIMIT: '0',
        BENCH_MEMORY_FILE: memoryFile,
      },
      stdio: ['ignore', log, log],
    });
    closeSync(log);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const server = new Server(child, `http://127.0.0.1:${port}`, memoryFile, exited);
    let gone = false;
    void exited.then(() => (gone = true));
    for (;;) {
      if (gone) throw new Error(`the server exited before it was ready (see ${logFile})`);
      const ready = await fetch(`${server.url}/ready`).then(
        (res) => res.ok,
        () => false,
      );
      if (ready) return { server, readySeconds: (performance.now() - started) / 1000 };
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Waits until every consumer of the server has applied everything (lag 0 on /ready). */
  async caughtUp(timeoutMs = 300_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const body = (await fetch(`${this.url}/ready`).then(
        (res) => res.json(),
        () => null,
      )) as { consumers?: Array<{ lagEvents: number | null }> } | null;
      const consumers = body?.consumers ?? [];
      if (consumers.length > 0 && consumers.every((consumer) => consumer.lagEvents === 0)) return;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    throw new Error('the server did not catch up in time');
  }

  /** Garbage collected, then the process's memory (memory-probe.ts). */
  async memory(): Promise<MemorySample> {
    const before = this.sample()?.seq ?? 0;
    this.child.kill('SIGUSR2');
    for (let i = 0; i < 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const sample = this.sample();
      if (sample && sample.seq > before) return sample;
    }
    throw new Error('the server did not report its memory');
  }

  private sample(): MemorySample | undefined {
    if (!existsSync(this.memoryFile)) return undefined;
    const text = readFileSync(this.memoryFile, 'utf8').trim();
    return text ? (JSON.parse(text) as MemorySample) : undefined;
  }

  async stop(): Promise<void> {
    this.child.kill('SIGTERM');
    await this.exited;
  }
}

/** Creates (each with its own Idempotency-Key, replayed when the list comes round again) and reads, interleaved. */
function loadRequests(clients: Client[], step: number): LoadSpec['requests'] {
  const requests: LoadSpec['requests'] = [];
  for (let j = 0; j < CREATES_PER_KEY; j++) {
    clients.forEach((client, c) => {
      const headers = { authorization: `Bearer ${client.apiKey}` };
      const phone = phones[(j * LOAD_KEYS + c) % phones.length]!;
      requests.push({
        method: 'POST',
        path: `/api/v1/distributors/${client.distributorID}/operations`,
        headers: { ...headers, 'content-type': 'application/json', 'idempotency-key': `growth-${step}-${c}-${j}` },
        body: JSON.stringify({ operationType: 'cash-in', amount: '1.00', phoneTo: phone, memo: 'growth bench' }),
      });
      requests.push(
        j % 2 === 0
          ? { method: 'GET', path: `/api/v1/distributors/${client.distributorID}/balance`, headers }
          : { method: 'GET', path: `/api/v1/distributors/${client.distributorID}/operations?limit=20`, headers },
      );
    });
  }
  return requests;
}

function storeBytes(dataDir: string): number {
  let total = 0;
  for (const name of ['events.sqlite', 'events.sqlite-wal', 'read-models.sqlite', 'read-models.sqlite-wal']) {
    const file = join(dataDir, name);
    if (existsSync(file)) total += statSync(file).size;
  }
  return total;
}

export async function measureGrowth(
  sizes: number[],
  loadSeconds: number,
  log: (line: string) => void,
): Promise<GrowthStep[]> {
  const dir = tempDir('store-growth-');
  const logFile = join(dir.path, 'server.log');
  const generator = new HistoryGenerator();
  const steps: GrowthStep[] = [];
  try {
    let stores = await openStores({ dataDir: dir.path });
    await generator.extendTo(stores.eventStore, 1); // the parties
    let started = performance.now();
    const clients = await seedClients(stores);
    log(`growth: ${clients.length} keys with their users in ${((performance.now() - started) / 1000).toFixed(0)} s`);
    for (const [index, size] of sizes.entries()) {
      const appended = await generator.extendTo(stores.eventStore, size);
      log(
        `growth: ${appended.events.toLocaleString('en-US')} events (${appended.operations.toLocaleString('en-US')} operations), this step appended in ${appended.seconds.toFixed(0)} s`,
      );
      started = performance.now();
      await rebuildProjections(stores, allProjections(2));
      const readModelSeconds = (performance.now() - started) / 1000;
      started = performance.now();
      await sealToHead(stores);
      const sealSeconds = (performance.now() - started) / 1000;
      // A server that ran before has its executor's, key-revocation and outbox checkpoints near the head: they
      // are not history to replay at each start (a first start on an imported history would, once).
      const head = await stores.eventStore.headPosition();
      for (const projection of [EXECUTOR_CHECKPOINT, KEY_REVOCATION_CHECKPOINT, WEBHOOK_OUTBOX_CHECKPOINT])
        await stores.readStore.commit([], { projection, position: head });
      await stores.close();
      log(
        `growth: read models in ${readModelSeconds.toFixed(0)} s, sealed in ${sealSeconds.toFixed(0)} s; starting the server`,
      );

      const { server, readySeconds } = await Server.start(dir.path, logFile);
      try {
        await server.caughtUp();
        const idle = await server.memory();
        log(`growth: ready in ${readySeconds.toFixed(1)} s, caught up; ${describe(idle)}`);
        // Two rounds of the same load (new Idempotency-Keys each): what the first adds and whether the second adds more.
        const samples: Array<{ load: LoadResult; memory: MemorySample }> = [];
        for (const round of [0, 1]) {
          const load = await runLoad({
            url: server.url,
            connections: LOAD_CONNECTIONS,
            durationSeconds: loadSeconds,
            requests: loadRequests(clients, 2 * index + round),
          });
          await server.caughtUp();
          const memory = await server.memory();
          samples.push({ load, memory });
          log(
            `growth: after load ${round + 1}: ${describe(memory)}; load ${load.requestsPerSecond.toFixed(0)} req/s, non-2xx ${load.non2xx}`,
          );
        }
        const [first, second] = samples as [(typeof samples)[0], (typeof samples)[0]];
        steps.push({
          events: head,
          operations: appended.operations,
          appendSeconds: appended.seconds,
          readModelSeconds,
          sealSeconds,
          storeBytes: storeBytes(dir.path),
          readySeconds,
          idle,
          afterLoad: first.memory,
          afterSecondLoad: second.memory,
          load: first.load,
          secondLoad: second.load,
          created: 0,
        });
      } finally {
        await server.stop();
      }
      stores = await openStores({ dataDir: dir.path });
      const created = await stores.eventStore.readAll({
        fromPosition: head + 1,
        filter: { eventTypes: ['OperationRequested'] },
      });
      steps.at(-1)!.created = created.length;
    }
    await stores.close();
    return steps;
  } finally {
    dir.cleanup();
  }
}

export const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);
const describe = (m: MemorySample) =>
  `RSS ${mb(m.rss)} MB, heap used ${mb(m.heapUsed)} of ${mb(m.heapTotal)} MB, external ${mb(m.external)} MB, peak RSS ${mb(m.peakRss)} MB`;
