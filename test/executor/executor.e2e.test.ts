import { executorEndToEnd } from './executor.e2e.suite.ts';

executorEndToEnd();
