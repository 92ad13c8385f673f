import { createOperationEndToEnd } from './create-operation.e2e.suite.ts';

createOperationEndToEnd();
