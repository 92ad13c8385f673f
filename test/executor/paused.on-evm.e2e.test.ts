import { runOnEvm } from '../support/test-ledger.ts';
import { pausedExecutor } from './paused.e2e.suite.ts';

// This file's test systems settle on a WalletLedger contract on the run's development chain.
runOnEvm();
pausedExecutor();
