import { runOnPostgres } from './support/test-stores.ts';
import { followersThreadEndToEnd } from './followers-thread.e2e.suite.ts';

// The processes of this file keep their events and read models on the run's PostgreSQL server: the followers
// thread opens pools of its own.
runOnPostgres();
followersThreadEndToEnd();
