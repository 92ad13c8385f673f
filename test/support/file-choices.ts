import { clearRunOn } from './run-on.ts';

/**
 * Setup file: each test file starts on the embedded stores and ledger. A choice the previous file of the same
 * worker made (runOnPostgres, runOnEvm: test/support/run-on.ts) is cleared before the next file is imported and
 * makes its own.
 */
clearRunOn();
