import { durabilityEndToEnd } from './durability.e2e.suite.ts';

durabilityEndToEnd();
