import { readYourWritesEndToEnd } from './read-your-writes.e2e.suite.ts';

// As `npm start` runs: the projections on a followers thread, the API on the main thread (src/followers-thread.ts).
readYourWritesEndToEnd({ followersThread: true });
