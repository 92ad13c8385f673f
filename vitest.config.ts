import { accessSync, constants, statfsSync } from 'node:fs';
import { configDefaults, defineConfig } from 'vitest/config';
import { PACKAGING_TESTS } from './vitest.packaging.config.ts';
import { LongestFirst } from './test/support/longest-first.ts';

/**
 * The tests' data directories (and every other temporary file of the workers and of the processes they start) on
 * tmpfs when the machine has one with room: the embedded stores fsync at every commit (synchronous = FULL), which
 * costs nothing there. Nothing is lost to the tests: a process killed with SIGKILL keeps what it wrote on any
 * file system, only a crash of the machine would not. A TMPDIR set by whoever runs the tests wins.
 */
function ramTempDir(): string | undefined {
  const candidate = '/dev/shm';
  if (process.env.TMPDIR) return undefined;
  try {
    accessSync(candidate, constants.W_OK);
    const { bavail, bsize } = statfsSync(candidate);
    // A container's default /dev/shm is 64 MB: too small for the suite, which then stays on the disk.
    return bavail * bsize >= 2 * 1024 ** 3 ? candidate : undefined;
  } catch {
    return undefined;
  }
}
const RAM_TEMP_DIR = ramTempDir();

/**
 * Test files are named by their kind, and the kind picks the pool (test/test-kinds.int.test.ts checks each file's
 * imports against the rule):
 * - `*.test.ts`, pure: in memory only, no file, socket, server or process (deciders, evolvers, projections, workflows,
 *   parsers, in-memory fakes of the ports). Worker threads.
 * - `*.int.test.ts`, integration: real I/O inside the test's own process: a store (SQLite files, the run's
 *   PostgreSQL, the EVM chain, a MongoDB or KurrentDB client), the file system (the repository's own files too), an
 *   HTTP server or socket in process, the CLI run in process on a data directory. Forks.
 * - `*.e2e.test.ts`, end to end: a system of the service (test/support/system.ts, executor-system.ts, buildWalletOps,
 *   in process or spawned), any child process (the bin, a second writer, a lock holder, tsc, a server of its own),
 *   or a browser (`*.browser.e2e.test.ts`). Forks.
 * The integration and end-to-end files are one project: vitest awaits one project's files before it starts another's
 * in the same pool, which would leave a worker idle behind each project's longest file.
 *
 * One worker process runs many test files, one after the other (isolate: false, for the threads and the forks pools
 * alike): a fresh process per file costs more than half a second of CPU (node, vitest and every imported package
 * started again), more than most files' tests, and about 250 s of the suite's CPU in all. A file leaves nothing
 * behind that the next one could trip on: systems are closed, children killed (afterAll), environment given per
 * system, never set globally.
 */
const PURE = 'test/**/*.test.ts';
const INTEGRATION = 'test/**/*.int.test.ts';
const END_TO_END = 'test/**/*.e2e.test.ts';
/**
 * Suites that replace a module of src/ with vi.mock: a module another file of the same worker imported already
 * would not be replaced, so these get modules of their own (vmForks: a fresh module graph per file in a reused
 * process).
 */
const OWN_MODULES = ['test/adapters/sqlite-faults.e2e.test.ts'];

export default defineConfig({
  test: {
    ...(RAM_TEMP_DIR ? { env: { TMPDIR: RAM_TEMP_DIR } } : {}),
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Isolation is the pool's, set here: vitest ignores a project's own (see the comment above PURE).
    // Two processes for the integration and end-to-end files (forks), two threads for the pure ones,
    // on two cores. Measured on 2 cores: 2 forks 363-384 s; 3 forks 343-389 s for about 75 s more CPU (the machine is
    // busy throughout with two); 4 cost more still. Again once idle systems stopped polling (2026-11-26): 2 forks 328 s
    // and 515 s of CPU; 3 forks 310 and 343 s for 546 and 581 s of CPU: no gain beyond the runs' spread. Again later that day:
    // 3 forks 302 s for 520 s of CPU against 2 forks' 295-320 s for 461-503 s; every file's CPU grew 10-20% with three
    // processes on two cores. Running the mostly waiting e2e files on the threads, beside the pure suites, cut the idle
    // time (48 against 60 core-seconds) but cost more CPU than that (545 s): the same contention.
    // The minimum is the maximum: tinypool retires an idle worker above
    // the minimum, and retiring one raced with a new file ("Terminating worker thread").
    poolOptions: { threads: { isolate: false }, forks: { isolate: false, maxForks: 2, minForks: 2 } },
    maxWorkers: 2,
    // The longest files first (test/support/longest-first.ts): a project's last file does not run alone for long.
    sequence: { sequencer: LongestFirst },
    minWorkers: 2,
    // `npm run coverage`: v8 line coverage of src/, not part of `npm test` (slower); docs/quality.md has the figures.
    coverage: {
      provider: 'v8',
      include: ['src/**'],
      reporter: ['text-summary', 'json-summary'],
      reportsDirectory: '.tmp/coverage',
      // A run of the whole suite is long: a failed test (the exit code still says so) does not cost its figures.
      reportOnFailure: true,
    },
    setupFiles: [
      'test/support/file-choices.ts',
      'test/support/fast-passwords.ts',
      'test/support/cpu-usage.ts',
      'test/support/openapi-fetch-check.ts',
    ],
    projects: [
      // One PostgreSQL server for the run (POSTGRES_URL's, or an embedded one): its suites never skip. One EVM development
      // chain (Hardhat's EDR, in the main process) for the files that settle on a contract.
      // The end-to-end suites where the store matters run again on PostgreSQL (`*.on-postgres.e2e.test.ts`, a fresh
      // database per test system): creates and their durability, two write-api processes on one store, the executor
      // end to end and through crashes, webhook deliveries and their crash, a rebuild while serving; and the operator
      // CLI on the server's databases (audit/stores-on-postgres). The executor's suites where the ledger matters run
      // again on a WalletLedger contract on the chain (`*.on-evm.e2e.test.ts`): every operation type end to end and
      // the chain's own refusal; a crash after the chain accepted and two executors racing on one operator's nonces;
      // the store failing while transactions are on the chain; a paused executor whose signed transaction a void
      // refuses. Not on the chain: ledger-faults (refused before any ledger), the sweep, key revocations, a full disk.
      // Each is a thin file calling the suite (`*.e2e.suite.ts`) after choosing (test/support/run-on.ts). They are all
      // in this project, beside the others: vitest awaits one project's files before it starts another's, which left
      // one of the two workers idle behind each project's longest file. (The chain's files once had a project of
      // their own while faults.on-evm ended, twice in six runs, one completion short in the balances model: the
      // follower then saved at stop a checkpoint past a batch whose commit had failed. Fixed in src/shared/follower.ts.)
      // test/deploy (the build compiled again, the image's files and node_modules) is `npm run test:packaging`
      // (vitest.packaging.config.ts): it re-checks what the typecheck and these tests already ran from source.
      {
        extends: true,
        test: {
          name: 'wallet-ops',
          include: [INTEGRATION, END_TO_END],
          exclude: [...configDefaults.exclude, PACKAGING_TESTS, ...OWN_MODULES],
          globalSetup: ['test/support/postgres.global.ts', 'test/support/evm-chain.global.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'pure',
          include: [PURE],
          exclude: [...configDefaults.exclude, PACKAGING_TESTS, INTEGRATION, END_TO_END],
          pool: 'threads',
        },
      },
      { extends: true, test: { name: 'own-modules', include: OWN_MODULES, pool: 'vmForks' } },
    ],
  },
});
