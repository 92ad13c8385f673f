import { LOWEST_TEST_HASH_COST, setPasswordHashCost } from '../../src/domain/passwords.ts';

/**
 * Setup of every test file: password hashes at scrypt N = 2^10 (1 MiB, ~2 ms) instead of production's 2^17
 * (128 MiB, ~0.7 s on these machines), in this worker and in every wallet-ops process a test starts (they
 * inherit the environment; config.ts accepts a cost below 14 only with NODE_ENV=test). The suite hashes or
 * verifies about 800 passwords: at 2^14 that was 55 s of its CPU. test/domain/passwords.test.ts checks the
 * production cost itself; what a hash does (salts, matching, upgrades) does not depend on the cost.
 */
export const TEST_HASH_COST = LOWEST_TEST_HASH_COST;
process.env.NODE_ENV = 'test';
process.env.PASSWORD_HASH_COST = String(TEST_HASH_COST);
setPasswordHashCost(TEST_HASH_COST);
