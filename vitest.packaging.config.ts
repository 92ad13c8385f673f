import { defineConfig } from 'vitest/config';

/**
 * `npm run test:packaging`: what ships, rather than what runs from source. The build compiled with tsc into an
 * image's layout and started, the image's node_modules slimmed, the Dockerfile, the compose files and the
 * monitoring profile read. Apart from `npm test` (vitest.config.ts leaves test/deploy out), so that the
 * suite does not compile the project a second time; .ci/run runs both, and fails on either.
 */
export const PACKAGING_TESTS = 'test/deploy/**';

export default defineConfig({
  test: {
    name: 'packaging',
    include: [`${PACKAGING_TESTS}/*.test.ts`],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    maxWorkers: 2,
    minWorkers: 1,
  },
});
