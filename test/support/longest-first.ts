import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The suite's longest files, longest first (their durations on 2 cores, 2026-11-26, with the suite's passwords at scrypt 2^10 and the browser suites on chromium-headless-shell). Without isolation vitest runs
 * one project's files in its workers and waits for the last of them before it starts the next project's, and within
 * a project a long file started late keeps one worker busy while the other has nothing left to take. Vitest orders by the
 * durations of earlier runs when its cache has them (a developer's machine); a fresh clone (CI) has none and would
 * order by file size. Only the order changes: every file runs.
 */
const LONGEST_FIRST = [
  'test/console/pages.browser.e2e.test.ts',
  // About 50 s, nearly all of it waiting (a 40 s lock): first, so that the other worker's files run meanwhile.
  'test/faults/postgres-unavailable.e2e.test.ts',
  'test/executor/faults.e2e.test.ts',
  'test/executor/crash.on-postgres.e2e.test.ts',
  'test/executor/crash.on-evm.e2e.test.ts',
  'test/executor/faults.on-evm.e2e.test.ts',
  'test/console/console.browser.e2e.test.ts',
  'test/executor/crash.e2e.test.ts',
  'test/webhooks/delivery-crash.on-postgres.e2e.test.ts',
  'test/adapters/postgres-read-store.e2e.test.ts',
  'test/faults/postgres-restart.e2e.test.ts',
  'test/webhooks/delivery-crash.e2e.test.ts',
  'test/read-api/read-endpoints.e2e.test.ts',
  'test/faults/postgres-failover.e2e.test.ts',
  'test/adapters/postgres-event-store.e2e.test.ts',
  'test/faults/clock-ahead.e2e.test.ts',
  'test/write-api/two-writers.on-postgres.e2e.test.ts',
  'test/ci-exit-code.e2e.test.ts',
  'test/webhooks/dispatcher.e2e.test.ts',
  'test/webhooks/delivery.on-postgres.e2e.test.ts',
  'test/write-api/read-your-writes.e2e.test.ts',
  'test/write-api/read-your-writes.on-postgres.e2e.test.ts',
  'test/write-api/create-operation.on-postgres.e2e.test.ts',
  'test/adapters/postgres-restore-drill.e2e.test.ts',
  'test/executor/paused.e2e.test.ts',
  'test/executor/paused.on-evm.e2e.test.ts',
  'test/shared/canonical-json.test.ts',
  'test/console/webhooks.browser.e2e.test.ts',
  'test/write-api/two-writers.e2e.test.ts',
  'test/read-api/freshness.e2e.test.ts',
  'test/executor/executor.on-postgres.e2e.test.ts',
  'test/write-api/concurrency.e2e.test.ts',
  'test/cli/cli.e2e.test.ts',
];

export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const ordered = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const index = LONGEST_FIRST.findIndex((path) => spec.moduleId.endsWith(path));
      return index < 0 ? LONGEST_FIRST.length : index;
    };
    // Stable: the files not named keep the order vitest gave them.
    return ordered
      .map((spec, index) => ({ spec, index }))
      .sort((a, b) => rank(a.spec) - rank(b.spec) || a.index - b.index)
      .map(({ spec }) => spec);
  }
}
