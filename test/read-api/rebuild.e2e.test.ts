import { rebuildEndToEnd } from './rebuild.e2e.suite.ts';

rebuildEndToEnd();
