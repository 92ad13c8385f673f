import { readYourWritesEndToEnd } from './read-your-writes.e2e.suite.ts';

readYourWritesEndToEnd();
