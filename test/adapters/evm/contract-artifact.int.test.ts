import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ARTIFACT_PATH, compileWalletLedger } from '../../../contracts/compile.ts';

describe('the committed WalletLedger artifact', () => {
  it('is exactly what the pinned solc compiles from contracts/WalletLedger.sol', () => {
    expect(readFileSync(ARTIFACT_PATH, 'utf8')).toBe(compileWalletLedger());
  }, 60_000);
});
