import { runOnPostgres } from '../support/test-stores.ts';
import { rebuildEndToEnd } from './rebuild.e2e.suite.ts';

// This file's test systems keep their events and read models on the run's PostgreSQL server.
runOnPostgres();
rebuildEndToEnd();
