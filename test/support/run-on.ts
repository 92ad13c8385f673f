/**
 * What the current test file's systems run on: the embedded stores and ledger unless the file chose PostgreSQL
 * (runOnPostgres, as the `*.on-postgres.e2e.test.ts` files do) or the EVM chain (runOnEvm, the `*.on-evm` files),
 * or the environment says so for every file (TEST_STORES=postgres, TEST_LEDGER=evm: the benches). The files of a
 * worker share this module (isolate: false): test/support/file-choices.ts clears the choice before each file.
 * Read at each call: a bench sets TEST_STORES after this module is loaded.
 */
let postgres = false;
let evm = false;

export function runOnPostgres(): void {
  postgres = true;
}

export function runOnEvm(): void {
  evm = true;
}

export function onPostgres(): boolean {
  return postgres || process.env.TEST_STORES === 'postgres';
}

export function onEvm(): boolean {
  return evm || process.env.TEST_LEDGER === 'evm';
}

/** Back to the embedded stores and ledger: the next file's default. */
export function clearRunOn(): void {
  postgres = false;
  evm = false;
}
