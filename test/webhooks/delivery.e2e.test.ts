import { deliveryEndToEnd } from './delivery.e2e.suite.ts';

deliveryEndToEnd();
