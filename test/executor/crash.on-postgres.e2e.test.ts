import { runOnPostgres } from '../support/test-stores.ts';
import { executorCrashes } from './crash.e2e.suite.ts';

// This file's test systems keep their events and read models on the run's PostgreSQL server.
runOnPostgres();
executorCrashes();
