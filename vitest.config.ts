import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Both cores: vitest's default (cores - 1) leaves one of two idle, and most e2e time is waiting on I/O and
    // timers, not CPU. Tests wait on what settles, never on wall-clock races, so a busier machine is safe.
    maxWorkers: 2,
    minWorkers: 1,
    setupFiles: ['test/support/fast-passwords.ts'],
    projects: [
      // One PostgreSQL server for the run (POSTGRES_URL's, or an embedded one): its suites never skip.
      { extends: true, test: { name: 'wallet-ops', include: ['test/**/*.test.ts'], globalSetup: ['test/support/postgres.global.ts'] } },
      {
        // The executor's whole suite again, settling on a WalletLedger contract on an in-process EVM chain
        // (Hardhat's EDR) instead of the embedded ledger: the same end-to-end, crash, race and fault tests.
        extends: true,
        test: {
          name: 'executor-on-evm',
          include: ['test/executor/*.e2e.test.ts'],
          env: { TEST_LEDGER: 'evm' },
          globalSetup: ['test/support/evm-chain.global.ts'],
        },
      },
    ],
  },
});
