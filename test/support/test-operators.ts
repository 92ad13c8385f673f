import { createHash } from 'node:crypto';
import { privateKeyToAccount } from 'viem/accounts';

/**
 * The operator accounts of the tests that settle on the chain: one per test worker, all funded at the shared dev
 * chain's genesis. Two test files running at once each deploy and settle with their own account, so their
 * transactions never compete for one account's nonces (the executor's own nonce handling is tested within a
 * file, by its two-executor tests, not across unrelated files).
 */
const WORKERS = 8;
const keys = Array.from(
  { length: WORKERS },
  (_, i) =>
    `0x${createHash('sha256')
      .update(`wallet-ops test operator ${i + 1}`)
      .digest('hex')}` as `0x${string}`,
);

export const TEST_OPERATOR_ADDRESSES = keys.map((key) => privateKeyToAccount(key).address);

/** This worker's operator key (VITEST_POOL_ID counts the workers from 1). */
export function testOperatorKey(): `0x${string}` {
  const id = Number(process.env.VITEST_POOL_ID ?? '1');
  return keys[(Number.isInteger(id) && id > 0 ? id - 1 : 0) % WORKERS]!;
}
