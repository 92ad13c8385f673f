import { executorCrashes } from './crash.e2e.suite.ts';

executorCrashes();
