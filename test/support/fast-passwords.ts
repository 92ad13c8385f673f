import { setPasswordHashCost } from '../../src/domain/passwords.ts';

/**
 * Setup of every test file: password hashes at scrypt N = 2^14 (16 MiB, ~40 ms) instead of production's 2^17
 * (128 MiB, ~0.7 s on these machines), in this worker and in every wallet-ops process a test starts (they
 * inherit the environment). test/domain/passwords.test.ts checks the production cost itself.
 */
export const TEST_HASH_COST = 14;
process.env.PASSWORD_HASH_COST = String(TEST_HASH_COST);
setPasswordHashCost(TEST_HASH_COST);
