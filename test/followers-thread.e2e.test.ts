import { followersThreadEndToEnd } from './followers-thread.e2e.suite.ts';

followersThreadEndToEnd();
