import { runOnPostgres } from '../support/test-stores.ts';
import { readYourWritesEndToEnd } from './read-your-writes.e2e.suite.ts';

// This file's test systems keep their events and read models on the run's PostgreSQL server; the projections run on
// a followers thread, the API on the main thread (src/followers-thread.ts).
runOnPostgres();
readYourWritesEndToEnd({ followersThread: true });
