import { executorUnderFaults } from './faults.e2e.suite.ts';

executorUnderFaults();
