import { runOnPostgres } from '../support/test-stores.ts';
import { twoWritersEndToEnd } from './two-writers.e2e.suite.ts';

// This file's test systems keep their events and read models on the run's PostgreSQL server.
runOnPostgres();
twoWritersEndToEnd();
