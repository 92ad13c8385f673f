import { deliveryCrashes } from './delivery-crash.e2e.suite.ts';

deliveryCrashes();
