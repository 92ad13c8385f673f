import { twoWritersEndToEnd } from './two-writers.e2e.suite.ts';

twoWritersEndToEnd();
